// The poller handler built by its factory with fake ports: what it reports per invocation (outcome,
// duration and pace metrics, one flush) and how a failed run surfaces (PollRunFailedError, token dropped).
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import type { ContinuationEvent } from '../../../functions/core/ingest/continuation.js';
import type { PollerMetrics } from '../../../functions/core/ingest/ports.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import { createPollerHandler, PollRunFailedError } from '../../../functions/poller/create-handler.js';
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
  let refreshed = 0;
  const cursorStore = new MemoryCursorStore();
  const continued: Array<{ event: ContinuationEvent; functionArn: string }> = [];
  const handler = createPollerHandler({
    continuation: {
      request: async (event, functionArn) => {
        continued.push({ event, functionArn });
      },
    },
    config: { ...config, ...overrides },
    cursorStore,
    partner,
    publisher: new RecordingPublisher(),
    quarantine: new MemoryQuarantine(),
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    metrics: sink.metrics,
    tokens: {
      refresh: async () => {
        refreshed += 1;
        return { version: 7, changed: false };
      },
    },
  });
  return { handler, sink, continued, cursorStore, refreshed: () => refreshed };
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

  it('throws PollRunFailedError carrying the outcome on a 401, after reading the token parameter afresh', async () => {
    const { handler, sink, refreshed, cursorStore } = build(
      new ScriptedPartner(() => new PartnerError('auth')),
    );

    const error = await handler({}, lambdaContext('poller', 60_000)).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PollRunFailedError);
    expect((error as PollRunFailedError).outcome).toMatchObject({ kind: 'auth-failed', failed: true });
    expect(refreshed()).toBe(1);
    expect(cursorStore.items.get('feed-a')).toMatchObject({ authFailures: 1, authFailedTokenVersion: 7 });
    expect(sink.published()).toBe(1);
  });

  it("holds the lease until the invocation's deadline plus the grace, not extended by commits", async () => {
    const expiries: Array<number | undefined> = [];
    let served = 0;
    const partner = new ScriptedPartner(() => {
      expiries.push(cursorStore.items.get('feed-a')?.leaseExpiresAt);
      served += 1;
      return { data: [sampleOrder({ id: served })], hasMore: served < 3, nextPageId: `c${served}` };
    });
    const { handler, cursorStore } = build(partner);
    const before = Date.now();

    await handler({}, lambdaContext('poller', 60_000));

    const expiresAt = expiries[0] ?? 0;
    expect(expiries).toEqual([expiresAt, expiresAt, expiresAt]);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 60_000 + config.leaseGraceMs - 1_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 60_000 + config.leaseGraceMs);
  });

  it('starts the next run at once, with itself as the target, when a run ends with more to fetch', async () => {
    const { handler, continued } = build(backlog(), { maxPagesPerRun: 2 });
    const context = lambdaContext('poller', 60_000);

    const first = await handler({ source: 'aws.events' }, context);

    expect(first).toMatchObject({ kind: 'page-limit', pages: 2, continuedWith: 1 });
    expect(continued).toEqual([
      {
        event: {
          continuation: {
            feedId: 'feed-a',
            chainId: context.awsRequestId,
            chain: 1,
            chainStartedAt: expect.any(String),
          },
        },
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

    const unauthorised = build(new ScriptedPartner(() => new PartnerError('auth')));
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
      continuation: {
        feedId: 'feed-a',
        chainId: 'req-0',
        chain: 4,
        chainStartedAt: new Date(0).toISOString(),
      },
    };

    const outcome = await handler(inFlight, lambdaContext('poller', 60_000));

    expect(outcome).toMatchObject({ kind: 'disabled', failed: false, pages: 0 });
    expect(partner.calls).toEqual([]);
    expect(cursorStore.items.has('feed-a')).toBe(false);
    expect(continued).toEqual([]);
  });

  it('one chain per feed: a tick during a chain ends at once and starts nothing', async () => {
    const partner = backlog();
    const { handler, continued, cursorStore } = build(partner, { maxPagesPerRun: 2 });
    await handler({ source: 'aws.events' }, lambdaContext('poller', 60_000));
    const calls = partner.calls.length;

    // The continuation is on its way (its event queued): the lease is handed over to it.
    const tick = await handler({ source: 'aws.events' }, lambdaContext('poller', 60_000));

    expect(tick).toMatchObject({ kind: 'lease-held', pages: 0 });
    expect(tick.continuedWith).toBeUndefined();
    expect(partner.calls).toHaveLength(calls);
    expect(continued).toHaveLength(1);
    expect(cursorStore.items.get('feed-a')).toMatchObject({ chainStep: 1 });
    // The continuation still takes its lease and carries the chain on.
    expect(await handler(continued[0]?.event, lambdaContext('poller', 60_000))).toMatchObject({
      kind: 'page-limit',
      continuedWith: 2,
    });
  });

  it('a duplicated continuation event (async delivery twice, or an Invoke retried by the SDK) does nothing', async () => {
    const partner = backlog();
    const { handler, continued } = build(partner, { maxPagesPerRun: 2 });
    await handler({ source: 'aws.events' }, lambdaContext('poller', 60_000));
    const event = continued[0]?.event;

    const [first, second] = await Promise.all([
      handler(event, lambdaContext('poller', 60_000)),
      handler(event, lambdaContext('poller', 60_000)),
    ]);
    expect([first.kind, second.kind].sort()).toEqual(['page-limit', 'stale-continuation']);
    // Delivered again after the chain moved on: still nothing.
    const callsBefore = partner.calls.length;
    expect(await handler(event, lambdaContext('poller', 60_000))).toMatchObject({
      kind: 'stale-continuation',
      pages: 0,
      failed: false,
    });
    expect(partner.calls).toHaveLength(callsBefore);
    expect(continued.map((call) => call.event.continuation.chain)).toEqual([1, 2]);
  });

  it('an async retry of a failed continuation does nothing: the failed run ended the chain', async () => {
    let fail = false;
    const partner = new ScriptedPartner((query) => {
      if (fail) return new Error('socket hang up');
      const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
      return { data: [sampleOrder({ id: index + 1 })], hasMore: true, nextPageId: `c${index + 1}` };
    });
    const { handler, continued, cursorStore } = build(partner, { maxPagesPerRun: 1 });
    await handler({ source: 'aws.events' }, lambdaContext('poller', 60_000));
    fail = true;
    const event = continued[0]?.event;
    await expect(handler(event, lambdaContext('poller', 60_000))).rejects.toThrow('socket hang up');
    fail = false;

    // Lambda retries the failed asynchronous event (up to 2 times).
    expect(await handler(event, lambdaContext('poller', 60_000))).toMatchObject({
      kind: 'stale-continuation',
    });
    expect(cursorStore.items.get('feed-a')?.pageId).toBe('c1');
    // The schedule starts a new chain.
    expect(await handler({ source: 'aws.events' }, lambdaContext('poller', 60_000))).toMatchObject({
      kind: 'page-limit',
      continuedWith: 1,
    });
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
