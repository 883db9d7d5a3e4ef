// What people read: the status report, the feeds list and one feed's detail, the quarantine list and retry
// plan, the budget release plan, tables, cursors, durations.
import { describe, expect, it } from 'vitest';
import { quarantineKey } from '../../../functions/core/adapters/s3-quarantine.js';
import type { FeedState } from '../../../functions/core/fleet/feed-config.js';
import { parseFeedConfig } from '../../../functions/core/fleet/feed-config.js';
import type { QuarantinedRecord } from '../../../functions/core/ingest/ports.js';
import { type BudgetStatus, releasePlan, renderBudgets } from '../../../tools/ops/budget.js';
import { cursorItemOf } from '../../../tools/ops/cursor.js';
import { renderFeedList } from '../../../tools/ops/feeds.js';
import { formatDuration, renderTable, shortenCursor } from '../../../tools/ops/format.js';
import { judgeQuarantined, renderQuarantineList, renderRetryPlan } from '../../../tools/ops/quarantine.js';
import {
  countByState,
  type FeedStatus,
  feedStatusOf,
  renderFeedDetail,
  renderStatus,
  type StatusReport,
  stalestOf,
} from '../../../tools/ops/status.js';
import { sampleOrder } from '../../fixtures/orders.js';

const NOW = Date.parse('2026-05-01T12:00:00.000Z');

describe('format helpers', () => {
  it('aligns table columns', () => {
    expect(
      renderTable(
        ['A', 'LONG'],
        [
          ['xyz', '1'],
          ['q', '22'],
        ],
      ),
    ).toBe('A    LONG\nxyz  1\nq    22');
  });

  it('shortens long cursors only', () => {
    expect(shortenCursor(undefined)).toBe('(start)');
    expect(shortenCursor('short')).toBe('short');
    expect(shortenCursor('0123456789abcdefghijklmnop')).toBe('01234567…ijklmnop');
  });

  it('prints durations in their two largest units', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(42_900)).toBe('42s');
    expect(formatDuration(303_000)).toBe('5m 3s');
    expect(formatDuration((2 * 3600 + 10 * 60 + 5) * 1000)).toBe('2h 10m');
    expect(formatDuration((3 * 86_400 + 4 * 3600) * 1000)).toBe('3d 4h');
  });
});

describe('status', () => {
  it('computes lag from the last catch-up, else from the item creation, and a backoff only while it lasts', () => {
    const caughtUp = cursorItemOf('orders', {
      revision: 3,
      lastCaughtUpAt: '2026-05-01T11:55:00.000Z',
      createdAt: '2026-04-01T00:00:00.000Z',
      authFailures: 2,
      authRetryNotBefore: NOW + 60_000,
    });
    const never = cursorItemOf('eu', {
      revision: 1,
      createdAt: '2026-05-01T11:00:00.000Z',
      authRetryNotBefore: NOW - 1,
    });

    expect(feedStatusOf(caughtUp, 'fn', NOW)).toMatchObject({
      lagSeconds: 300,
      authBackoffUntil: '2026-05-01T12:01:00.000Z',
      leaseLive: false,
    });
    expect(feedStatusOf(never, undefined, NOW)).toMatchObject({
      lagSeconds: 3600,
      authBackoffUntil: undefined,
    });
  });

  it('renders feeds, queues with n/a ages and the reason, quarantine and ledger', () => {
    const cursor = cursorItemOf('orders', {
      revision: 9,
      pageId: 'eyJrIjoiZmVlZDowMjU3MDU0YmM4M2UiLCJwIjoxMzB9',
      lastCaughtUpAt: '2026-05-01T11:59:00.000Z',
      leaseOwner: 'req-1',
      leaseExpiresAt: NOW + 30_000,
      authFailures: 1,
      authRetryNotBefore: NOW + 300_000,
    });
    const ordersQueue = { name: 'orders', url: 'u', delayed: 0 };
    const report: StatusReport = {
      stackName: 'OrderFeedIngester',
      at: new Date(NOW).toISOString(),
      feeds: [feedStatusOf(cursor, 'poller', NOW)],
      queues: [
        { ...ordersQueue, role: 'queue', visible: 3, inFlight: 1, oldestAgeSeconds: 125, ageNote: undefined },
        {
          ...ordersQueue,
          role: 'dead-letter',
          visible: 0,
          inFlight: 0,
          oldestAgeSeconds: undefined,
          ageNote: 'no CloudWatch metrics on an emulator',
        },
      ],
      quarantined: 2,
      ledger: [{ vendorId: 'v1', currency: 'EUR', count: 2, amount: 2n ** 60n }],
      budgets: [
        {
          tokenParameter: '/partner/token',
          ...{ nextSlotAt: NOW, rate: 7, intervalMs: 142.857, holdUntil: NOW + 90_000, adjustedAt: NOW },
          ...{ taken: 100, takenAtAdjust: 90, slotAtAdjust: NOW, step: 0.35, throttlesLastHour: 4 },
        },
      ],
    };

    const text = renderStatus(report);

    expect(text).toContain('eyJrIjoi…IjoxMzB9');
    // An item written before runs recorded their outcome: only the 401 streak says anything.
    expect(text).toContain('auth-failed');
    expect(text).toContain('1 failed run(s), no call before 2026-05-01T12:05:00.000Z');
    expect(text).toContain('held by req-1 until 2026-05-01T12:00:30.000Z');

    const keyed = renderStatus({
      ...report,
      feeds: [feedStatusOf({ ...cursor, authFailedTokenVersion: 3 }, 'poller', NOW)],
    });
    expect(keyed).toContain(
      '1 failed run(s) with token version 3, no call before 2026-05-01T12:05:00.000Z unless the token parameter has a newer version',
    );
    expect(text).toMatch(/orders \(DLQ\)\s+0\s+0\s+0\s+n\/a \(no CloudWatch metrics on an emulator\)/);
    expect(text).toMatch(/orders\s+3\s+1\s+0\s+2m 5s/);
    expect(text).toContain('Quarantined records: 2');
    expect(text).toMatch(/v1\s+EUR\s+2\s+1152921504606846976/);
    // The token's shared budget: its rate, the hold in force and the 429s of the last hour.
    expect(text).toMatch(/\/partner\/token\s+7\/s\s+held until 2026-05-01T12:01:30.000Z \(1m 30s\)\s+4/);
  });
});

describe('the fleet in status and feeds list', () => {
  /** A registered feed caught up `lagMinutes` ago (undefined: never, and no item). */
  const feed = (
    feedId: string,
    lagMinutes: number | undefined,
    state: FeedState = 'enabled',
    config: Record<string, unknown> = {},
  ): FeedStatus =>
    feedStatusOf(
      cursorItemOf(
        feedId,
        lagMinutes === undefined
          ? undefined
          : { revision: 2, lastCaughtUpAt: new Date(NOW - lagMinutes * 60_000).toISOString() },
      ),
      undefined,
      NOW,
      {
        config: parseFeedConfig({ tokenParameterName: `/t/${feedId}`, ...config }),
        configRevision: 1,
        state,
        item: state === 'enabled' ? {} : { stateReason: `why ${feedId}` },
      },
    );

  it('takes the stalest of the feeds polled, most behind first: enabled and stopped, never paused or removed', () => {
    const feeds = [
      feed('a', 5),
      feed('b', 50, 'stopped'),
      feed('c', 500, 'paused'),
      feed('d', 5000, 'removed'),
      feed('e', undefined),
      feed('f', 1),
    ];

    expect(stalestOf(feeds, 3).map((each) => each.feedId)).toEqual(['e', 'b', 'a']);
    expect(countByState(feeds)).toEqual({
      feeds: 6,
      enabled: 3,
      paused: 1,
      stopped: 1,
      removed: 1,
      unregistered: 0,
    });
  });

  it('lists feeds with their token, vendors (a long list cut), schedule, lag, last run and the reason of a stop', () => {
    const text = renderFeedList([
      feed('a', 5, 'enabled', { vendorIds: ['v1', 'v2', 'v3', 'v4', 'v5'], scheduleMinutes: 5 }),
      feed('b', 50, 'stopped'),
      feedStatusOf(
        cursorItemOf('legacy', { revision: 1, lastRunOutcome: 'caught-up', lastRunAt: 'T' }),
        'fn',
        NOW,
      ),
    ]);

    expect(text.split('\n')).toEqual([
      'FEED    STATE    TOKEN PARAMETER  VENDOR IDS   SCHEDULE  LAG     LAST RUN        REASON',
      'a       enabled  /t/a             v1,v2,v3 +2  5m        5m 0s   n/a',
      'b       stopped  /t/b             all          1m        50m 0s  n/a             why b',
      'legacy  no row   -                -            -         -       caught-up at T',
    ]);
    expect(renderFeedList([feed('a', 5)], 7)).toMatch(/^The 1 stalest of 7 feed\(s\), most behind first:\n/);
  });

  it('counts the fleet by state in status, with the stalest in a table, and one feed in detail with --feed', () => {
    const base = {
      stackName: 'S',
      at: new Date(NOW).toISOString(),
      queues: [],
      quarantined: 0,
      ledger: [],
      budgets: [],
    };
    const fleet = renderStatus({
      ...base,
      fleet: { feeds: 1200, enabled: 1190, paused: 8, stopped: 2, removed: 0, unregistered: 3 },
      feeds: [feed('b', 50, 'stopped')],
    });
    const one = renderStatus({ ...base, feeds: [feed('b', 50, 'stopped', { vendorIds: ['v1'] })] });

    expect(fleet).toContain(
      'Feeds: 1200 (enabled 1190, paused 8, stopped 2, removed 0; 3 without a registry row)',
    );
    expect(fleet).toContain(
      'The stalest of those polled (all: npm run ops -- feeds list; one: status --feed ID):',
    );
    expect(fleet).toMatch(/b\s+stopped\s+50m 0s\s+n\/a/);
    expect(one).toContain(renderFeedDetail(feed('b', 50, 'stopped', { vendorIds: ['v1'] })));
    expect(one).toMatch(/state\s+stopped: why b/);
    expect(one).toMatch(/vendor ids\s+v1/);
    expect(one).toMatch(/token parameter\s+\/t\/b/);
  });
});

describe('budget', () => {
  const held: BudgetStatus = {
    tokenParameter: '/partner/token',
    ...{ nextSlotAt: NOW + 300_000, rate: 2.1, intervalMs: 476.19, holdUntil: NOW + 252_000 },
    ...{ adjustedAt: NOW + 252_000, taken: 9, takenAtAdjust: 9, slotAtAdjust: NOW, step: 0.15 },
    throttlesLastHour: 3,
  };

  it('lists every token’s rate, hold and 429s, or says there is no budget yet', () => {
    const unlimited = {
      ...held,
      tokenParameter: '/other',
      rate: 0,
      holdUntil: NOW - 1,
      throttlesLastHour: 0,
    };
    expect(renderBudgets([held, unlimited], NOW).split('\n')).toEqual([
      'TOKEN BUDGET    RATE                              HOLD                                          429s LAST HOUR',
      '/partner/token  2.1/s                             held until 2026-05-01T12:04:12.000Z (4m 12s)  3',
      '/other          not limited (no 429 yet, no cap)  none                                          0',
    ]);
    expect(renderBudgets([], NOW)).toBe('No request budget yet: no feed has sent a partner request.');
  });

  it('plans a release: the hold ends, the rate starts afresh', () => {
    expect(releasePlan(held, NOW)).toEqual([
      'release the request budget of token parameter /partner/token:',
      '  hold: held until 2026-05-01T12:04:12.000Z (4m 12s) -> none (every feed on the token may send at once)',
      '  rate: 2.1/s -> the cap (partnerRequestsPerSecond), or not limited until the next 429',
      '  the item budget#/partner/token is deleted; the next request creates it afresh',
    ]);
    expect(releasePlan({ ...held, holdUntil: 0 }, NOW)[1]).toBe('  hold: none in force');
  });
});

describe('quarantine', () => {
  const record = (raw: unknown, reason: string): QuarantinedRecord => ({
    feedId: 'orders',
    pageId: 'page-3',
    reason,
    issues: [],
    raw,
    quarantinedAt: '2026-04-30T10:00:00.000Z',
  });
  const passing = { ...record(sampleOrder({ id: 77 }), 'old parser said no'), orderId: 77 };
  const failing = record({ id: 78 }, 'missing fields');
  const stored = [
    { key: quarantineKey(passing), record: passing },
    { key: quarantineKey(failing), record: failing },
  ];

  it("judges each record with the poller's own preparation: the message a poll would have sent, or today's reason", () => {
    const [now, still] = judgeQuarantined(stored, 'run-1').map((verdict) => verdict.records);

    expect(now).toHaveLength(1);
    expect(now?.[0]?.index).toBeUndefined();
    expect(now?.[0]?.message?.orderId).toBe(77);
    expect(JSON.parse(now?.[0]?.message?.body ?? '{}').source).toMatchObject({
      feedId: 'orders',
      pageId: 'page-3',
      fetchedAt: '2026-04-30T10:00:00.000Z',
      origin: 'poll',
      correlationId: 'quarantine-retry:run-1',
    });
    expect(still?.[0]?.message).toBeUndefined();
    expect(still?.[0]?.reason).toMatch(/missing required field/);
  });

  it('judges each record of an object that holds several on its own, as written today and by the older poller', () => {
    const raw = [sampleOrder({ id: 80 }), { id: 81 }, sampleOrder({ id: 82, status: 'refunded' })];
    const together = { ...record(raw, '3 more records of this page could not be published'), records: 3 };
    const older = record(raw, '3 more records of this page could not be published (beyond the 100 …)');
    const anArray = record(raw, 'expected an object');

    const [now, before, single] = judgeQuarantined(
      [together, older, anArray].map((object) => ({ key: quarantineKey(object), record: object })),
      'run-2',
    );

    for (const verdict of [now, before]) {
      expect(verdict?.records.map(({ index, message, reason }) => [index, message?.orderId, reason])).toEqual(
        [
          [0, 80, undefined],
          [1, undefined, expect.stringMatching(/^missing required field/)],
          [2, undefined, 'unknown status "refunded"'],
        ],
      );
    }
    // A record that is itself a list (the partner sent one) is one record.
    expect(single?.records).toHaveLength(1);
    expect(renderQuarantineList([{ key: 'k', record: together }])).toContain(
      '3 quarantined record(s) in 1 object(s)',
    );
  });

  it('lists records with their reasons, and plans a retry', () => {
    expect(renderQuarantineList(stored)).toMatch(
      /orders\s+77\s+-\s+1\s+2026-04-30T10:00:00.000Z\s+old parser said no/,
    );
    expect(renderQuarantineList([])).toBe('No quarantined records.');
    expect(renderRetryPlan(judgeQuarantined(stored, 'r'))).toContain('1 of 2 records pass today');
  });
});
