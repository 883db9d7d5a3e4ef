// The poller handler built by its factory with fake ports: what it reports per invocation (outcome,
// duration and pace metrics, one flush) and how a failed run surfaces (PollRunFailedError, token dropped).
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import type { ContinuationEvent } from '../../../functions/core/ingest/continuation.js';
import { AuthenticationError } from '../../../functions/core/partner/errors.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import {
  createPollerHandler,
  type PollerMetrics,
  PollRunFailedError,
} from '../../../functions/poller/create-handler.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder } from '../../fixtures/orders.js';
import {
  MemoryCursorStore,
  MemoryQuarantine,
  RecordingPublisher,
  ScriptedPartner,
} from '../../support/fakes.js';
import { pollerConfig } from '../../support/poller-config.js';

const config = pollerConfig({ maxContinuations: 3 });

function recordingMetrics() {
  const recorded: Array<[string, number]> = [];
  let published = 0;
  const metrics: PollerMetrics = {
    count: (name, value = 1) => recorded.push([name, value]),
    milliseconds: (name, value) => recorded.push([name, value]),
    seconds: (name, value) => recorded.push([name, value]),
    publish: () => {
      published += 1;
    },
  };
  return { metrics, recorded, published: () => published };
}

function build(partner: ScriptedPartner, overrides: Partial<PollerConfig> = {}) {
  const sink = recordingMetrics();
  let invalidated = 0;
  const continued: Array<{ event: ContinuationEvent; functionArn: string }> = [];
  const handler = createPollerHandler({
    continuation: {
      request: async (event, functionArn) => {
        continued.push({ event, functionArn });
      },
    },
    config: { ...config, ...overrides },
    cursorStore: new MemoryCursorStore(),
    partner,
    publisher: new RecordingPublisher(),
    quarantine: new MemoryQuarantine(),
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    metrics: sink.metrics,
    tokens: { invalidate: () => (invalidated += 1) },
  });
  return { handler, sink, continued, invalidated: () => invalidated };
}

/** A long backlog: every page has more. */
const backlog = () =>
  new ScriptedPartner((query) => {
    const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
    return { data: [sampleOrder({ id: index + 1 })], hasMore: true, nextPageId: `c${index + 1}` };
  });

describe('createPollerHandler', () => {
  it("returns the run's outcome and records its duration and pace, flushing metrics once", async () => {
    const { handler, sink } = build(
      new ScriptedPartner(() => ({ data: [sampleOrder()], hasMore: false, nextPageId: 'c1' })),
    );

    const outcome = await handler({}, lambdaContext('poller', 60_000));

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 1, versionsPublished: 1, paceDelayMs: 0 });
    expect(sink.recorded.map(([name]) => name)).toEqual(
      expect.arrayContaining(['PagesFetched', 'VersionsPublished', 'RunDurationMs', 'PaceDelayMs']),
    );
    expect(sink.published()).toBe(1);
  });

  it('throws PollRunFailedError carrying the outcome on a 401, and drops the cached token', async () => {
    const { handler, sink, invalidated } = build(new ScriptedPartner(() => new AuthenticationError()));

    const error = await handler({}, lambdaContext('poller', 60_000)).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PollRunFailedError);
    expect((error as PollRunFailedError).outcome).toMatchObject({ kind: 'auth-failed', failed: true });
    expect(invalidated()).toBe(1);
    expect(sink.published()).toBe(1);
  });

  it('starts the next run at once, with itself as the target, when a run ends with more to fetch', async () => {
    const { handler, continued } = build(backlog(), { maxPagesPerRun: 2 });
    const context = lambdaContext('poller', 60_000);

    const first = await handler({ source: 'aws.events' }, context);

    expect(first).toMatchObject({ kind: 'page-limit', pages: 2, continuedWith: 1 });
    expect(continued).toEqual([
      {
        event: { continuation: { feedId: 'feed-a', chain: 1, chainStartedAt: expect.any(String) } },
        functionArn: context.invokedFunctionArn,
      },
    ]);

    // The continued run carries the chain on, until the cap (maxContinuations 3).
    let event: unknown = continued[0]?.event;
    for (let run = 0; run < 3; run++) {
      await handler(event, context);
      event = continued.at(-1)?.event;
    }
    expect(continued.map((call) => call.event.continuation.chain)).toEqual([1, 2, 3]);
  });

  it('does not continue when caught up, on a 401, or when continuations are off', async () => {
    const caughtUp = build(new ScriptedPartner(() => ({ data: [], hasMore: false, nextPageId: 'c0' })));
    await caughtUp.handler({}, lambdaContext('poller', 60_000));
    expect(caughtUp.continued).toEqual([]);

    const unauthorised = build(new ScriptedPartner(() => new AuthenticationError()));
    await unauthorised.handler({}, lambdaContext('poller', 60_000)).catch(() => undefined);
    expect(unauthorised.continued).toEqual([]);

    const off = build(backlog(), { maxPagesPerRun: 1, maxContinuations: 0 });
    expect(await off.handler({}, lambdaContext('poller', 60_000))).toMatchObject({ kind: 'page-limit' });
    expect(off.continued).toEqual([]);
  });

  it('does nothing on a switched-off feed, not even for a continuation already requested: no lease, no GET, no next run', async () => {
    const partner = backlog();
    const cursorStore = new MemoryCursorStore();
    const continued: unknown[] = [];
    const handler = createPollerHandler({
      continuation: { request: async (event) => void continued.push(event) },
      config: { ...config, enabled: false },
      cursorStore,
      partner,
      publisher: new RecordingPublisher(),
      quarantine: new MemoryQuarantine(),
      logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
      metrics: recordingMetrics().metrics,
    });
    const inFlight = {
      continuation: { feedId: 'feed-a', chain: 4, chainStartedAt: new Date(0).toISOString() },
    };

    const outcome = await handler(inFlight, lambdaContext('poller', 60_000));

    expect(outcome).toMatchObject({ kind: 'disabled', failed: false, pages: 0 });
    expect(partner.calls).toEqual([]);
    expect(cursorStore.items.has('feed-a')).toBe(false);
    expect(continued).toEqual([]);
  });

  it('runs until caught up or out of time when no page cap is set', async () => {
    let served = 0;
    const { handler, continued } = build(
      new ScriptedPartner(() => {
        served += 1;
        return { data: [sampleOrder({ id: served })], hasMore: served < 120, nextPageId: `c${served}` };
      }),
      { maxPagesPerRun: undefined },
    );

    const outcome = await handler({}, lambdaContext('poller', 60_000));

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 120 });
    expect(continued).toEqual([]);
  });
});
