// The poller built by its factory with fake ports, on batches of feeds as the dispatcher sends them: each feed
// from its row, all at once, one page parsed at a time, each for its slice; what it reports (each feed's
// outcome, metrics flushed once), how a failed feed surfaces (PollRunFailedError, after the others), and when
// it asks for the next dispatch. What one feed's run does with the partner's answers: poll-feed.test.ts.
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import type { BatchEvent } from '../../../functions/core/fleet/dispatch.js';
import type { FunctionMetrics } from '../../../functions/core/observability/metric-names.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import type { CallOptions, OrderUpdatesQuery, RawPage } from '../../../functions/core/partner/types.js';
import {
  buildPoller,
  type PollerOverrides,
  PollRunFailedError,
} from '../../../functions/poller/build-poller.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder } from '../../fixtures/orders.js';
import {
  cursorState,
  MemoryCursorStore,
  MemoryQuarantine,
  RecordingPublisher,
  ScriptedPartner,
} from '../../support/fakes.js';
import { NO_CLIENTS, pollerConfig } from '../../support/poller-config.js';

const config = pollerConfig({ maxPagesPerRun: undefined });
const context = () => lambdaContext('poller', 60_000);
const batchOf = (feedIds: string[], sliceMs = 60_000): BatchEvent => ({
  batch: { batchId: 'd1-1', dispatchedAt: 1_000, sliceMs, feedIds },
});
const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

/** Three pages per feed (ids distinct per feed), the last caught up; then nothing new (rule 3). */
const pagesOf = (feedId: string) => (query: OrderUpdatesQuery) => {
  const index = query.pageId === undefined ? 0 : Number(query.pageId.split('-')[1]);
  if (index >= 3) return { data: [], hasMore: false, nextPageId: query.pageId };
  const id = (feedId.charCodeAt(feedId.length - 1) % 32) * 100 + index + 1;
  return { data: [sampleOrder({ id })], hasMore: index < 2, nextPageId: `${feedId}-${index + 1}` };
};

/** The poller over fakes: the feeds' rows (registered, enabled) in a journaled store, a partner per feed. */
function build(
  feeds: Record<string, Partial<{ config: unknown; feedState: 'enabled' | 'paused' }>>,
  answer: (feedId: string, query: OrderUpdatesQuery, options: CallOptions) => Promise<RawPage | Error>,
  overrides: PollerOverrides = {},
) {
  const journal: string[] = [];
  const recorded: string[] = [];
  const metrics: FunctionMetrics = {
    count: (name) => recorded.push(name),
    publish: () => recorded.push('(flush)'),
  };
  const cursorStore = new MemoryCursorStore(journal);
  for (const [feedId, row] of Object.entries(feeds)) {
    cursorStore.items.set(feedId, {
      ...cursorState(),
      config: { tokenParameterName: `/token/${feedId}`, pageSize: 10 },
      feedState: 'enabled',
      ...row,
    });
  }
  const calls: Array<{ feedId: string; query: OrderUpdatesQuery }> = [];
  const publisher = new RecordingPublisher(journal);
  const requests: number[] = [];
  const handler = buildPoller(NO_CLIENTS, config, {
    cursorStore,
    publisher,
    quarantine: new MemoryQuarantine(),
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    metrics,
    partner: ({ feedId }) => ({
      getOrderUpdates: async (query, options) => {
        calls.push({ feedId, query });
        const result = await answer(feedId, query, options);
        if (result instanceof Error) throw result;
        return result;
      },
      getOrder: async () => {
        throw new Error('not scripted');
      },
    }),
    tokens: () => ({ refresh: async () => ({ version: 7, changed: false }) }),
    dispatchRequests: {
      request: async (at) => void requests.push(at),
      end: async () => 0,
    },
    ...overrides,
  });
  return { handler, journal, recorded, cursorStore, publisher, calls, requests };
}

describe('buildPoller: a batch of feeds', () => {
  it('polls every feed of the batch at once, each from its row, and returns each outcome', async () => {
    // Feed a's first answer waits until feed c has committed a page: polled one after another, this hangs.
    let cCommitted: () => void = () => {};
    const cDone = new Promise<void>((resolve) => {
      cCommitted = resolve;
    });
    const { handler, cursorStore, calls } = build({ a: {}, b: {}, c: {} }, async (feedId, query) => {
      if (feedId === 'a' && query.pageId === undefined) await cDone;
      return pagesOf(feedId)(query);
    });
    const commit = cursorStore.commit.bind(cursorStore);
    cursorStore.commit = async (lease, change) => {
      if (lease.feedId === 'c') cCommitted();
      return commit(lease, change);
    };

    const result = await handler(batchOf(['a', 'b', 'c']), context());

    expect(result.feeds.map(({ feedId, kind, pages }) => [feedId, kind, pages])).toEqual([
      ['a', 'caught-up', 3],
      ['b', 'caught-up', 3],
      ['c', 'caught-up', 3],
    ]);
    // Each with its own lease (owner <run id>#<feed id>), cursor and settings (pageSize 10 from its row).
    expect(calls.filter((call) => call.feedId === 'b').map((call) => call.query)).toEqual([
      { pageSize: 10 },
      { pageId: 'b-1', pageSize: 10 },
      { pageId: 'b-2', pageSize: 10 },
    ]);
    expect(cursorStore.items.get('b')).toMatchObject({
      pageId: 'b-3',
      lastRunOutcome: 'caught-up',
      lastDispatchId: 'd1-1',
      lastDispatchedAt: 1_000,
    });
  });

  it('parses and hands off one page at a time in the invocation, whatever the feeds', async () => {
    let holding = 0;
    let mostHeld = 0;
    const { handler, publisher } = build({ a: {}, b: {}, c: {} }, async (feedId, query, options) => {
      await tick();
      await options.beforeParse?.();
      holding += 1;
      mostHeld = Math.max(mostHeld, holding);
      return pagesOf(feedId)(query);
    });
    // A page (one order) is one publish: handed off once it is sent, while the other pages have arrived.
    const publish = publisher.publish.bind(publisher);
    publisher.publish = async (messages) => {
      await tick();
      holding -= 1;
      return publish(messages);
    };

    const result = await handler(batchOf(['a', 'b', 'c']), context());

    expect(result.feeds.every((feed) => feed.kind === 'caught-up')).toBe(true);
    expect(mostHeld).toBe(1);
  });

  it('records an idle feed with one write and no lease, and asks for no dispatch when nothing waits', async () => {
    const { handler, journal, requests } = build({ a: {}, b: {} }, async () => ({
      data: [],
      hasMore: false,
    }));

    const result = await handler(batchOf(['a', 'b']), context());

    expect(result).toMatchObject({ dispatchRequested: false });
    expect(result.feeds.map((feed) => feed.kind)).toEqual(['caught-up', 'caught-up']);
    expect(journal).toEqual(['read a b', 'record caught-up', 'record caught-up']);
    expect(requests).toEqual([]);
  });

  it('ends a feed at its slice (slice-end) and asks the dispatcher for the next dispatch', async () => {
    const clock = { now: 1_000_000 };
    // An endless backlog, each page 10 s of the fake clock.
    const { handler, requests, cursorStore } = build(
      { a: {} },
      async (_feedId, query) => {
        clock.now += 10_000;
        const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
        return { data: [sampleOrder({ id: index + 1 })], hasMore: true, nextPageId: `c${index + 1}` };
      },
      { now: () => clock.now },
    );

    const result = await handler(batchOf(['a'], 25_000), context());

    expect(result.feeds[0]).toMatchObject({ kind: 'slice-end' });
    expect(result.dispatchRequested).toBe(true);
    expect(requests).toEqual([clock.now]);
    expect(cursorStore.items.get('a')?.lastRunOutcome).toBe('slice-end');
  });

  it('asks for a dispatch when the last dispatch left feeds waiting, though none of its own is behind', async () => {
    const { handler, requests } = build({ a: {} }, async () => ({ data: [], hasMore: false }), {
      dispatchRequests: {
        request: async (at) => void requests.push(at),
        end: async () => 3,
      },
    });

    expect(await handler(batchOf(['a']), context())).toMatchObject({ dispatchRequested: true });
    expect(requests).toHaveLength(1);
  });

  it('says its batch ended, flushes its metrics, then asks for the next dispatch as its very last act', async () => {
    // The dispatch counts the batch running until it ended: no work of this invocation overlaps the batches
    // its request starts (the metrics are flushed before).
    const order: string[] = [];
    const { handler } = build({ a: {}, b: {} }, async () => ({ data: [], hasMore: false }), {
      metrics: {
        count: () => 0,
        publish: () => order.push('flush'),
      },
      dispatchRequests: {
        request: async () => void order.push('request'),
        end: async (batchId) => {
          order.push(`end ${batchId}`);
          return 2;
        },
      },
    });
    const result = await handler(batchOf(['a', 'b']), context());
    order.push('returned');

    expect(result.feeds.map((feed) => feed.kind)).toEqual(['caught-up', 'caught-up']);
    expect(order).toEqual(['end d1-1', 'flush', 'request', 'returned']);
  });

  it('reports a failing feed after the others are done, which it never delays (PollRunFailedError, an error counted)', async () => {
    const { handler, cursorStore, recorded } = build(
      { bad: {}, refused: {}, good: {} },
      async (feedId, query) => {
        if (feedId === 'bad') throw new Error('socket hang up');
        if (feedId === 'refused') return new PartnerError('auth');
        await tick();
        return pagesOf(feedId)(query);
      },
    );

    const error = await handler(batchOf(['bad', 'refused', 'good']), context()).catch(
      (thrown: unknown) => thrown,
    );

    expect(error).toBeInstanceOf(PollRunFailedError);
    const { feeds } = (error as PollRunFailedError).result;
    expect(feeds.map(({ feedId, kind, failed }) => [feedId, kind, failed])).toEqual([
      ['bad', 'error', true],
      ['refused', 'auth-failed', true],
      ['good', 'caught-up', false],
    ]);
    expect(feeds[0]?.error).toMatchObject({ message: 'socket hang up' });
    expect(cursorStore.items.get('good')?.pageId).toBe('good-3');
    expect(cursorStore.items.get('bad')?.lastRunOutcome).toBe('error');
    expect(cursorStore.items.get('refused')).toMatchObject({ authFailures: 1, authFailedTokenVersion: 7 });
    expect(recorded.filter((name) => name === '(flush)')).toHaveLength(1);
  });

  it('runs a paused, unregistered or misconfigured feed not at all (the last recorded on its row)', async () => {
    const { handler, calls, cursorStore } = build(
      { paused: { feedState: 'paused' }, broken: { config: { tokenParameterName: '/t', pageSize: 0 } } },
      async () => ({ data: [], hasMore: false }),
    );

    const result = await handler(batchOf(['paused', 'gone', 'broken']), context());

    expect(result.feeds.map((feed) => feed.kind)).toEqual(['disabled', 'unregistered', 'config-invalid']);
    expect(calls).toEqual([]);
    expect(cursorStore.items.get('paused')?.lastRunOutcome).toBeUndefined();
    expect(cursorStore.items.get('broken')).toMatchObject({
      lastRunOutcome: 'config-invalid',
      stopReason: expect.stringContaining('pageSize: must be an integer from 1 to 100'),
    });
  });

  it('logs each feed’s pace and lag on its outcome line (no metric: the dashboard charts the line), flushing metrics once, and holds each lease until the invocation’s deadline plus the grace', async () => {
    const expiries: Array<number | undefined> = [];
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const outcomes: unknown[] = [];
    logger.info = ((message: string, extra: unknown) => {
      if (message === 'poll run finished') outcomes.push(extra);
    }) as Logger['info'];
    const { handler, recorded, cursorStore } = build(
      { a: {}, b: {} },
      async (feedId, query) => {
        if (query.pageId !== undefined) expiries.push(cursorStore.items.get(feedId)?.leaseExpiresAt);
        return pagesOf(feedId)(query);
      },
      { logger },
    );
    const before = Date.now();

    await handler(batchOf(['a', 'b']), context());

    expect(outcomes).toEqual(
      ['a', 'b'].map((feedId) =>
        expect.objectContaining({ feedId, paceDelayMs: 0, secondsSinceCaughtUp: expect.any(Number) }),
      ),
    );
    expect(recorded.filter((name) => name === '(flush)')).toHaveLength(1);
    for (const expiry of expiries) {
      expect(expiry).toBeGreaterThanOrEqual(before + 60_000 + config.leaseGraceMs - 1_000);
      expect(expiry).toBeLessThanOrEqual(Date.now() + 60_000 + config.leaseGraceMs);
    }
    expect(expiries).toHaveLength(4);
  });

  it('runs one feed once at a time: the same batch delivered twice at once, then again, moves each cursor once', async () => {
    const partner = new ScriptedPartner((query) => pagesOf('a')(query));
    const { handler, cursorStore, publisher } = build({ a: {} }, async (_feedId, query, options) => {
      await tick();
      return partner.getOrderUpdates(query, options);
    });
    const event = batchOf(['a']);

    // Lambda may deliver an asynchronous event twice: both read the item, one takes the lease.
    const [first, second] = await Promise.all([handler(event, context()), handler(event, context())]);
    const kinds = [first.feeds[0]?.kind, second.feeds[0]?.kind].sort();
    expect(kinds).toEqual(['caught-up', 'lease-held']);
    expect(cursorStore.items.get('a')?.pageId).toBe('a-3');
    const versions = publisher.published.length;

    // Delivered again later: the feed is caught up, its cursor stays, nothing is published twice.
    partner.calls.length = 0;
    const again = await handler(event, context());
    expect(again.feeds[0]).toMatchObject({ kind: 'caught-up', versionsPublished: 0 });
    expect(publisher.published).toHaveLength(versions);
  });

  it('runs each feed until caught up or out of time when no page cap is set', async () => {
    // A backlog of 120 pages.
    const { handler } = build({ a: {} }, async (_feedId, query) => {
      const served = query.pageId === undefined ? 1 : Number(query.pageId.slice(1)) + 1;
      return { data: [sampleOrder({ id: served })], hasMore: served < 120, nextPageId: `c${served}` };
    });

    expect((await handler(batchOf(['a']), context())).feeds[0]).toMatchObject({
      kind: 'caught-up',
      pages: 120,
    });
  });

  it('does nothing with an event that is not a batch (a schedule’s or a continuation’s from before the fleet)', async () => {
    const { handler, journal, calls } = build({ a: {} }, async () => ({ data: [], hasMore: false }));

    expect(await handler({ source: 'aws.events' }, context())).toEqual({
      batchId: '',
      feeds: [],
      dispatchRequested: false,
    });
    expect([journal, calls]).toEqual([[], []]);
  });
});
