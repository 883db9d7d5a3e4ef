// The dispatcher's decision on scanned rows: what is due, in which batches, within the concurrency budget,
// and the fleet gauges. Examples name each rule; a fast-check property holds the invariants over any fleet.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  batchEventOf,
  batchOf,
  DISPATCH_DEFAULTS,
  type DispatchSettings,
  type FeedRow,
  type InFlightBatch,
  invocationOf,
  leaseOwnerOf,
  planDispatch,
} from '../../../functions/core/fleet/dispatch.js';
import { feedRow, MINUTE, NOW } from '../../support/feed-row.js';

const SETTINGS: DispatchSettings = DISPATCH_DEFAULTS;

const row = feedRow;

const plan = (rows: FeedRow[], more: Partial<Parameters<typeof planDispatch>[0]> = {}) =>
  planDispatch({ rows, now: NOW, dispatchId: 'd1', inFlight: [], settings: SETTINGS, ...more });
const dispatched = (result: ReturnType<typeof planDispatch>) => result.batches.flatMap((b) => b.feedIds);

describe('what is due', () => {
  it('polls an idle feed once per its interval: due at the tick nearest to it, not before', () => {
    const result = plan([
      row('due'),
      // Its last dispatch was 40 s ago: due in 20 s, within half a tick of now.
      row('due-soon', { lastDispatchedAt: NOW - 40_000 }),
      row('not-yet', { lastDispatchedAt: NOW - 20_000 }),
      row('five-minute', { scheduleMinutes: 5, lastDispatchedAt: NOW - 2 * MINUTE }),
    ]);
    expect(dispatched(result).sort()).toEqual(['due', 'due-soon']);
  });

  it('polls a feed never polled at once, and one behind (more to fetch) whatever its interval', () => {
    const result = plan([
      row('new', { lastDispatchedAt: undefined, lastRunAt: undefined, lastRunOutcome: undefined }),
      row('behind', { scheduleMinutes: 60, lastRunOutcome: 'slice-end', lastDispatchedAt: NOW - 30_000 }),
    ]);
    expect(dispatched(result).sort()).toEqual(['behind', 'new']);
  });

  it('skips feeds paused, stopped, removed, unregistered, leased, or on their way in a batch', () => {
    const inFlight: InFlightBatch[] = [{ batchId: 'd0-1', dispatchedAt: NOW - 5_000, feedIds: ['sent'] }];
    const result = plan(
      [
        row('paused', { state: 'paused' }),
        row('stopped', { state: 'stopped', stateReason: 'order over the body cap' }),
        row('removed', { state: 'removed' }),
        row('cursor-only', { registered: false }),
        row('leased', { leaseOwner: leaseOwnerOf('run-1', 'leased'), leaseExpiresAt: NOW + 1 }),
        row('lease-lapsed', { leaseOwner: leaseOwnerOf('run-0', 'lease-lapsed'), leaseExpiresAt: NOW - 1 }),
        row('sent'),
      ],
      { inFlight },
    );
    expect(dispatched(result)).toEqual(['lease-lapsed']);
  });

  it('waits out a 401 backoff unless the token parameter has a new version since', () => {
    const backingOff = { authRetryNotBefore: NOW + 5 * MINUTE, authFailedTokenVersion: 3 };
    const rows = [
      row('same-token', backingOff),
      row('rotated', { ...backingOff, tokenParameterName: '/t/rotated' }),
      row('backoff-over', { ...backingOff, authRetryNotBefore: NOW - 1 }),
    ];
    const versions = new Map([
      ['/t/a', 3],
      ['/t/rotated', 4],
    ]);
    expect(dispatched(plan(rows, { tokenVersions: versions })).sort()).toEqual(['backoff-over', 'rotated']);
    expect(dispatched(plan(rows)).sort()).toEqual(['backoff-over']);
  });
});

describe('batches within the budget', () => {
  it('counts running pollers by the live leases’ invocations and the batches not yet started', () => {
    const rows = [
      ...['a', 'b', 'c'].map((id) =>
        row(id, { leaseOwner: leaseOwnerOf('run-1', id), leaseExpiresAt: NOW + MINUTE }),
      ),
      row('d', { leaseOwner: leaseOwnerOf('run-2', 'd'), leaseExpiresAt: NOW + MINUTE }),
      row('x'),
      ...Array.from({ length: 300 }, (_, i) => row(`idle-${i}`)),
    ];
    const inFlight = [{ batchId: 'd0-1', dispatchedAt: NOW - 1_000, feedIds: ['x'] }];
    const result = plan(rows, { inFlight, settings: { ...SETTINGS, maxConcurrentPollers: 5 } });
    // run-1, run-2 and d0-1: two slots left, for 300 due feeds: two batches of 150.
    expect(result.gauges.runningPollers).toBe(3);
    expect(result.batches.map((b) => b.feedIds.length)).toEqual([150, 150]);
    expect(result.waiting).toEqual([]);
  });

  it('forgets a batch once its invocation says it ended, or after the grace', () => {
    const rows = [row('a', { lastDispatchId: 'd0-1', lastDispatchedAt: NOW - 5_000 }), row('b')];
    const inFlight = [
      { batchId: 'd0-1', dispatchedAt: NOW - 5_000, feedIds: ['a', 'c'] },
      { batchId: 'd0-2', dispatchedAt: NOW - 3 * MINUTE, feedIds: ['b'] },
    ];
    const result = plan(rows, { inFlight, ended: ['d0-1'] });
    expect(result.gauges.runningPollers).toBe(0);
    expect(dispatched(result)).toEqual(['b']);
    expect(result.inFlight).toEqual([{ batchId: 'd1-1', dispatchedAt: NOW, feedIds: ['b'] }]);
  });

  it('counts a batch running until its invocation says it ended, though every feed of it shows its run; a leased feed of it once', () => {
    // d0-1 (idle polls take no lease): one feed recorded, two still polling; d0-2: one feed leased, one not
    // started. Neither invocation has ended: both take a slot, the lease's invocation not a second one.
    const rows = [
      row('a', { lastDispatchId: 'd0-1', lastDispatchedAt: NOW - 5_000 }),
      row('b'),
      row('c'),
      row('d', {
        lastDispatchId: 'd0-2',
        lastDispatchedAt: NOW - 5_000,
        leaseOwner: leaseOwnerOf('run-2', 'd'),
        leaseExpiresAt: NOW + MINUTE,
      }),
      row('e'),
      // Paused after its dispatch: the poller skips it without a record.
      row('f', { state: 'paused' }),
      ...Array.from({ length: 10 }, (_, i) => row(`idle-${i}`)),
    ];
    const inFlight = [
      { batchId: 'd0-1', dispatchedAt: NOW - 5_000, feedIds: ['a', 'b', 'c'] },
      { batchId: 'd0-2', dispatchedAt: NOW - 5_000, feedIds: ['d', 'e', 'f'] },
    ];
    const result = plan(rows, { inFlight, settings: { ...SETTINGS, maxConcurrentPollers: 3 } });
    expect(result.gauges.runningPollers).toBe(2);
    expect(result.batches).toHaveLength(1);
    expect(dispatched(result)).not.toContain('a');
    // Every feed of d0-1 shows its run, but its invocation still works (the budget, the metrics, the
    // request for the next dispatch): its slot is free only once it says it ended.
    const recorded = rows.map((r) =>
      ['b', 'c'].includes(r.feedId) ? { ...r, lastDispatchId: 'd0-1', lastDispatchedAt: NOW - 5_000 } : r,
    );
    const settings = { ...SETTINGS, maxConcurrentPollers: 3 };
    expect(plan(recorded, { inFlight, settings }).gauges.runningPollers).toBe(2);
    expect(plan(recorded, { inFlight, settings, ended: ['d0-1'] }).gauges.runningPollers).toBe(1);
  });

  it('serves the longest wait first and leaves the rest waiting when the slots are spent', () => {
    const rows = Array.from({ length: 12 }, (_, i) =>
      row(`f${i}`, { lastRunOutcome: 'slice-end', lastRunAt: NOW - (i + 1) * 1_000 }),
    );
    const result = plan(rows, { settings: { ...SETTINGS, maxConcurrentPollers: 2 } });
    expect(result.batches.map((b) => b.feedIds)).toEqual([
      ['f11', 'f10', 'f9', 'f8'],
      ['f7', 'f6', 'f5', 'f4'],
    ]);
    expect(result.waiting).toEqual(['f3', 'f2', 'f1', 'f0']);
    expect(result.gauges.dueWaiting).toBe(4);
  });

  it('plans feeds never polled in small batches, like feeds behind, while caught-up feeds share large ones', () => {
    // A new feed's backlog is unknown: in a batch of 100 it would share one invocation's page turns with 99
    // others (the bench measured fastest / slowest 93× so), in a batch of 4 it pages as a feed behind does.
    const fresh = { lastDispatchedAt: undefined, lastRunAt: undefined, lastRunOutcome: undefined };
    const rows = [
      ...Array.from({ length: 8 }, (_, i) => row(`new-${i}`, { ...fresh, createdAt: NOW - (i + 1) * 1_000 })),
      ...Array.from({ length: 300 }, (_, i) => row(`idle-${i}`)),
    ];
    const result = plan(rows, { settings: { ...SETTINGS, maxConcurrentPollers: 5 } });
    expect(result.batches.map((b) => [b.kind, b.feedIds.length])).toEqual([
      ['behind', 4],
      ['behind', 4],
      ['idle', 100],
      ['idle', 100],
      ['idle', 100],
    ]);
    expect(result.batches[0]?.feedIds).toEqual(['new-7', 'new-6', 'new-5', 'new-4']);
    expect(result.gauges.behind).toBe(8);
  });

  it('spreads feeds behind evenly over the batches they need: no remainder batch of 1 beside batches of 4', () => {
    // Alone in its batch a feed has its invocation's page turns to itself: it paged up to 4× as fast.
    const behind = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        row(`b${i}`, { lastRunOutcome: 'slice-end', lastRunAt: NOW - (n - i) * 1_000 }),
      );
    const sizes = (n: number, maxConcurrentPollers = 10) =>
      plan(behind(n), { settings: { ...SETTINGS, maxConcurrentPollers } }).batches.map(
        (b) => b.feedIds.length,
      );
    expect(sizes(5)).toEqual([3, 2]);
    expect(sizes(13)).toEqual([4, 3, 3, 3]);
    expect(sizes(9)).toEqual([3, 3, 3]);
    // More than the slots hold: full batches, the rest waits (longest wait first, as before).
    expect(sizes(13, 2)).toEqual([4, 4]);
    expect(plan(behind(5)).batches[0]?.feedIds).toEqual(['b0', 'b1', 'b2']);
  });

  it('lets failing feeds ride in batches that run their slice anyway, never taking a healthy feed’s slot', () => {
    const rows = [
      row('behind-1', { lastRunOutcome: 'out-of-time' }),
      row('idle-1'),
      row('outage', { lastRunOutcome: 'retry-later' }),
      row('stuck', { lastRunOutcome: 'stuck-cursor' }),
    ];
    const result = plan(rows, { settings: { ...SETTINGS, maxConcurrentPollers: 2 } });
    expect(result.batches).toEqual([
      { batchId: 'd1-1', kind: 'behind', feedIds: ['behind-1', 'outage', 'stuck'] },
      { batchId: 'd1-2', kind: 'idle', feedIds: ['idle-1'] },
    ]);
    // Alone, they share one batch of their own.
    expect(plan(rows.slice(2)).batches).toEqual([
      { batchId: 'd1-1', kind: 'failing', feedIds: ['outage', 'stuck'] },
    ]);
  });

  it('slices paging so that every feed behind gets a turn each round', () => {
    const behind = (n: number) =>
      Array.from({ length: n }, (_, i) => row(`b${i}`, { lastRunOutcome: 'page-limit' }));
    // 10 pollers × 4 feeds = 40 chains; a 30 s round over 400 feeds behind: 3 s each, at least 5 s.
    expect(plan(behind(400)).sliceMs).toBe(5_000);
    expect(plan(behind(120)).sliceMs).toBe(10_000);
    expect(plan(behind(1)).sliceMs).toBe(90_000);
  });
});

describe('the fleet gauges', () => {
  it('count feeds by state, stale, failing on auth, behind, and the stalest lag', () => {
    const rows = [
      row('fresh'),
      row('stale', { lastCaughtUpAt: NOW - 31 * MINUTE }),
      row('auth', { authRetryNotBefore: NOW + MINUTE, lastRunOutcome: 'auth-failed' }),
      row('behind', { lastRunOutcome: 'out-of-time' }),
      row('paused', { state: 'paused', lastCaughtUpAt: NOW - 90 * MINUTE }),
      row('removed', { state: 'removed' }),
      row('cursor-only', { registered: false }),
    ];
    expect(plan(rows).gauges).toMatchObject({
      feeds: 7,
      enabled: 4,
      paused: 1,
      removed: 1,
      unregistered: 1,
      stale: 1,
      authFailing: 1,
      failing: 1,
      behind: 1,
      maxLagSeconds: 31 * 60,
    });
  });
});

describe("the poller's batch event", () => {
  it('round-trips, and anything else is not a batch', () => {
    const event = batchEventOf({ batchId: 'd1-1', kind: 'idle', feedIds: ['a', 'b'] }, NOW, 5_000);
    expect(batchOf(JSON.parse(JSON.stringify(event)))).toEqual({
      batchId: 'd1-1',
      dispatchedAt: NOW,
      sliceMs: 5_000,
      feedIds: ['a', 'b'],
    });
    expect(batchOf({ source: 'aws.events' })).toBeUndefined();
    expect(invocationOf(leaseOwnerOf('run-1', 'eu'))).toBe('run-1');
    expect(invocationOf('6f1c-legacy-request-id')).toBe('6f1c-legacy-request-id');
  });
});

/** Any fleet's rows: states, leases (live, lapsed; shared invocations), outcomes, backoffs, dispatch times. */
const rowsArbitrary = fc
  .array(
    fc.record({
      registered: fc.boolean(),
      state: fc.constantFrom('enabled', 'enabled', 'enabled', 'paused', 'stopped', 'removed'),
      scheduleMinutes: fc.constantFrom(1, 1, 5, 60),
      lease: fc.option(fc.record({ run: fc.integer({ min: 0, max: 6 }), live: fc.boolean() })),
      lastDispatchedAgo: fc.option(fc.integer({ min: 0, max: 120 * MINUTE })),
      outcome: fc.option(
        fc.constantFrom('caught-up', 'out-of-time', 'slice-end', 'retry-later', 'auth-failed', 'lease-held'),
      ),
      backoff: fc.option(fc.integer({ min: -MINUTE, max: 10 * MINUTE })),
    }),
    { maxLength: 80 },
  )
  .map((specs) =>
    specs.map(
      (spec, i): FeedRow => ({
        feedId: `f${i}`,
        registered: spec.registered,
        state: spec.state as FeedRow['state'],
        scheduleMinutes: spec.scheduleMinutes,
        tokenParameterName: '/t/a',
        createdAt: NOW - 200 * MINUTE,
        ...(spec.lease
          ? {
              leaseOwner: leaseOwnerOf(`run-${spec.lease.run}`, `f${i}`),
              leaseExpiresAt: spec.lease.live ? NOW + MINUTE : NOW - 1,
            }
          : {}),
        ...(spec.lastDispatchedAgo === null
          ? {}
          : {
              lastDispatchedAt: NOW - spec.lastDispatchedAgo,
              lastRunAt: NOW - spec.lastDispatchedAgo + 100,
            }),
        ...(spec.outcome === null ? {} : { lastRunOutcome: spec.outcome }),
        ...(spec.backoff === null ? {} : { authRetryNotBefore: NOW + spec.backoff }),
      }),
    ),
  );

describe('any fleet (property)', () => {
  it('never exceeds the budget, sends each feed once and only one that may run, and leaves none waiting by a free slot', () => {
    fc.assert(
      fc.property(
        rowsArbitrary,
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.integer({ min: 0, max: 79 }), { maxLength: 6 }),
        (rows, maxConcurrentPollers, batchSize, behindBatchSize, sentIds) => {
          const settings = {
            ...SETTINGS,
            maxConcurrentPollers,
            batchSize,
            maxBatchSize: batchSize * 3,
            behindBatchSize,
          };
          const inFlight = sentIds.length
            ? [{ batchId: 'd0-1', dispatchedAt: NOW - 1_000, feedIds: sentIds.map((i) => `f${i}`) }]
            : [];
          const result = planDispatch({ rows, now: NOW, dispatchId: 'd1', inFlight, settings });
          const ids = dispatched(result);
          const byId = new Map(rows.map((r) => [r.feedId, r]));

          // The budget: running pollers plus the new batches stay within it.
          expect(result.batches.length).toBeLessThanOrEqual(
            Math.max(0, maxConcurrentPollers - result.gauges.runningPollers),
          );
          // Each feed at most once, in one batch or waiting, never both.
          expect(new Set([...ids, ...result.waiting]).size).toBe(ids.length + result.waiting.length);
          for (const id of ids) {
            const feed = byId.get(id) as FeedRow;
            expect(feed.registered && feed.state === 'enabled').toBe(true);
            expect(feed.leaseOwner !== undefined && (feed.leaseExpiresAt ?? 0) > NOW).toBe(false);
            expect(feed.authRetryNotBefore !== undefined && NOW < feed.authRetryNotBefore).toBe(false);
            // On its way in a batch that has not said it ended (nor lapsed): never sent again.
            expect(inFlight.some((b) => b.feedIds.includes(id))).toBe(false);
          }
          // A batch never holds more than its kind allows (failing feeds ride along up to the light size).
          const light = Math.max(batchSize, settings.maxBatchSize);
          for (const batch of result.batches) {
            expect(batch.feedIds.length).toBeLessThanOrEqual(
              batch.kind === 'behind' ? behindBatchSize + light : light * 2,
            );
          }
          // Nothing waits while a slot is free.
          if (result.waiting.length > 0)
            expect(result.batches.length).toBe(
              Math.max(0, maxConcurrentPollers - result.gauges.runningPollers),
            );
          expect(result.gauges.dueWaiting).toBe(result.waiting.length);
          expect(result.gauges.dispatched).toBe(ids.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
