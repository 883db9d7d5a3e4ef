// pollFeed over in-memory ports (pollFeedFixture): what it does with each answer the partner client can give.
// The client's own behaviour (a 401, a body over the cap, a non-JSON 200, deadlines, Retry-After) is asserted
// in test/integration/partner-client*.test.ts; here, what the run makes of the client's result.
import { describe, expect, it } from 'vitest';
import { storedOrderItem } from '../../../functions/core/adapters/stored-order-item.js';
import { saleOf } from '../../../functions/core/apply/sale.js';
import { parseOrderVersionMessage } from '../../../functions/core/contract/consumer-kit.js';
import { parseFeedConfig } from '../../../functions/core/fleet/feed-config.js';
import { findingMetricName } from '../../../functions/core/ingest/hand-off.js';
import { nextPaceDelayMs, pollSettingsOf } from '../../../functions/core/ingest/poll-feed.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import type { CallOptions, OrderUpdatesQuery, RawPage } from '../../../functions/core/partner/types.js';
import { PLACED_AT_MS, type RawOrder, sampleOrder } from '../../fixtures/orders.js';
import { cursorState, pollFeedFixture, ScriptedPartner, threePages } from '../../support/fakes.js';
import { pollerConfig, pollSettings } from '../../support/poller-config.js';

const SETTINGS = pollSettings();
const NOW = Date.parse('2026-11-23T06:00:00.000Z');

/** A stored cursor item, as a previous run left it. */
const storedCursor = (pageId: string | undefined, highWaterMark?: string) =>
  cursorState({ pageId, revision: 3, highWaterMark });

/** undefined → c1 → c2 (last), one order each. */
function chained(query: OrderUpdatesQuery): RawPage {
  const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
  return { data: [sampleOrder({ id: index + 1 })], hasMore: index < 2, nextPageId: `c${index + 1}` };
}

const pageOf = (...data: unknown[]): RawPage => ({ data, hasMore: false, nextPageId: 'c1' });
const expired = (pageId: string, then: RawPage) => (query: OrderUpdatesQuery) =>
  query.pageId === pageId ? new PartnerError('cursor-expired') : then;
const pageIds = (partner: ScriptedPartner) => partner.calls.map((query) => query.pageId);

describe('pollFeed', () => {
  it('publishes every page before committing its cursor, and stops caught up when hasMore is false', async () => {
    const { journal, run, stored } = pollFeedFixture(threePages);

    expect(await run()).toMatchObject({ kind: 'caught-up', failed: false, pages: 3, versionsPublished: 6 });
    expect(journal).toEqual([
      'acquire run-1#feed-a',
      ...['publish 2', 'commit c1', 'publish 2', 'commit c2', 'publish 2', 'commit c3'],
      'release',
    ]);
    expect(stored()).toMatchObject({ pageId: 'c3', lastCaughtUpAt: expect.any(String) });
  });

  it('resumes from the stored cursor on the next run, and records how each run ended as it gives the lease up', async () => {
    const { deps, clock, run, stored } = pollFeedFixture(threePages);
    const onePage = { ...SETTINGS, maxPagesPerRun: 1 };
    await run('run-1', onePage);
    expect(deps.cursorStore.lastRuns.get('feed-a')).toEqual({ outcome: 'page-limit', at: clock.now });

    expect((await run('run-2', onePage)).kind).toBe('page-limit');
    expect(pageIds(deps.partner)).toEqual([undefined, 'c1']);
    expect(stored()?.pageId).toBe('c2');
    await run('run-3');
    expect(deps.cursorStore.lastRuns.get('feed-a')).toEqual({ outcome: 'caught-up', at: clock.now });
  });

  it('leaves the cursor where it was when publishing fails, so the page is sent again', async () => {
    const { deps, run, stored } = pollFeedFixture(threePages);
    deps.publisher.failNext = 1;

    await expect(run()).rejects.toThrow('queue unavailable');

    expect(stored()).toMatchObject({ pageId: undefined, leaseOwner: undefined });
    expect((await run('run-2')).kind).toBe('caught-up');
    expect(pageIds(deps.partner).filter((pageId) => pageId === undefined)).toHaveLength(2);
  });

  it('passes the configured filters on every request', async () => {
    const { deps, run } = pollFeedFixture(threePages);
    await run('run-1', { ...SETTINGS, vendorIds: ['v1', 'v2'], minAgeMinutes: 90 });
    expect(deps.partner.calls[1]).toEqual({
      pageId: 'c1',
      pageSize: 10,
      vendorIds: ['v1', 'v2'],
      minAgeMinutes: 90,
    });
  });

  it('keeps the stream start as cursor when the stream is empty (no nextPageId)', async () => {
    const { run, stored } = pollFeedFixture(() => ({ data: [], hasMore: false }));
    expect((await run()).kind).toBe('caught-up');
    expect(stored()).toMatchObject({ pageId: undefined, lastCaughtUpAt: expect.any(String) });
  });

  it('does not move the high-water mark past the fetch time, and keeps the newer of the stored and the new one', async () => {
    const future = sampleOrder({ id: 1, placedAt: '9999-12-31T00:00:00Z' });
    const { deps, run, stored } = pollFeedFixture(() => pageOf(future), { clock: { now: NOW } });
    await run();
    expect(stored()?.highWaterMark).toBe(new Date(NOW).toISOString());

    deps.partner = new ScriptedPartner((query) =>
      query.pageId === 'c0' ? pageOf() : pageOf(sampleOrder({ id: 1 })),
    );
    deps.cursorStore.items.set('feed-a', storedCursor('c0', '9999-01-01T00:00:00.000Z'));
    await run();
    expect(stored()?.highWaterMark).toBe(new Date(NOW).toISOString()); // a stored mark is capped too
    deps.cursorStore.items.set('feed-a', storedCursor('c1', '2024-01-01T00:00:00.000Z'));
    await run();
    // The sample order's latest event: delivered 41 minutes after it was placed.
    expect(stored()?.highWaterMark).toBe(new Date(PLACED_AT_MS + 41 * 60_000).toISOString());
  });
});

describe('records pollFeed cannot publish', () => {
  it('quarantines an invalid record with its reason and page, logged with its correlation id, and publishes the rest', async () => {
    const bad = { ...sampleOrder({ id: 7 }), status: 'refunded' };
    const { deps, run } = pollFeedFixture(() => pageOf(sampleOrder({ id: 6 }), bad));

    expect(await run('req-q')).toMatchObject({ kind: 'caught-up', versionsPublished: 1, quarantined: 1 });
    expect(deps.quarantine.records).toEqual([
      expect.objectContaining({
        orderId: 7,
        pageId: null,
        raw: bad,
        reason: expect.stringContaining('refunded'),
      }),
    ]);
    expect(deps.metrics.counts.RecordsQuarantined).toBe(1);
    const line = deps.log.lines.find((entry) => entry.message === 'record quarantined');
    expect(line?.attributes).toMatchObject({ orderId: 7, correlationId: 'poll:req-q:1' });
  });

  it('quarantines a version too large for SQS instead of dropping it', async () => {
    const { deps, run } = pollFeedFixture(() => pageOf(sampleOrder({ id: 9 })));
    deps.maxMessageBytes = 200;

    await run();

    expect(deps.publisher.published).toHaveLength(0);
    expect(deps.quarantine.records[0]?.reason).toMatch(/exceeds the SQS limit of 200 bytes/);
    expect(deps.metrics.counts.OversizedRecords).toBe(1);
  });

  it('quarantines every version whose vendorId makes a sales index key over 2,048 bytes, sale or not', async () => {
    // The key is `<vendorId>#<currency>`, counted in UTF-8 bytes (moto would store it; AWS refuses).
    const atLimit = 'v'.repeat(2044);
    const { deps, run, stored } = pollFeedFixture(() =>
      pageOf(
        sampleOrder({ id: 1, vendorId: atLimit }),
        sampleOrder({ id: 2, vendorId: `${atLimit}v` }),
        sampleOrder({ id: 3, vendorId: `${atLimit}v`, status: 'placed' }),
        sampleOrder({ id: 4, vendorId: '€'.repeat(682) }), // 682 characters, 2,046 bytes
      ),
    );

    expect(await run()).toMatchObject({ kind: 'caught-up', versionsPublished: 1, quarantined: 3 });
    expect(deps.publisher.published.map((message) => message.orderId)).toEqual([1]);
    const reason = (bytes: number) =>
      `vendorId too long: the salesByVendor index key saleKey would be ${bytes} bytes, over DynamoDB's partition key limit of 2048 bytes`;
    expect(deps.quarantine.records.map((record) => [record.orderId, record.reason])).toEqual([
      [2, reason(2049)],
      [3, reason(2049)],
      [4, reason(2050)],
    ]);
    expect(deps.metrics.counts.OversizedRecords).toBe(3);
    expect(stored()?.pageId).toBe('c1');
  });

  it('quarantines a version whose item fits the orders table but not its history entry', async () => {
    // Orders items `room` bytes under DynamoDB's 400 KB as the consumer sizes them (an unknown `type`, which is
    // never compressed, pads them); the history entry adds up to 256 bytes.
    const itemBytes = (raw: RawOrder) => {
      const parsed = parseOrder(raw);
      if (!parsed.ok) throw new Error(parsed.reason);
      const findingCodes = [...new Set(parsed.findings.map((finding) => finding.code))];
      return storedOrderItem(parsed.order, saleOf(parsed.order), {
        findingCodes,
        correlationId: 'poll:run-1:1',
      }).sizeBytes;
    };
    const withRoom = (id: number, room: number) => {
      const padded = (length: number) => sampleOrder({ id, type: 'x'.repeat(length) });
      const order = padded(400_000 + 400 * 1024 - room - itemBytes(padded(400_000)));
      expect(itemBytes(order)).toBe(400 * 1024 - room);
      return order;
    };
    const { deps, run } = pollFeedFixture(() => pageOf(withRoom(1, 256), withRoom(2, 255)));

    await run();

    expect(deps.publisher.published.map((message) => message.orderId)).toEqual([1]);
    expect(deps.quarantine.records.map((record) => [record.orderId, record.reason])).toEqual([
      [
        2,
        `stored item of ${400 * 1024 - 255} bytes (256 more in the history) exceeds the DynamoDB limit of 409600 bytes even with its items compressed`,
      ],
    ]);
  });

  it('counts and logs findings per record by order id, version and codes only, one metric per kind', async () => {
    const drifted = { ...sampleOrder({ id: 7, version: 3, vendorId: 'Secret Vendor' }), loyaltyTier: 'gold' };
    const { deps, run } = pollFeedFixture(() => pageOf(drifted, sampleOrder({ id: 8 })));

    await run();

    expect(deps.metrics.counts.FindingUnknownField).toBe(1);
    expect(deps.log.lines.filter((line) => line.message === 'order version has findings')).toEqual([
      {
        level: 'warn',
        message: 'order version has findings',
        attributes: {
          feedId: 'feed-a',
          orderId: 7,
          version: 3,
          findingCodes: ['unknown-field'],
          correlationId: 'poll:run-1:1',
        },
      },
    ]);
    // No payload text (names, vendor ids, the unknown field's value) reaches the log.
    expect(JSON.stringify(deps.log.lines)).not.toMatch(/gold|Secret Vendor/);
    expect(findingMetricName('payments-sum-mismatch')).toBe('FindingPaymentsSumMismatch');
    expect(findingMetricName('invalid-unicode-replaced')).toBe('FindingInvalidUnicodeReplaced');
  });

  it('counts the records beyond the page size asked for, and hands the whole page off before its cursor moves', async () => {
    const data = Array.from({ length: 250 }, (_, index) => sampleOrder({ id: index + 1 }));
    const { deps, journal, run } = pollFeedFixture(() => pageOf(...data));

    expect(await run()).toMatchObject({ kind: 'caught-up', versionsPublished: 250 });
    expect(deps.metrics.counts.RecordsBeyondPageSize).toBe(250 - SETTINGS.pageSize);
    expect(journal.slice(1, -1)).toEqual(['publish 100', 'publish 100', 'publish 50', 'commit c1']);
  });

  it('commits a page the run has no time to finish in part (the cursor stays) and ends out of time; the next run asks for it again and hands off only the rest', async () => {
    const data = Array.from({ length: 350 }, (_, index) => sampleOrder({ id: index + 1 }));
    const { deps, clock, journal, run, stored } = pollFeedFixture((query) =>
      query.pageId === undefined
        ? { data, hasMore: true, nextPageId: 'c1' }
        : { data: [sampleOrder({ id: 999 })], hasMore: false, nextPageId: 'c2' },
    );
    const publish = deps.publisher.publish.bind(deps.publisher);
    deps.publisher.publish = async (messages) => {
      clock.now += 1000; // a slice's sends take a second
      return publish(messages);
    };

    // Three slices fit before the run's last request deadline; the rest waits.
    const first = await run('run-1', SETTINGS, { requestDeadline: clock.now + 2_500 });
    const afterFirst = stored();
    const second = await run('run-2');

    expect(first).toMatchObject({ kind: 'out-of-time', pages: 1, versionsPublished: 300 });
    expect(afterFirst).toMatchObject({ pageId: undefined, partialPage: { records: 300 } });
    expect(afterFirst?.lastCaughtUpAt).toBeUndefined();
    expect(second).toMatchObject({ kind: 'caught-up', versionsPublished: 51 });
    expect(stored()).toMatchObject({ pageId: 'c2', partialPage: undefined });
    expect(journal.filter((entry) => entry.startsWith('commit'))).toEqual([
      'commit <start>',
      'commit c1',
      'commit c2',
    ]);
    // Every version once: the part handed off in the first run is not sent again.
    expect(deps.publisher.published.map((message) => message.orderId)).toEqual([
      ...data.map((order) => order.id),
      999,
    ]);
  });
});

describe('correlation ids of published messages', () => {
  it('name the run and the page within it, in the body and the attribute, and in the page log line; a second run counts from 1 again', async () => {
    const { deps, run } = pollFeedFixture(threePages);
    const twoPages = { ...SETTINGS, maxPagesPerRun: 2 };

    await run('req-a', twoPages);
    await run('req-b', twoPages);

    const sent = deps.publisher.published.map((message) => ({
      id: message.orderId,
      source: parseOrderVersionMessage(message.body).source,
      attribute: message.attributes.correlationId?.StringValue,
    }));
    expect(sent.map(({ id, source }) => [id, source.correlationId, source.origin])).toEqual([
      [1, 'poll:req-a:1', 'poll'],
      [2, 'poll:req-a:1', 'poll'],
      [11, 'poll:req-a:2', 'poll'],
      [12, 'poll:req-a:2', 'poll'],
      [21, 'poll:req-b:1', 'poll'],
      [22, 'poll:req-b:1', 'poll'],
    ]);
    for (const message of sent) expect(message.attribute).toBe(message.source.correlationId);
    const lines = deps.log.lines.filter((line) => line.message === 'page handed off');
    expect(lines.map((line) => line.attributes)).toEqual(
      ['poll:req-a:1', 'poll:req-a:2', 'poll:req-b:1'].map((correlationId) => ({
        feedId: 'feed-a',
        correlationId,
        versionsPublished: 2,
        quarantined: 0,
      })),
    );
  });
});

describe('the lease', () => {
  it('skips the run without calling the API while another invocation holds the lease', async () => {
    const { deps, run } = pollFeedFixture(threePages);
    await deps.cursorStore.acquire('feed-a', 'other', 0, 1_000_000, 1_120_000);

    expect((await run()).kind).toBe('lease-held');
    expect(deps.partner.calls).toHaveLength(0);
    expect(deps.metrics.counts.LeaseContended).toBe(1);
  });

  it('stops committing once another invocation has taken the lease, so the cursor never regresses', async () => {
    const { deps, run, stored } = pollFeedFixture((query, call) => {
      if (call === 2) deps.cursorStore.steal('feed-a', 'intruder');
      return threePages(query);
    });

    expect(await run()).toMatchObject({ kind: 'lease-lost', failed: true });
    expect(stored()?.leaseOwner).toBe('intruder');
  });

  it('expires at the time the run was given (deadline + grace), however many pages it commits', async () => {
    const expiries: Array<number | undefined> = [];
    const { clock, run, stored } = pollFeedFixture((query) => {
      expiries.push(stored()?.leaseExpiresAt);
      clock.now += 10_000; // each page takes 10 s
      return threePages(query);
    });

    const outcome = await run('run-1', SETTINGS, { deadline: 1_050_000, leaseExpiresAt: 1_110_000 });

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 3 });
    // No lease while the first page is on its way: it is taken for the data that page brings.
    expect(expiries).toEqual([undefined, 1_110_000, 1_110_000]);
  });
});

describe('when the partner answers no page', () => {
  it('stops on 401 with the cursor untouched and backs off across runs instead of hammering the API', async () => {
    let tokenValid = true;
    const { deps, clock, run, stored } = pollFeedFixture((query) =>
      tokenValid ? threePages(query) : new PartnerError('auth'),
    );
    await run('run-0', { ...SETTINGS, maxPagesPerRun: 1 });
    tokenValid = false;

    const first = await run('run-1');
    const during = await run('run-2');
    const callsBeforeBackoffEnded = deps.partner.calls.length;
    clock.now += 60_001;
    tokenValid = true;
    const after = await run('run-3');

    expect(first).toMatchObject({ kind: 'auth-failed', failed: true });
    expect(during).toMatchObject({ kind: 'auth-backoff', failed: false });
    expect(callsBeforeBackoffEnded).toBe(2); // run-0's page and run-1's single 401
    expect(deps.metrics.counts.AuthFailures).toBe(1);
    expect(after.kind).toBe('caught-up');
    expect(deps.partner.calls[2]?.pageId).toBe('c1'); // the cursor stayed where the 401 found it
    expect(stored()?.authFailures).toBe(0);
  });

  it('doubles the auth backoff per consecutive 401 up to the cap', async () => {
    const { clock, run, stored } = pollFeedFixture(() => new PartnerError('auth'));
    const waits: number[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      await run(`run-${attempt}`);
      const notBefore = stored()?.authRetryNotBefore ?? 0;
      waits.push(notBefore - clock.now);
      clock.now = notBefore + 1;
    }
    expect(waits).toEqual([60_000, 120_000, 240_000, 480_000, 600_000]);
  });

  it('commits what is done and ends the run when the partner says to come back later', async () => {
    const later = new PartnerError('retry-later', 'wait', { reason: 'rate-limited', retryAfterMs: 120_000 });
    const { deps, run, stored } = pollFeedFixture((query) =>
      query.pageId === 'c1' ? later : threePages(query),
    );

    expect(await run()).toMatchObject({ kind: 'retry-later', failed: false, pages: 1 });
    expect(stored()?.pageId).toBe('c1');
    expect(deps.log.lines.map((line) => line.message)).toContain(
      'partner API asked us to come back later (429); the next run repeats the request',
    );
  });

  it('ends retry-later, not failed, when the partner answers no readable page on its last attempt, and counts it', async () => {
    const unreadable = new PartnerError('retry-later', 'GET /v1/orderUpdates: unreadable answer', {
      reason: 'unreadable',
      statusCode: 200,
    });
    const { deps, run, stored } = pollFeedFixture((query) =>
      query.pageId === 'c1' ? unreadable : threePages(query),
    );

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'retry-later', failed: false, pages: 1 });
    expect(stored()?.pageId).toBe('c1');
    expect(deps.metrics.counts.UnreadablePages).toBe(1);
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: expect.stringMatching(
          /^partner API failed every attempt, the last answering no readable page/,
        ),
        attributes: expect.objectContaining({ reason: 'unreadable', statusCode: 200 }),
      }),
    );
  });

  it('ends out of time, not retry-later, when its deadline passes with the next page in flight', async () => {
    const outOfTime = () =>
      new PartnerError('retry-later', 'no complete response before the call deadline', {
        reason: 'network',
        deadlinePassed: true,
      });
    const { run, stored } = pollFeedFixture((query) =>
      query.pageId === 'c1' ? outOfTime() : threePages(query),
    );

    // Out of time with progress: the feed is behind (its invocation asks for a dispatch); the next run asks
    // for c1 again.
    expect(await run()).toMatchObject({ kind: 'out-of-time', failed: false, pages: 1 });
    expect(stored()?.pageId).toBe('c1');

    // The same on the run's first request is no progress: retry-later, so the feed is not behind but failing.
    // The log says whose deadline it was: ours, not the partner's Retry-After.
    const first = pollFeedFixture(() => outOfTime());
    expect(await first.run()).toMatchObject({ kind: 'retry-later', pages: 0 });
    const messages = first.deps.log.lines.map((line) => line.message);
    expect(messages).toContain(
      "the run's own deadline ended the partner request; the next run repeats the request",
    );
    expect(messages.join('\n')).not.toMatch(/come back later/);
  });

  it('starts no fetch once the time budget is spent', async () => {
    const { deps, clock, run } = pollFeedFixture(threePages);
    const late = await run('late', SETTINGS, { deadline: clock.now - 1, leaseExpiresAt: clock.now + 1000 });
    expect(late.kind).toBe('out-of-time');
    expect(deps.partner.calls).toHaveLength(0);
    expect((await run('next')).kind).toBe('caught-up');
  });
});

describe('an expired cursor (rule 5)', () => {
  it('restarts from the high-water mark minus the lookback, never later than now, and loses nothing', async () => {
    const { deps, run, stored } = pollFeedFixture(expired('purged', pageOf(sampleOrder({ id: 1 }))), {
      clock: { now: NOW },
    });
    const lookback = { ...SETTINGS, recoveryLookbackMinutes: 60 };
    deps.cursorStore.items.set('feed-a', storedCursor('purged', '2026-11-23T05:00:00.000Z'));

    expect(await run('run-1', lookback)).toMatchObject({
      kind: 'caught-up',
      cursorRecoveries: 1,
      versionsPublished: 1,
    });
    expect(deps.partner.calls[1]).toEqual({ pageSize: 10, fromTimestamp: '2026-11-23T04:00:00.000Z' });
    expect(stored()?.pageId).toBe('c1');

    // A mark stored in the future (before the cap on it).
    deps.cursorStore.items.set('feed-a', storedCursor('purged', '9999-12-31T00:00:00.000Z'));
    await run('run-2', lookback);
    expect(deps.partner.calls[3]?.fromTimestamp).toBe(new Date(NOW - 60 * 60_000).toISOString());
    expect(deps.metrics.counts.CursorRecoveries).toBe(2);
  });

  it('replays from the earliest entry without a lookback or without a stored mark', async () => {
    const { deps, run } = pollFeedFixture(expired('purged', pageOf()));
    deps.cursorStore.items.set('feed-a', storedCursor('purged', '2026-11-23T05:00:00.000Z'));
    await run();
    deps.cursorStore.items.set('feed-a', storedCursor('purged'));
    await run('run-2', { ...SETTINGS, recoveryLookbackMinutes: 1 });

    expect(deps.partner.calls).toEqual([
      { pageId: 'purged', pageSize: 10 },
      { pageSize: 10 },
      { pageId: 'purged', pageSize: 10 },
      { pageSize: 10 },
    ]);
  });

  it('ends the run instead of looping when the cursor expires again right after recovery', async () => {
    // The spec's test-expired-page-id: every restart serves a page whose cursor is already expired.
    const { deps, run } = pollFeedFixture((query) =>
      query.pageId === undefined
        ? { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'expired' }
        : new PartnerError('cursor-expired'),
    );

    expect(await run()).toMatchObject({ kind: 'cursor-expired-again', failed: false, cursorRecoveries: 1 });
    expect(pageIds(deps.partner)).toEqual([undefined, 'expired', undefined, 'expired']);
  });

  it('clears the cursor when the recovery is answered by the empty-stream body, so the next run sends no second 404', async () => {
    const { deps, run, stored } = pollFeedFixture(expired('purged', { data: [], hasMore: false }));
    deps.cursorStore.items.set('feed-a', storedCursor('purged'));

    expect(await run()).toMatchObject({ kind: 'caught-up', cursorRecoveries: 1 });
    expect(stored()?.pageId).toBeUndefined();
    expect((await run()).cursorRecoveries).toBe(0);
    expect(pageIds(deps.partner)).toEqual(['purged', undefined, undefined]);
  });
});

describe('pages that break the pagination rules', () => {
  it('hasMore true without nextPageId (rule 1): publishes the data, keeps the cursor it asked with, counts it and ends the run', async () => {
    const { deps, journal, run, stored } = pollFeedFixture((query) =>
      query.pageId === 'c1'
        ? { data: [sampleOrder({ id: 7 }), sampleOrder({ id: 8 })], hasMore: true }
        : { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' },
    );

    expect(await run()).toMatchObject({ kind: 'missing-next-page-id', failed: false, versionsPublished: 3 });
    expect(journal).toEqual([
      'acquire run-1#feed-a',
      'publish 1',
      'commit c1',
      'publish 2',
      'commit c1',
      'release',
    ]);
    expect(deps.partner.calls).toHaveLength(2);
    expect(deps.metrics.counts.MissingNextPageId).toBe(1);
    expect(stored()?.lastCaughtUpAt).toBeUndefined();
  });

  it('a stuck cursor (an empty page handing back the pageId sent) ends the run after one request, on every later run too', async () => {
    const { deps, run, stored } = pollFeedFixture((query) =>
      query.pageId === 'stuck'
        ? { data: [], hasMore: true, nextPageId: 'stuck' }
        : { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'stuck' },
    );

    expect(await run()).toMatchObject({
      kind: 'stuck-cursor',
      failed: false,
      pages: 2,
      versionsPublished: 1,
    });
    expect(pageIds(deps.partner)).toEqual([undefined, 'stuck']);
    expect(stored()?.pageId).toBe('stuck');
    await run('run-2');
    expect(pageIds(deps.partner)).toEqual([undefined, 'stuck', 'stuck']);
    expect(deps.metrics.counts.StuckCursor).toBe(2);
  });

  it('goes on after a repeated page that brings data with the same cursor (rule 6), absorbing the repeat', async () => {
    const { deps, run } = pollFeedFixture((query, call) =>
      query.pageId === undefined || call === 2
        ? { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' }
        : { data: [sampleOrder({ id: 2 })], hasMore: false, nextPageId: 'c2' },
    );

    expect(await run()).toMatchObject({ kind: 'caught-up', pages: 3 });
    expect(deps.metrics.counts.StuckCursor).toBeUndefined();
  });
});

describe('a cursor cycle (a cursor handed back that was already asked for)', () => {
  const cycle = (next: Record<string, string>) => (query: OrderUpdatesQuery) => ({
    data: [sampleOrder({ id: 1 })],
    hasMore: true,
    nextPageId: next[query.pageId ?? 'start'],
  });

  it('ends the run after one repeated page: a page with data handing back its own cursor, or A → B → A', async () => {
    const self = pollFeedFixture(cycle({ start: 'c1', c1: 'c1' }));
    expect(await self.run()).toMatchObject({ kind: 'stuck-cursor', failed: false, pages: 3 });
    expect(pageIds(self.deps.partner)).toEqual([undefined, 'c1', 'c1']);
    expect(self.deps.metrics.counts.StuckCursor).toBe(1);

    const { deps, run, stored } = pollFeedFixture(cycle({ start: 'A', A: 'B', B: 'A' }));
    expect(await run()).toMatchObject({ kind: 'stuck-cursor', pages: 4 });
    expect(pageIds(deps.partner)).toEqual([undefined, 'A', 'B', 'A']);
    expect(stored()?.pageId).toBe('B');
  });

  it('catches a cycle across runs of one page each (the memory rides on the cursor item), and stops there', async () => {
    const { deps, run, stored } = pollFeedFixture(cycle({ start: 'A', A: 'B', B: 'A' }));
    const settings = { ...SETTINGS, maxPagesPerRun: 1 };
    const kinds: string[] = [];
    for (let step = 0; step < 6; step += 1) {
      const outcome = await run(`run-${step}`, settings);
      kinds.push(outcome.kind);
      if (outcome.kind !== 'page-limit') break;
    }

    expect(kinds).toEqual(['page-limit', 'page-limit', 'page-limit', 'stuck-cursor']);
    expect(pageIds(deps.partner)).toEqual([undefined, 'A', 'B', 'A']);
    expect(stored()?.recentCursors?.length).toBe(4);
    // The next run remembers the cycle: one page, and it stops again.
    expect(await run('run-next')).toMatchObject({ kind: 'stuck-cursor', pages: 1 });
  });

  it('drops the memory at the end of the stream (what comes after it is new)', async () => {
    const { run, stored } = pollFeedFixture(chained);
    await run();
    expect(stored()).toMatchObject({ pageId: 'c3', recentCursors: undefined });
  });

  it('starts a fresh memory when an operator moved the cursor: the cycle gets its one repeat again', async () => {
    const { deps, run, stored } = pollFeedFixture(cycle({ start: 'c1', c1: 'c1', d0: 'c1' }));
    await run();
    deps.cursorStore.items.set('feed-a', { ...(stored() ?? storedCursor(undefined)), pageId: 'd0' });
    deps.partner.calls.length = 0;

    expect(await run()).toMatchObject({ kind: 'stuck-cursor', pages: 3 });
    expect(pageIds(deps.partner)).toEqual(['d0', 'c1', 'c1']);
  });

  it('forgets the cursors of the stream before a rule-5 recovery (the stream starts again)', async () => {
    let expiredOnce = false;
    const { deps, run } = pollFeedFixture((query) => {
      if (query.pageId !== 'c2' || expiredOnce) return chained(query);
      expiredOnce = true;
      return new PartnerError('cursor-expired');
    });

    expect(await run()).toMatchObject({ kind: 'caught-up', cursorRecoveries: 1 });
    expect(pageIds(deps.partner)).toEqual([undefined, 'c1', 'c2', undefined, 'c1', 'c2']);
  });
});

describe('a page body over the cap (the client answers body-too-large)', () => {
  const bodyTooLarge = () =>
    new PartnerError('body-too-large', 'GET /v1/orderUpdates: response body exceeds the limit', {
      statusCode: 200,
    });

  it('asks the same cursor again at once with half the page size, keeps the size and grows it by one per clean page', async () => {
    const { deps, run, stored } = pollFeedFixture((query) =>
      (query.pageSize ?? 0) > 30 ? bodyTooLarge() : chained(query),
    );
    const hundred = { ...SETTINGS, pageSize: 100, maxPagesPerRun: 1000 };

    expect(await run('run-1', hundred)).toMatchObject({
      kind: 'caught-up',
      failed: false,
      pages: 3,
      versionsPublished: 3,
    });
    expect(deps.partner.calls.map((query) => [query.pageId, query.pageSize])).toEqual([
      [undefined, 100],
      [undefined, 50],
      [undefined, 25],
      ['c1', 26],
      ['c2', 27],
    ]);
    expect(deps.metrics.counts.PageSizeReduced).toBe(2);
    expect(stored()?.pageSize).toBe(28);
    await run('run-2', hundred);
    expect(deps.partner.calls.at(-1)).toMatchObject({ pageId: 'c3', pageSize: 28 });
  });

  it('drops the kept size once back at the configured one', async () => {
    const { deps, run, stored } = pollFeedFixture(chained);
    deps.cursorStore.items.set('feed-a', { ...storedCursor('c1'), pageSize: 9 });

    await run();

    expect(deps.partner.calls.map((query) => query.pageSize)).toEqual([9, 10]);
    expect(stored()?.pageSize).toBeUndefined();
  });

  it('stops as order-over-body-cap when a page of one order is over the cap, the cursor where it was', async () => {
    const { deps, run, stored } = pollFeedFixture(() => bodyTooLarge());
    deps.cursorStore.items.set('feed-a', storedCursor('c7'));

    expect(await run()).toMatchObject({ kind: 'order-over-body-cap', failed: false, pages: 0 });
    expect(deps.partner.calls.map((query) => query.pageSize)).toEqual([10, 5, 2, 1, 1, 1]);
    expect(pageIds(deps.partner).every((pageId) => pageId === 'c7')).toBe(true);
    expect(deps.metrics.counts).toMatchObject({ PageSizeReduced: 3, OrderOverBodyCap: 1 });
    expect(stored()?.pageId).toBe('c7');
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({ level: 'error', message: expect.stringContaining('page body cap') }),
    );
  });

  it("asks a page of one order again when it was over the cap once (a gateway's decompression bomb), and goes on", async () => {
    let bombs = 1;
    const { deps, run, stored } = pollFeedFixture((query) =>
      query.pageId === 'c1' && bombs-- > 0 ? bodyTooLarge() : chained(query),
    );
    deps.cursorStore.items.set('feed-a', storedCursor('c1'));

    expect(await run('run-1', { ...SETTINGS, pageSize: 1 })).toMatchObject({
      kind: 'caught-up',
      failed: false,
    });
    expect(deps.partner.calls.slice(0, 2)).toMatchObject([
      { pageId: 'c1', pageSize: 1 },
      { pageId: 'c1', pageSize: 1 },
    ]);
    expect(deps.metrics.counts.OrderOverBodyCap ?? 0).toBe(0);
    expect(stored()?.stopReason).toBeUndefined();
  });
});

describe('pacing under 429s and the retry counts', () => {
  /** Pages c0 → … → c{last}; the pages in `limited` report one 429 wait first, page 1 one 5xx retry. */
  const feed =
    (last: number, limited: ReadonlySet<number>) =>
    (query: OrderUpdatesQuery, _call: number, options: CallOptions): RawPage => {
      const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
      if (limited.has(index))
        options.onRetry?.({ kind: 'rate-limited', attempt: 1, waitMs: 1000, status: 429 });
      if (index === 1) options.onRetry?.({ kind: 'server-error', attempt: 1, waitMs: 200, status: 503 });
      return { data: [sampleOrder({ id: index + 1 })], hasMore: index < last, nextPageId: `c${index + 1}` };
    };

  it("counts the run's partner retries and rate-limit waits in its outcome and metrics", async () => {
    const { deps, run } = pollFeedFixture(feed(3, new Set([2, 3])));

    expect(await run()).toMatchObject({ kind: 'caught-up', partnerRetries: 1, rateLimitWaits: 2 });
    expect(deps.metrics.counts).toMatchObject({ PartnerRetries: 1, RateLimitWaits: 2 });
  });

  it('waits longer between requests while pages meet 429s, less once they stop, and keeps the pace for the next run', async () => {
    const { sleeps, run, stored } = pollFeedFixture(feed(8, new Set([1, 2, 3])));
    expect(await run('run-1', { ...SETTINGS, maxPagesPerRun: 4 })).toMatchObject({
      kind: 'page-limit',
      paceDelayMs: 1000,
    });
    expect(stored()).toMatchObject({ pageId: 'c4', paceDelayMs: 1000 });

    await run('run-2');

    // After pages 1, 2, 3 (each met a 429) the delay doubles from 250 ms; run 2 starts at page 4 from the 1 s
    // the first run left, and the rate climbs 0.2 requests/s a page without a 429 (1 s → 833 ms → 714 ms …).
    expect(sleeps).toEqual([250, 500, 833, 714, 625, 556]);
  });

  it('nextPaceDelayMs: no delay without 429s, doubling up to 30 s on each, down 50 ms or up 0.2 requests/s per clean page (the sooner), bounded under a 429 every fifth or third page', () => {
    const series = (start: number, limited: (page: number) => boolean, pages: number) => {
      const delays = [start];
      for (let page = 1; page <= pages; page += 1)
        delays.push(nextPaceDelayMs(delays.at(-1) ?? 0, limited(page)));
      return delays;
    };
    expect(series(0, () => false, 1)).toEqual([0, 0]);
    expect(series(0, () => true, 6)).toEqual([0, 250, 500, 1_000, 2_000, 4_000, 8_000]);
    expect(series(16_000, () => true, 2)).toEqual([16_000, 30_000, 30_000]);
    expect(series(160, () => false, 4)).toEqual([160, 110, 60, 10, 0]);
    const lastCycle = series(0, (page) => page % 5 === 0, 200).slice(-5);
    expect(Math.min(...lastCycle)).toBeGreaterThan(0);
    expect(Math.max(...lastCycle)).toBeLessThan(30_000);
    // A partner whose 429s do not follow the pace (fuzz seed 626: a third of its answers): 50 ms a clean page
    // against a doubling ratcheted the pace to 30 s a page, and it took 600 clean pages to come back. Now a
    // 429 every third page keeps it between 1.25 and 2.5 s, and 30 s comes back to none in 20 clean pages.
    const everyThird = series(0, (page) => page % 3 === 0, 300).slice(-3);
    expect(Math.max(...everyThird)).toBeLessThanOrEqual(2_500);
    expect(series(30_000, () => false, 20).at(-1)).toBe(0);
  });
});

/** The token's SSM parameter and the poller's cache of it: the partner sees the cached value. */
class FakeTokenParameter {
  value = 'old-token';
  version = 1;
  cached = 'old-token';
  reads = 0;
  rotate(value: string): void {
    this.value = value;
    this.version += 1;
  }
  async refresh(): Promise<{ version: number; changed: boolean }> {
    this.reads += 1;
    const before = this.cached;
    this.cached = this.value;
    return { version: this.version, changed: before !== this.value };
  }
}

describe('pollFeed with a rotated token', () => {
  function rotation() {
    const tokens = new FakeTokenParameter();
    const fixture = pollFeedFixture((query) =>
      tokens.cached === 'new-token' ? threePages(query) : new PartnerError('auth'),
    );
    fixture.deps.tokens = tokens;
    return { ...fixture, tokens };
  }

  it('on a 401 reads SSM afresh and, the value having changed, retries the request once and succeeds', async () => {
    const { deps, tokens, run, stored } = rotation();
    tokens.rotate('new-token'); // rotated in SSM; the cache still holds the old value

    expect(await run()).toMatchObject({ kind: 'caught-up', failed: false, pages: 3 });
    expect(pageIds(deps.partner)).toEqual([undefined, undefined, 'c1', 'c2']);
    expect(tokens.reads).toBe(1);
    expect(deps.metrics.counts.AuthFailures).toBeUndefined();
    expect(stored()).toMatchObject({ pageId: 'c3', authFailures: 0 });
  });

  it.each([
    ['the cached value is refused and SSM has no other', undefined, 1, 1],
    ['a new value is refused too (it retries only once)', 'also-refused', 2, 2],
  ])(
    '%s: ends the run keyed to the refused version, storing and logging no token',
    async (_, rotated, calls, version) => {
      const { deps, tokens, run, stored } = rotation();
      if (rotated) tokens.rotate(rotated);

      expect(await run()).toMatchObject({ kind: 'auth-failed', failed: true });
      expect(deps.partner.calls).toHaveLength(calls);
      expect(stored()).toMatchObject({
        authFailures: 1,
        authFailedTokenVersion: version,
        authRetryNotBefore: 1_060_000,
      });
      expect(JSON.stringify([stored(), deps.log.lines])).not.toMatch(/old-token|also-refused/);
      expect(deps.log.lines).toContainEqual(
        expect.objectContaining({
          level: 'error',
          attributes: expect.objectContaining({ failedTokenVersion: version }),
        }),
      );
    },
  );

  it('stays in backoff while the parameter keeps the refused version, and calls at once when it has a new one', async () => {
    const { deps, tokens, clock, run, stored } = rotation();
    await run('run-1');
    clock.now += 30_000;

    expect(await run('run-2')).toMatchObject({ kind: 'auth-backoff', failed: false });
    expect(deps.partner.calls).toHaveLength(1);
    expect(tokens.reads).toBe(2); // the 401's fresh read, then the backoff's version check
    expect(deps.metrics.counts.AuthFailures).toBe(1);
    tokens.rotate('new-token');
    expect(await run('run-3')).toMatchObject({ kind: 'caught-up', pages: 3 });
    expect(pageIds(deps.partner)).toEqual([undefined, undefined, 'c1', 'c2']);
    expect(stored()).toMatchObject({
      authFailures: 0,
      authRetryNotBefore: undefined,
      authFailedTokenVersion: undefined,
    });
  });

  it('starts the doubling again from the first wait when a new version is refused', async () => {
    const { tokens, clock, run, stored } = rotation();
    await run('run-1');
    clock.now = (stored()?.authRetryNotBefore ?? 0) + 1;
    await run('run-2'); // the same version refused again: 120 s
    expect(stored()).toMatchObject({ authFailures: 2, authRetryNotBefore: clock.now + 120_000 });
    tokens.rotate('also-refused');

    expect(await run('run-3')).toMatchObject({ kind: 'auth-failed' });
    expect(stored()).toMatchObject({
      authFailures: 1,
      authFailedTokenVersion: 2,
      authRetryNotBefore: clock.now + 60_000,
    });
  });
});

describe('no lease until there is data', () => {
  const dispatch = { batchId: 'd1-1', dispatchedAt: 999_000 };
  const rule3 = (query: OrderUpdatesQuery): RawPage => ({
    data: [],
    hasMore: false,
    nextPageId: query.pageId,
  });

  it('records an idle poll (rule 3, the empty stream) with one write fenced on the revision read, and no lease', async () => {
    const { deps, journal, clock, run, stored } = pollFeedFixture(rule3);
    deps.cursorStore.items.set('feed-a', { ...storedCursor('c7'), authFailures: 2, recentCursors: ['x'] });

    const outcome = await run('run-1', SETTINGS, { dispatch });

    expect(outcome).toMatchObject({
      kind: 'caught-up',
      pages: 1,
      versionsPublished: 0,
      secondsSinceCaughtUp: 0,
    });
    expect(journal).toEqual(['record caught-up']);
    expect(stored()).toMatchObject({
      pageId: 'c7',
      revision: 4,
      lastCaughtUpAt: new Date(clock.now).toISOString(),
      lastRunOutcome: 'caught-up',
      lastDispatchId: 'd1-1',
      lastDispatchedAt: 999_000,
      authFailures: 0,
    });
    expect([stored()?.leaseOwner, stored()?.recentCursors]).toEqual([undefined, undefined]);
    // A feed never polled, on an empty stream: the same one write.
    const empty = pollFeedFixture(() => ({ data: [], hasMore: false }));
    expect(await empty.run()).toMatchObject({ kind: 'caught-up' });
    expect(empty.journal).toEqual(['record caught-up']);
    expect(empty.deps.log.lines.map((line) => line.message)).not.toContain('page handed off');
  });

  it('writes nothing when the item moved since it was read (another run, an operator): nothing was published', async () => {
    const { deps, journal, run, read, stored } = pollFeedFixture(rule3);
    deps.cursorStore.items.set('feed-a', storedCursor('c7'));
    const item = read('feed-a');
    deps.cursorStore.items.set('feed-a', { ...storedCursor('c8'), revision: 4 });

    expect(await run('run-1', SETTINGS, { item })).toMatchObject({ kind: 'caught-up' });
    expect(journal).toEqual([]);
    expect(stored()).toMatchObject({ pageId: 'c8', revision: 4 });
    expect(stored()?.lastRunOutcome).toBeUndefined();
    expect(deps.log.lines.map((line) => line.message)).toContainEqual(
      expect.stringContaining("this run's record is dropped"),
    );
  });

  it('takes the lease on the revision read for a page with data; refused when the revision moved, it publishes nothing', async () => {
    const { deps, journal, run, read, stored } = pollFeedFixture(threePages);
    const item = read('feed-a');
    // Another run took the feed and committed between this run's read and its first page.
    await deps.cursorStore.acquire('feed-a', 'other#feed-a', 0, 1_000_000, 1_000_001);
    deps.cursorStore.items.set('feed-a', { ...(stored() ?? storedCursor(undefined)), leaseOwner: undefined });
    journal.length = 0;

    expect(await run('run-1', SETTINGS, { item })).toMatchObject({ kind: 'lease-held', failed: false });
    expect(journal).toEqual([]);
    expect(deps.publisher.published).toEqual([]);
    expect(deps.metrics.counts.LeaseContended).toBe(1);

    // Read afresh, the run takes the lease and records its dispatch on the item.
    expect(await run('run-2', SETTINGS, { dispatch })).toMatchObject({ kind: 'caught-up', pages: 3 });
    expect(journal[0]).toBe('acquire run-2#feed-a');
    expect(stored()).toMatchObject({
      lastDispatchId: 'd1-1',
      lastRunOutcome: 'caught-up',
      leaseOwner: undefined,
    });
  });

  it('records a run that failed before any data with one write, the 401 backoff included', async () => {
    const later = new PartnerError('retry-later', 'down', { reason: 'server-error', statusCode: 503 });
    const failing = pollFeedFixture(() => later);
    expect(await failing.run('run-1', SETTINGS, { dispatch })).toMatchObject({
      kind: 'retry-later',
      pages: 0,
    });
    expect(failing.journal).toEqual(['record retry-later']);
    expect(failing.stored()).toMatchObject({ lastRunOutcome: 'retry-later', lastDispatchId: 'd1-1' });

    const refused = pollFeedFixture(() => new PartnerError('auth'));
    expect(await refused.run()).toMatchObject({ kind: 'auth-failed', failed: true });
    expect(refused.journal).toEqual(['record auth-failed']);
    expect(refused.stored()).toMatchObject({
      authFailures: 1,
      authRetryNotBefore: 1_060_000,
      stopReason: expect.stringContaining('rotate it in SSM'),
    });
  });

  it('records a run that threw before any data as an error, and rethrows', async () => {
    const { deps, journal, run, stored } = pollFeedFixture(threePages);
    deps.cursorStore.acquire = async () => {
      throw new Error('cursor table unavailable');
    };

    await expect(run()).rejects.toThrow('cursor table unavailable');
    expect(journal).toEqual(['record error']);
    expect(stored()?.lastRunOutcome).toBe('error');
  });
});

describe('a slice of the invocation', () => {
  /** An endless backlog whose every page takes 10 s. */
  const slow = (clock: { now: number }) => (query: OrderUpdatesQuery) => {
    clock.now += 10_000;
    const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
    return { data: [sampleOrder({ id: index + 1 })], hasMore: true, nextPageId: `c${index + 1}` };
  };

  it('pages until its slice ends, then ends slice-end with every fetched page committed', async () => {
    const clock = { now: 1_000_000 };
    const { deps, run, stored } = pollFeedFixture(slow(clock), { clock });
    const unlimited = { ...SETTINGS, maxPagesPerRun: undefined };

    const outcome = await run('run-1', unlimited, { sliceEndsAt: clock.now + 25_000 });

    expect(outcome).toMatchObject({ kind: 'slice-end', failed: false });
    expect(stored()?.lastRunOutcome).toBe('slice-end');
    expect(stored()?.pageId).toBe(`c${outcome.pages}`);
    expect(deps.publisher.published).toHaveLength(outcome.pages);
    // A slice longer than the invocation ends as the invocation does.
    const whole = await run('run-2', unlimited, { sliceEndsAt: clock.now + 600_000 });
    expect(whole.kind).toBe('out-of-time');
  });

  it("waits for the run's first page past its slice's end: a partner slow to start a page makes progress however short the slice", async () => {
    // Every page takes 12 s to start; the slice is 5 s (1,000 feeds behind), the invocation has a minute.
    const clock = { now: 1_000_000 };
    const slowToStart = (query: OrderUpdatesQuery, _call: number, options: CallOptions) => {
      clock.now += 12_000;
      if (options.deadline !== undefined && clock.now > options.deadline)
        return new PartnerError('retry-later', 'no complete response before the call deadline', {
          reason: 'network',
          deadlinePassed: true,
        });
      return slow({ now: 0 })(query);
    };
    const { deps, run, stored } = pollFeedFixture(slowToStart, { clock });

    const outcome = await run('run-1', SETTINGS, { sliceEndsAt: clock.now + 5_000 });

    // The first page, waited for past the slice's end; then the slice is over: no second request.
    expect(outcome).toMatchObject({ kind: 'slice-end', failed: false, pages: 1 });
    expect(stored()).toMatchObject({ pageId: 'c1', lastRunOutcome: 'slice-end' });
    expect(deps.publisher.published).toHaveLength(1);
    expect(deps.partner.calls).toHaveLength(1);
  });

  it('commits a page in part at the end of its slice, as at the end of an invocation', async () => {
    const data = Array.from({ length: 350 }, (_, index) => sampleOrder({ id: index + 1 }));
    const { deps, clock, run, stored } = pollFeedFixture(() => ({ data, hasMore: true, nextPageId: 'c1' }));
    const publish = deps.publisher.publish.bind(deps.publisher);
    deps.publisher.publish = async (messages) => {
      clock.now += 1000;
      return publish(messages);
    };

    // The slice's end plus the invocation's half margin (requestDeadline − deadline) bounds the hand-off.
    const outcome = await run('run-1', SETTINGS, {
      sliceEndsAt: clock.now + 1_000,
      requestDeadline: clock.now + 61_500,
    });

    expect(outcome).toMatchObject({ kind: 'slice-end', versionsPublished: 300 });
    expect(stored()).toMatchObject({ pageId: undefined, partialPage: { records: 300 } });
  });
});

describe("a feed's settings from its row", () => {
  const deployment = pollerConfig();

  it('takes the row’s configuration, the deployment’s base URL when the row names none, and orderIds only for reconcile', () => {
    const stream = parseFeedConfig({ tokenParameterName: '/t/eu', vendorIds: ['v1'], pageSize: 50 });
    expect(pollSettingsOf('eu', stream, deployment)).toEqual({
      feedId: 'eu',
      tokenParameterName: '/t/eu',
      partnerBaseUrl: deployment.partnerBaseUrl,
      pageSize: 50,
      vendorIds: ['v1'],
      orderIds: undefined,
      fromTimestamp: undefined,
      minAgeMinutes: undefined,
      maxPagesPerRun: deployment.maxPagesPerRun,
      maxPageBodyBytes: deployment.maxPageBodyBytes,
      recoveryLookbackMinutes: undefined,
      leaseGraceMs: deployment.leaseGraceMs,
      authBackoff: deployment.authBackoff,
    });
    const reconcile = parseFeedConfig({
      tokenParameterName: '/t/eu',
      partnerBaseUrl: 'https://other.example.com/api',
      purpose: 'reconcile',
      orderIds: ['9223372036854775807'],
    });
    expect(pollSettingsOf('eu', reconcile, deployment)).toMatchObject({
      partnerBaseUrl: 'https://other.example.com/api',
      orderIds: ['9223372036854775807'],
    });
  });

  it('asks with the feed’s filters, and from its first-sync start only while it has no cursor', async () => {
    const { deps, run } = pollFeedFixture(chained);
    const settings = {
      ...SETTINGS,
      orderIds: ['7', '9223372036854775807'],
      fromTimestamp: '2026-01-01T00:00:00.000Z',
      minAgeMinutes: 60,
    };

    await run('run-1', settings);

    expect(deps.partner.calls.slice(0, 2)).toEqual([
      {
        pageSize: 10,
        orderIds: ['7', '9223372036854775807'],
        fromTimestamp: '2026-01-01T00:00:00.000Z',
        minAgeMinutes: 60,
      },
      { pageId: 'c1', pageSize: 10, orderIds: ['7', '9223372036854775807'], minAgeMinutes: 60 },
    ]);
  });
});

describe('documented stops on the row', () => {
  it('puts the stop’s reason on the row, and the next run that ends otherwise removes it', async () => {
    let stuck = true;
    const { run, stored } = pollFeedFixture((query) => {
      if (query.pageId === undefined)
        return { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'c1' };
      return stuck
        ? { data: [], hasMore: true, nextPageId: 'c1' }
        : { data: [sampleOrder({ id: 2 })], hasMore: false, nextPageId: 'c2' };
    });

    expect((await run('run-1')).kind).toBe('stuck-cursor');
    expect(stored()?.stopReason).toMatch(/cursor it was already sent/);
    stuck = false;
    expect((await run('run-2')).kind).toBe('caught-up');
    expect(stored()?.stopReason).toBeUndefined();
  });

  it('stops the feed (state stopped, with the reason) when one order is over the body cap', async () => {
    const { deps, run, stored } = pollFeedFixture(
      () => new PartnerError('body-too-large', 'over the cap', { statusCode: 200 }),
    );
    const stopped: Array<[string, string]> = [];
    deps.feedStates = { stop: async (feedId, reason) => void stopped.push([feedId, reason]) };

    expect(await run()).toMatchObject({ kind: 'order-over-body-cap', failed: false });
    expect(stopped).toEqual([['feed-a', expect.stringContaining('raise the cap, then resume the feed')]]);
    expect(stored()).toMatchObject({ lastRunOutcome: 'order-over-body-cap', stopReason: stopped[0]?.[1] });
  });
});
