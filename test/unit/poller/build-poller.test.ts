// The poller built by its factory with fake ports: what it reports per invocation (outcome, duration and pace
// metrics, one flush), how a failed run surfaces (PollRunFailedError), and its continuation chains.
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import type { ContinuationEvent } from '../../../functions/core/ingest/continuation.js';
import type { FunctionMetrics } from '../../../functions/core/observability/metric-names.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import { buildPoller, PollRunFailedError } from '../../../functions/poller/build-poller.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder } from '../../fixtures/orders.js';
import {
  MemoryCursorStore,
  MemoryQuarantine,
  RecordingPublisher,
  ScriptedPartner,
} from '../../support/fakes.js';
import { NO_CLIENTS, pollerConfig } from '../../support/poller-config.js';

const config = pollerConfig({ maxContinuations: 3 });
const context = () => lambdaContext('poller', 60_000);

function build(partner: ScriptedPartner, overrides: Partial<PollerConfig> = {}) {
  const recorded: string[] = [];
  const metrics: FunctionMetrics = {
    count: (name) => recorded.push(name),
    milliseconds: (name) => recorded.push(name),
    seconds: (name) => recorded.push(name),
    publish: () => recorded.push('(flush)'),
  };
  let refreshed = 0;
  const cursorStore = new MemoryCursorStore();
  const continued: Array<{ event: ContinuationEvent; functionArn: string }> = [];
  const handler = buildPoller(
    NO_CLIENTS,
    { ...config, ...overrides },
    {
      continuation: { request: async (event, functionArn) => void continued.push({ event, functionArn }) },
      cursorStore,
      partner,
      publisher: new RecordingPublisher(),
      quarantine: new MemoryQuarantine(),
      logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
      metrics,
      tokens: {
        refresh: async () => {
          refreshed += 1;
          return { version: 7, changed: false };
        },
      },
    },
  );
  return {
    handler,
    recorded,
    continued,
    cursorStore,
    published: () => recorded.filter((name) => name === '(flush)').length,
    refreshed: () => refreshed,
  };
}

/** A long backlog: every page has more; `fail` makes every request fail. */
const backlog = (fail = { now: false }) =>
  new ScriptedPartner((query) => {
    if (fail.now) return new Error('socket hang up');
    const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
    return { data: [sampleOrder({ id: index + 1 })], hasMore: true, nextPageId: `c${index + 1}` };
  });

describe('buildPoller', () => {
  // That commits do not extend the lease: poll-feed.test.ts ('expires at the time the run was given').
  it("returns the run's outcome, records its duration and pace, flushing metrics once, and holds the lease until the invocation's deadline plus the grace", async () => {
    const expiries: Array<number | undefined> = [];
    const { handler, recorded, published, cursorStore } = build(
      new ScriptedPartner(() => {
        expiries.push(cursorStore.items.get('feed-a')?.leaseExpiresAt);
        return { data: [sampleOrder()], hasMore: false, nextPageId: 'c1' };
      }),
    );
    const before = Date.now();

    const outcome = await handler({}, context());

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 1, versionsPublished: 1, paceDelayMs: 0 });
    expect(recorded).toEqual(
      expect.arrayContaining(['PagesFetched', 'VersionsPublished', 'RunDurationMs', 'PaceDelayMs']),
    );
    expect(published()).toBe(1);
    expect(expiries[0]).toBeGreaterThanOrEqual(before + 60_000 + config.leaseGraceMs - 1_000);
    expect(expiries[0]).toBeLessThanOrEqual(Date.now() + 60_000 + config.leaseGraceMs);
  });

  it('throws PollRunFailedError carrying the outcome on a 401, after reading the token parameter afresh', async () => {
    const { handler, published, refreshed, cursorStore } = build(
      new ScriptedPartner(() => new PartnerError('auth')),
    );

    const error = await handler({}, context()).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PollRunFailedError);
    expect((error as PollRunFailedError).outcome).toMatchObject({ kind: 'auth-failed', failed: true });
    expect(refreshed()).toBe(1);
    expect(cursorStore.items.get('feed-a')).toMatchObject({ authFailures: 1, authFailedTokenVersion: 7 });
    expect(published()).toBe(1);
  });

  it('starts the next run at once, with itself as the target, and the next run carries the chain on', async () => {
    const { handler, continued } = build(backlog(), { maxPagesPerRun: 2 });
    const first = context();

    expect(await handler({ source: 'aws.events' }, first)).toMatchObject({
      kind: 'page-limit',
      pages: 2,
      continuedWith: 1,
    });
    expect(continued).toEqual([
      {
        event: {
          continuation: {
            feedId: 'feed-a',
            chainId: first.awsRequestId,
            chain: 1,
            chainStartedAt: expect.any(String),
          },
        },
        functionArn: first.invokedFunctionArn,
      },
    ]);
    await handler(continued[0]?.event, context());
    expect(continued.map((call) => call.event.continuation.chain)).toEqual([1, 2]);
  });

  it('does nothing on a switched-off feed, not even for a continuation already requested', async () => {
    const partner = backlog();
    const { handler, cursorStore, continued } = build(partner, { enabled: false });
    const inFlight = {
      continuation: {
        feedId: 'feed-a',
        chainId: 'req-0',
        chain: 4,
        chainStartedAt: new Date(0).toISOString(),
      },
    };

    expect(await handler(inFlight, context())).toMatchObject({ kind: 'disabled', failed: false, pages: 0 });
    expect([partner.calls, continued, cursorStore.items.has('feed-a')]).toEqual([[], [], false]);
  });

  it('only the chain’s next step runs: a tick during the chain and a duplicated event do nothing', async () => {
    const partner = backlog();
    const { handler, continued, cursorStore } = build(partner, { maxPagesPerRun: 2 });
    await handler({ source: 'aws.events' }, context());
    const event = continued[0]?.event;
    const calls = partner.calls.length;

    // The continuation is on its way (its event queued): the lease is handed over to it.
    const tick = await handler({ source: 'aws.events' }, context());
    expect(tick).toMatchObject({ kind: 'lease-held', pages: 0 });
    expect(tick.continuedWith).toBeUndefined();
    expect(partner.calls).toHaveLength(calls);
    expect(cursorStore.items.get('feed-a')).toMatchObject({ chainStep: 1 });

    // The event delivered twice at once (async delivery, or an Invoke retried by the SDK), then again later.
    const [first, second] = await Promise.all([handler(event, context()), handler(event, context())]);
    expect([first.kind, second.kind].sort()).toEqual(['page-limit', 'stale-continuation']);
    expect([first.continuedWith, second.continuedWith].sort()).toEqual([2, undefined]);
    const callsBefore = partner.calls.length;
    expect(await handler(event, context())).toMatchObject({
      kind: 'stale-continuation',
      pages: 0,
      failed: false,
    });
    expect(partner.calls).toHaveLength(callsBefore);
    expect(continued.map((call) => call.event.continuation.chain)).toEqual([1, 2]);
  });

  it('an async retry of a failed continuation does nothing: the failed run ended the chain', async () => {
    const fail = { now: false };
    const { handler, continued, cursorStore } = build(backlog(fail), { maxPagesPerRun: 1 });
    await handler({ source: 'aws.events' }, context());
    const event = continued[0]?.event;
    fail.now = true;
    await expect(handler(event, context())).rejects.toThrow('socket hang up');
    fail.now = false;

    // Lambda retries the failed asynchronous event (up to 2 times); the schedule starts a new chain.
    expect(await handler(event, context())).toMatchObject({ kind: 'stale-continuation' });
    expect(cursorStore.items.get('feed-a')?.pageId).toBe('c1');
    expect(await handler({ source: 'aws.events' }, context())).toMatchObject({ continuedWith: 1 });
  });

  it.each([
    ['does not continue when continuations are off (maxContinuations 0)', 1, 0, 'page-limit', 1],
    ['runs until caught up or out of time when no page cap is set', undefined, 3, 'caught-up', 120],
  ])('%s', async (_name, maxPagesPerRun, maxContinuations, kind, pages) => {
    // A backlog of 120 pages.
    const partner = new ScriptedPartner((query) => {
      const served = query.pageId === undefined ? 1 : Number(query.pageId.slice(1)) + 1;
      return { data: [sampleOrder({ id: served })], hasMore: served < 120, nextPageId: `c${served}` };
    });
    const { handler, continued } = build(partner, { maxPagesPerRun, maxContinuations });

    expect(await handler({}, context())).toMatchObject({ kind, pages });
    expect(continued).toEqual([]);
  });
});
