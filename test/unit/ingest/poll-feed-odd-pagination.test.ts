// Pagination the partner can get wrong (issue 11, points 5–8; issue 24: oversized bodies, cursor cycles,
// pages far beyond the size asked): each case keeps the data it was served, ends the run cleanly instead of
// looping or stalling, and leaves a cursor the next run can use.
import { describe, expect, it } from 'vitest';
import type { ContinuationEvent } from '../../../functions/core/ingest/continuation.js';
import { pollFeed } from '../../../functions/core/ingest/poll-feed.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import type { OrderUpdatesQuery, RawPage } from '../../../functions/core/partner/types.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import { PLACED_AT_MS, sampleOrder } from '../../fixtures/orders.js';
import {
  CountingMetrics,
  MemoryCursorStore,
  MemoryLog,
  MemoryQuarantine,
  RecordingPublisher,
  ScriptedPartner,
} from '../../support/fakes.js';
import { pollerConfig } from '../../support/poller-config.js';

const FEED = 'feed-a';
const NOW = Date.parse('2026-11-23T06:00:00.000Z');
const SETTINGS: PollerConfig = pollerConfig({ maxPagesPerRun: 1000 });

function setup(answer: (query: OrderUpdatesQuery, call: number) => RawPage | Error) {
  const journal: string[] = [];
  const deps = {
    cursorStore: new MemoryCursorStore(journal),
    partner: new ScriptedPartner(answer),
    publisher: new RecordingPublisher(journal),
    quarantine: new MemoryQuarantine(),
    metrics: new CountingMetrics(),
    log: new MemoryLog(),
    now: () => NOW,
  };
  const run = (settings: PollerConfig = SETTINGS) =>
    pollFeed(deps, settings, { owner: 'run-1', deadline: NOW + 60_000, leaseExpiresAt: NOW + 120_000 });
  return { deps, journal, run };
}

/** The client's answer to a 200 body over `maxBodyBytes`. */
const bodyTooLarge = () =>
  new PartnerError('body-too-large', 'GET /v1/orderUpdates: response body exceeds the 10485760-byte limit', {
    statusCode: 200,
  });

/** undefined → c1 → c2 (last), one order each. */
function chained(query: OrderUpdatesQuery): RawPage {
  const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
  return { data: [sampleOrder({ id: index + 1 })], hasMore: index < 2, nextPageId: `c${index + 1}` };
}

function storedCursor(pageId: string | undefined, highWaterMark?: string) {
  return {
    pageId,
    revision: 3,
    highWaterMark,
    lastCaughtUpAt: undefined,
    createdAt: '2026-01-01T00:00:00.000Z',
    authFailures: 0,
    authRetryNotBefore: undefined,
  };
}

describe('hasMore true without nextPageId (breaks rule 1)', () => {
  it("publishes the page's data, keeps the cursor it asked with, counts it and ends the run", async () => {
    const { deps, journal, run } = setup((query) =>
      query.pageId === 'c1'
        ? { data: [sampleOrder({ id: 7 }), sampleOrder({ id: 8 })], hasMore: true }
        : { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' },
    );

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'missing-next-page-id', failed: false, versionsPublished: 3 });
    expect(journal).toEqual(['acquire run-1', 'publish 1', 'commit c1', 'publish 2', 'commit c1', 'release']);
    expect(deps.partner.calls).toHaveLength(2);
    expect(deps.metrics.counts.MissingNextPageId).toBe(1);
    expect(deps.cursorStore.items.get(FEED)?.lastCaughtUpAt).toBeUndefined();
  });
});

describe('a stuck cursor (hasMore true, nextPageId equal to the pageId sent)', () => {
  it('ends the run after one request instead of asking for the same page again and again', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'stuck'
        ? { data: [], hasMore: true, nextPageId: 'stuck' }
        : { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'stuck' },
    );

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'stuck-cursor', failed: false, pages: 2, versionsPublished: 1 });
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual([undefined, 'stuck']);
    expect(deps.metrics.counts.StuckCursor).toBe(1);
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('stuck');
  });

  it('goes on after a repeated page that brings data with the same cursor (rule 6), absorbing the repeat', async () => {
    const { deps, run } = setup((query, call) => {
      if (query.pageId === undefined)
        return { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' };
      if (call === 2) return { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' };
      return { data: [sampleOrder({ id: 2 })], hasMore: false, nextPageId: 'c2' };
    });

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 3 });
    expect(deps.metrics.counts.StuckCursor).toBeUndefined();
  });

  it('does the same on every later run: one request per run', async () => {
    const { deps, run } = setup(() => ({ data: [], hasMore: true, nextPageId: 'stuck' }));
    deps.cursorStore.items.set(FEED, storedCursor('stuck'));

    await run();
    await run();

    expect(deps.partner.calls).toHaveLength(2);
    expect(deps.metrics.counts.StuckCursor).toBe(2);
  });
});

describe('a page body over the cap (maxPageBodyBytes)', () => {
  it('asks the same cursor again at once with half the page size, keeps the size and grows it by one per clean page', async () => {
    const { deps, run } = setup((query) => ((query.pageSize ?? 0) > 30 ? bodyTooLarge() : chained(query)));

    const outcome = await run({ ...SETTINGS, pageSize: 100 });

    expect(outcome).toMatchObject({ kind: 'caught-up', failed: false, pages: 3, versionsPublished: 3 });
    expect(deps.partner.calls.map((query) => [query.pageId, query.pageSize])).toEqual([
      [undefined, 100],
      [undefined, 50],
      [undefined, 25],
      ['c1', 26],
      ['c2', 27],
    ]);
    expect(deps.metrics.counts.PageSizeReduced).toBe(2);
    expect(deps.cursorStore.items.get(FEED)?.pageSize).toBe(28);

    await run({ ...SETTINGS, pageSize: 100 });
    expect(deps.partner.calls.at(-1)).toMatchObject({ pageId: 'c3', pageSize: 28 });
  });

  it('drops the kept size once back at the configured one', async () => {
    const { deps, run } = setup(chained);
    deps.cursorStore.items.set(FEED, { ...storedCursor('c1'), pageSize: 9 });

    await run({ ...SETTINGS, pageSize: 10 });

    expect(deps.partner.calls.map((query) => query.pageSize)).toEqual([9, 10]);
    expect(deps.cursorStore.items.get(FEED)?.pageSize).toBeUndefined();
  });

  it('stops as order-over-body-cap when a page of one order is over the cap, the cursor where it was', async () => {
    const { deps, run } = setup(() => bodyTooLarge());
    deps.cursorStore.items.set(FEED, storedCursor('c7'));

    const outcome = await run({ ...SETTINGS, pageSize: 10 });

    expect(outcome).toMatchObject({ kind: 'order-over-body-cap', failed: false, pages: 0 });
    expect(deps.partner.calls.map((query) => [query.pageId, query.pageSize])).toEqual([
      ['c7', 10],
      ['c7', 5],
      ['c7', 2],
      ['c7', 1],
    ]);
    expect(deps.metrics.counts).toMatchObject({ PageSizeReduced: 3, OrderOverBodyCap: 1 });
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('c7');
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({ level: 'error', message: expect.stringContaining('page body cap') }),
    );
  });
});

describe('a cursor cycle (a cursor handed back that was already asked for)', () => {
  it('ends the run after one repeated page when a page with data hands back its own cursor again and again', async () => {
    const { deps, run } = setup(() => ({ data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' }));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'stuck-cursor', failed: false, pages: 3 });
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual([undefined, 'c1', 'c1']);
    expect(deps.metrics.counts.StuckCursor).toBe(1);
  });

  it('ends A → B → A after one repeated page', async () => {
    const next: Record<string, string> = { start: 'A', A: 'B', B: 'A' };
    const { deps, run } = setup((query) => ({
      data: [sampleOrder({ id: 1 })],
      hasMore: true,
      nextPageId: next[query.pageId ?? 'start'],
    }));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'stuck-cursor', pages: 4 });
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual([undefined, 'A', 'B', 'A']);
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('B');
  });

  it.each([
    ['a continuation chain', true],
    ['scheduled runs (one page each, as local mode)', false],
  ])(
    'catches a cycle across the runs of %s (the memory rides on the cursor item), and ends the chain',
    async (_, asChain) => {
      const next: Record<string, string> = { start: 'A', A: 'B', B: 'A' };
      const { deps } = setup((query) => ({
        data: [sampleOrder({ id: 1 })],
        hasMore: true,
        nextPageId: next[query.pageId ?? 'start'],
      }));
      const settings = { ...SETTINGS, maxPagesPerRun: 1, maxContinuations: 10 };
      const kinds: string[] = [];
      let continuation: ContinuationEvent | undefined;
      for (let step = 0; step < 6; step += 1) {
        const outcome = await pollFeed(deps, settings, {
          owner: `run-${step}`,
          deadline: NOW + 60_000,
          leaseExpiresAt: NOW + 120_000,
          canContinue: asChain,
          ...(continuation ? { continuation } : {}),
        });
        kinds.push(outcome.kind);
        continuation = outcome.next;
        if (outcome.kind !== 'page-limit') break;
      }

      expect(kinds).toEqual(['page-limit', 'page-limit', 'page-limit', 'stuck-cursor']);
      expect(deps.partner.calls.map((query) => query.pageId)).toEqual([undefined, 'A', 'B', 'A']);
      expect(continuation).toBeUndefined();
      expect(deps.cursorStore.items.get(FEED)?.recentCursors?.length).toBe(4);
      // The next scheduled run remembers the cycle: one page, and it stops again.
      const again = await pollFeed(deps, SETTINGS, {
        owner: 'run-next',
        deadline: NOW + 60_000,
        leaseExpiresAt: NOW + 120_000,
      });
      expect(again).toMatchObject({ kind: 'stuck-cursor', pages: 1 });
    },
  );

  it('drops the memory at the end of the stream (what comes after it is new)', async () => {
    const { deps, run } = setup(chained);

    await run();

    expect(deps.cursorStore.items.get(FEED)).toMatchObject({ pageId: 'c3', recentCursors: undefined });
  });

  it('starts a fresh memory when an operator moved the cursor: the cycle gets its one repeat again', async () => {
    const { deps, run } = setup(() => ({ data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' }));
    await run();
    const stuck = deps.cursorStore.items.get(FEED);
    if (stuck) deps.cursorStore.items.set(FEED, { ...stuck, pageId: 'd0' });
    deps.partner.calls.length = 0;

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'stuck-cursor', pages: 3 });
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual(['d0', 'c1', 'c1']);
  });

  it('forgets the cursors of the stream before a rule-5 recovery (the stream starts again)', async () => {
    let expired = false;
    const { deps, run } = setup((query) => {
      if (query.pageId === 'c2' && !expired) {
        expired = true;
        return new PartnerError('cursor-expired');
      }
      return chained(query);
    });

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', cursorRecoveries: 1 });
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual([
      undefined,
      'c1',
      'c2',
      undefined,
      'c1',
      'c2',
    ]);
  });
});

describe('a page with far more records than asked for', () => {
  it('is handed off in slices: counted, identical records quarantined once, 100 one by one and the rest in one object, 8 writes at most in flight', async () => {
    const valid = Array.from({ length: 250 }, (_, index) => sampleOrder({ id: index + 1 }));
    const identical = Array.from({ length: 2_000 }, () => ({}));
    const distinct = Array.from({ length: 300 }, (_, index) => ({
      ...sampleOrder({ id: 1000 + index }),
      status: 'refunded',
    }));
    const data = [...valid, ...identical, ...distinct];
    const { deps, journal, run } = setup(() => ({ data, hasMore: false, nextPageId: 'c1' }));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', versionsPublished: 250, quarantined: 2_300 });
    expect(deps.metrics.counts.RecordsBeyondPageSize).toBe(data.length - SETTINGS.pageSize);
    const publishes = journal.filter((entry) => entry.startsWith('publish '));
    expect(Math.max(...publishes.map((entry) => Number(entry.slice(8))))).toBeLessThanOrEqual(100);
    expect(journal.at(-2)).toBe('commit c1');
    // {} once, then the first 99 distinct ones; the other 201 distinct records together.
    expect(deps.quarantine.records).toHaveLength(101);
    const together = deps.quarantine.records.at(-1);
    expect(together?.reason).toMatch(/^201 more records of this page/);
    expect(together?.raw).toEqual(distinct.slice(99));
    expect(deps.quarantine.maxInFlight).toBeLessThanOrEqual(8);
    expect(deps.log.lines.filter((line) => line.message === 'record quarantined')).toHaveLength(100);
  });
});

describe('a page of more records than one run could validate', () => {
  it('validates the first 10,000 and quarantines the rest unread in one object, so the page is done and the feed goes on', async () => {
    const beyond = [sampleOrder({ id: 1 }), sampleOrder({ id: 2 })];
    const { deps, journal, run } = setup(() => ({
      data: [...Array.from({ length: 10_000 }, () => 0), ...beyond],
      hasMore: false,
      nextPageId: 'c1',
    }));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', versionsPublished: 0, quarantined: 10_002 });
    expect(deps.quarantine.records).toHaveLength(2);
    expect(deps.quarantine.records[1]?.raw).toEqual(beyond);
    expect(deps.quarantine.records[1]?.issues).toContain(
      '2 × not validated: beyond the first 10000 records of the page',
    );
    expect(journal.at(-2)).toBe('commit c1');
  });
});

describe('rule 5 recovery answered by the empty-stream body', () => {
  it('clears the expired cursor instead of saving it again', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'purged' ? new PartnerError('cursor-expired') : { data: [], hasMore: false },
    );
    deps.cursorStore.items.set(FEED, storedCursor('purged'));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', cursorRecoveries: 1 });
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBeUndefined();
  });

  it('so the next run starts without the expired cursor: no second 404', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'purged' ? new PartnerError('cursor-expired') : { data: [], hasMore: false },
    );
    deps.cursorStore.items.set(FEED, storedCursor('purged'));

    await run();
    const second = await run();

    expect(second.cursorRecoveries).toBe(0);
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual(['purged', undefined, undefined]);
  });
});

describe('a record dated in the future', () => {
  it('does not move the high-water mark past the fetch time', async () => {
    const future = sampleOrder({ id: 1, placedAt: '9999-12-31T00:00:00Z' });
    const { deps, run } = setup(() => ({ data: [future], hasMore: false, nextPageId: 'c1' }));

    await run();

    expect(deps.cursorStore.items.get(FEED)?.highWaterMark).toBe(new Date(NOW).toISOString());
  });

  it('never makes a bounded recovery ask for a fromTimestamp later than now', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'purged' ? new PartnerError('cursor-expired') : { data: [], hasMore: false },
    );
    // A mark stored before this fix, in the future.
    deps.cursorStore.items.set(FEED, storedCursor('purged', '9999-12-31T00:00:00.000Z'));

    await run({ ...SETTINGS, recoveryLookbackMinutes: 60 });

    expect(deps.partner.calls[1]?.fromTimestamp).toBe(new Date(NOW - 60 * 60_000).toISOString());
    expect(deps.metrics.counts.CursorRecoveries).toBe(1);
  });

  it('caps the stored mark too, and otherwise keeps the newer of the stored and the new mark', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'c0'
        ? { data: [], hasMore: false }
        : { data: [sampleOrder({ id: 1 })], hasMore: false },
    );
    deps.cursorStore.items.set(FEED, storedCursor('c0', '9999-01-01T00:00:00.000Z'));
    await run();
    expect(deps.cursorStore.items.get(FEED)?.highWaterMark).toBe(new Date(NOW).toISOString());

    deps.cursorStore.items.set(FEED, storedCursor('c1', '2024-01-01T00:00:00.000Z'));
    await run();
    // The sample order's latest event: delivered 41 minutes after it was placed.
    expect(deps.cursorStore.items.get(FEED)?.highWaterMark).toBe(
      new Date(PLACED_AT_MS + 41 * 60_000).toISOString(),
    );
  });

  it('makes a bounded recovery without a stored mark ask from the start of the stream', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'purged' ? new PartnerError('cursor-expired') : { data: [], hasMore: false },
    );
    deps.cursorStore.items.set(FEED, storedCursor('purged'));

    await run({ ...SETTINGS, recoveryLookbackMinutes: 1 });

    expect(deps.partner.calls[1]).toEqual({ pageSize: 10 });
  });
});
