// Pagination the partner can get wrong (issue 11, points 5–8): each case keeps the data it was served,
// ends the run cleanly instead of looping or stalling, and leaves a cursor the next run can use.
import { describe, expect, it } from 'vitest';
import { pollFeed } from '../../../functions/core/ingest/poll-feed.js';
import { CursorExpiredError } from '../../../functions/core/partner/errors.js';
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

describe('rule 5 recovery answered by the empty-stream body', () => {
  it('clears the expired cursor instead of saving it again', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'purged' ? new CursorExpiredError() : { data: [], hasMore: false },
    );
    deps.cursorStore.items.set(FEED, storedCursor('purged'));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', cursorRecoveries: 1 });
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBeUndefined();
  });

  it('so the next run starts without the expired cursor: no second 404', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'purged' ? new CursorExpiredError() : { data: [], hasMore: false },
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
      query.pageId === 'purged' ? new CursorExpiredError() : { data: [], hasMore: false },
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
      query.pageId === 'purged' ? new CursorExpiredError() : { data: [], hasMore: false },
    );
    deps.cursorStore.items.set(FEED, storedCursor('purged'));

    await run({ ...SETTINGS, recoveryLookbackMinutes: 1 });

    expect(deps.partner.calls[1]).toEqual({ pageSize: 10 });
  });
});
