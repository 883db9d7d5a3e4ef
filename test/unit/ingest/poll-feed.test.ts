import { describe, expect, it } from 'vitest';
import { storedOrderItem } from '../../../functions/core/adapters/stored-order-item.js';
import { saleOf } from '../../../functions/core/apply/sale.js';
import { pollFeed } from '../../../functions/core/ingest/poll-feed.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import type { OrderUpdatesQuery, RawPage } from '../../../functions/core/partner/types.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import { type RawOrder, sampleOrder } from '../../fixtures/orders.js';
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
const SETTINGS: PollerConfig = pollerConfig({ maxPagesPerRun: 10 });

/** Pages p0 → p1 → p2 (last) with two orders each, chained by cursor `c1`, `c2`, `c3`. */
function threePages(query: OrderUpdatesQuery): RawPage {
  const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
  const data = [sampleOrder({ id: index * 10 + 1 }), sampleOrder({ id: index * 10 + 2 })];
  return { data, hasMore: index < 2, nextPageId: `c${index + 1}` };
}

function setup(answer: (query: OrderUpdatesQuery, call: number) => RawPage | Error, clockStart = 1_000_000) {
  const journal: string[] = [];
  const clock = { now: clockStart };
  const deps = {
    cursorStore: new MemoryCursorStore(journal),
    partner: new ScriptedPartner(answer),
    publisher: new RecordingPublisher(journal),
    quarantine: new MemoryQuarantine(),
    metrics: new CountingMetrics(),
    log: new MemoryLog(),
    now: () => clock.now,
    maxMessageBytes: undefined as number | undefined,
  };
  const run = (owner = 'run-1', settings: PollerConfig = SETTINGS) =>
    pollFeed(deps, settings, { owner, deadline: clock.now + 60_000, leaseExpiresAt: clock.now + 120_000 });
  return { deps, journal, clock, run };
}

describe('pollFeed', () => {
  it('publishes every page before committing its cursor, and stops caught up when hasMore is false', async () => {
    const { deps, journal, run } = setup(threePages);

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', failed: false, pages: 3, versionsPublished: 6 });
    expect(journal).toEqual([
      'acquire run-1',
      'publish 2',
      'commit c1',
      'publish 2',
      'commit c2',
      'publish 2',
      'commit c3',
      'release',
    ]);
    const stored = deps.cursorStore.items.get(FEED);
    expect(stored?.pageId).toBe('c3');
    expect(stored?.lastCaughtUpAt).toBeDefined();
  });

  it('resumes from the stored cursor on the next run', async () => {
    const { deps, run } = setup(threePages);
    await run('run-1', { ...SETTINGS, maxPagesPerRun: 1 });

    const outcome = await run('run-2', { ...SETTINGS, maxPagesPerRun: 1 });

    expect(outcome.kind).toBe('page-limit');
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual([undefined, 'c1']);
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('c2');
  });

  it('leaves the cursor where it was when publishing fails, so the page is sent again', async () => {
    const { deps, run } = setup(threePages);
    deps.publisher.failNext = 1;

    await expect(run()).rejects.toThrow('queue unavailable');

    expect(deps.cursorStore.items.get(FEED)?.pageId).toBeUndefined();
    expect(deps.cursorStore.items.get(FEED)?.leaseOwner).toBeUndefined();
    const retry = await run('run-2');
    expect(retry.kind).toBe('caught-up');
    expect(deps.partner.calls.filter((query) => query.pageId === undefined)).toHaveLength(2);
  });

  it('quarantines an invalid record with its reason and page, and publishes the rest of the page', async () => {
    const bad = { ...sampleOrder({ id: 7 }), status: 'refunded' };
    const { deps, run } = setup(() => ({
      data: [sampleOrder({ id: 6 }), bad],
      hasMore: false,
      nextPageId: 'c1',
    }));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'caught-up', versionsPublished: 1, quarantined: 1 });
    expect(deps.quarantine.records).toHaveLength(1);
    expect(deps.quarantine.records[0]).toMatchObject({ orderId: 7, pageId: null, raw: bad });
    expect(deps.quarantine.records[0]?.reason).toContain('refunded');
    expect(deps.metrics.counts.RecordsQuarantined).toBe(1);
  });

  it('quarantines a version too large for SQS instead of dropping it', async () => {
    const { deps, run } = setup(() => ({ data: [sampleOrder({ id: 9 })], hasMore: false, nextPageId: 'c1' }));

    deps.maxMessageBytes = 200;
    await run();

    expect(deps.publisher.published).toHaveLength(0);
    expect(deps.quarantine.records[0]?.reason).toMatch(/exceeds the SQS limit of 200 bytes/);
    expect(deps.metrics.counts.OversizedRecords).toBe(1);
  });

  it('quarantines every version whose vendorId makes a sales index key over 2,048 bytes, sale or not', async () => {
    // Prepare: the key is `<vendorId>#<currency>`, counted in UTF-8 bytes (moto would store it; AWS refuses).
    const atLimit = 'v'.repeat(2044);
    const { deps, run } = setup(() => ({
      data: [
        sampleOrder({ id: 1, vendorId: atLimit }),
        sampleOrder({ id: 2, vendorId: `${atLimit}v` }),
        sampleOrder({ id: 3, vendorId: `${atLimit}v`, status: 'placed' }),
        sampleOrder({ id: 4, vendorId: '€'.repeat(682) }), // 682 characters, 2,046 bytes
      ],
      hasMore: false,
      nextPageId: 'c1',
    }));

    // Act
    const outcome = await run();

    // Assess
    expect(outcome).toMatchObject({ kind: 'caught-up', versionsPublished: 1, quarantined: 3 });
    expect(deps.publisher.published.map((message) => message.orderId)).toEqual([1]);
    const limit = "over DynamoDB's partition key limit of 2048 bytes";
    expect(deps.quarantine.records.map((record) => [record.orderId, record.reason])).toEqual([
      [2, `vendorId too long: the salesByVendor index key saleKey would be 2049 bytes, ${limit}`],
      [3, `vendorId too long: the salesByVendor index key saleKey would be 2049 bytes, ${limit}`],
      [4, `vendorId too long: the salesByVendor index key saleKey would be 2050 bytes, ${limit}`],
    ]);
    expect(deps.metrics.counts.OversizedRecords).toBe(3);
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('c1');
  });

  it('quarantines a version whose item fits the orders table but not its history entry', async () => {
    // Prepare: orders items `room` bytes under DynamoDB's 400 KB as the consumer sizes them (an unknown
    // `type`, which is never compressed, pads them); the history entry adds up to 256 bytes.
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
    const { deps, run } = setup(() => ({
      data: [withRoom(1, 256), withRoom(2, 255)],
      hasMore: false,
      nextPageId: 'c1',
    }));

    // Act
    await run();

    // Assess
    expect(deps.publisher.published.map((message) => message.orderId)).toEqual([1]);
    expect(deps.quarantine.records.map((record) => [record.orderId, record.reason])).toEqual([
      [
        2,
        `stored item of ${400 * 1024 - 255} bytes (256 more in the history) exceeds the DynamoDB limit of 409600 bytes even with its items compressed`,
      ],
    ]);
  });

  it('stops on 401 with the cursor untouched and backs off across runs instead of hammering the API', async () => {
    let tokenValid = true;
    const { deps, clock, run } = setup((query) =>
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
    // run-0's page and run-1's single 401; the run during the backoff sent nothing
    expect(callsBeforeBackoffEnded).toBe(2);
    expect(deps.metrics.counts.AuthFailures).toBe(1);
    expect(after.kind).toBe('caught-up');
    expect(deps.partner.calls[2]?.pageId).toBe('c1'); // the cursor stayed where the 401 found it
    expect(deps.cursorStore.items.get(FEED)?.authFailures).toBe(0);
  });

  it('doubles the auth backoff per consecutive 401 up to the cap', async () => {
    const { deps, clock, run } = setup(() => new PartnerError('auth'));
    const waits: number[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      await run(`run-${attempt}`);
      const notBefore = deps.cursorStore.items.get(FEED)?.authRetryNotBefore ?? 0;
      waits.push(notBefore - clock.now);
      clock.now = notBefore + 1;
    }
    expect(waits).toEqual([60_000, 120_000, 240_000, 480_000, 600_000]);
  });

  it('recovers from an expired cursor by restarting without pageId, losing nothing', async () => {
    const { deps, run } = setup((_query, call) => {
      if (call === 1) return new PartnerError('cursor-expired');
      return { data: [sampleOrder({ id: 1 })], hasMore: false, nextPageId: 'fresh' };
    }, Date.parse('2024-05-01T12:00:00.000Z'));
    deps.cursorStore.items.set(FEED, {
      pageId: 'purged',
      revision: 3,
      highWaterMark: '2024-05-01T10:00:00.000Z',
      lastCaughtUpAt: undefined,
      createdAt: '2024-05-01T00:00:00.000Z',
      authFailures: 0,
      authRetryNotBefore: undefined,
    });

    const outcome = await run('run-1', { ...SETTINGS, recoveryLookbackMinutes: 60 });

    expect(outcome).toMatchObject({ kind: 'caught-up', cursorRecoveries: 1, versionsPublished: 1 });
    expect(deps.partner.calls[1]).toMatchObject({ fromTimestamp: '2024-05-01T09:00:00.000Z' });
    expect(deps.partner.calls[1]?.pageId).toBeUndefined();
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('fresh');
  });

  it('replays from the earliest entry after an expired cursor when no lookback is configured', async () => {
    const { deps, run } = setup((_query, call) =>
      call === 1 ? new PartnerError('cursor-expired') : { data: [], hasMore: false, nextPageId: 'fresh' },
    );

    await run();

    expect(deps.partner.calls[1]).toEqual({ pageSize: 10 });
  });

  it('ends the run instead of looping when the cursor expires again right after recovery', async () => {
    // The spec's test-expired-page-id: every restart serves a page whose cursor is already expired.
    const { deps, run } = setup((query) =>
      query.pageId === undefined
        ? { data: [sampleOrder({ id: 1 })], hasMore: true, nextPageId: 'expired' }
        : new PartnerError('cursor-expired'),
    );

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'cursor-expired-again', failed: false, cursorRecoveries: 1 });
    expect(deps.partner.calls.map((query) => query.pageId)).toEqual([
      undefined,
      'expired',
      undefined,
      'expired',
    ]);
  });

  it('commits what is done and ends the run when the partner says to come back later', async () => {
    const { deps, run } = setup((query) =>
      query.pageId === 'c1'
        ? new PartnerError('retry-later', 'wait', { reason: 'rate-limited', retryAfterMs: 120_000 })
        : threePages(query),
    );

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'retry-later', failed: false, pages: 1 });
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('c1');
    expect(deps.log.lines.map((line) => line.message)).toContain(
      'partner API asked us to come back later (429); the next run repeats the request',
    );
  });

  it('ends retry-later, not failed, when the partner answers no readable page on every attempt, and counts it', async () => {
    const unreadable = new PartnerError('retry-later', 'GET /v1/orderUpdates: unreadable answer', {
      reason: 'unreadable',
      statusCode: 200,
    });
    const { deps, run } = setup((query) => (query.pageId === 'c1' ? unreadable : threePages(query)));

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'retry-later', failed: false, pages: 1 });
    expect(outcome.next).toBeUndefined();
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('c1');
    expect(deps.metrics.counts.UnreadablePages).toBe(1);
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: expect.stringMatching(/^partner API answered no readable page/),
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
    const { deps, run } = setup((query) => (query.pageId === 'c1' ? outOfTime() : threePages(query)));

    const outcome = await run();

    // Out of time with progress: the run may hand over at once; the next run asks for c1 again.
    expect(outcome).toMatchObject({ kind: 'out-of-time', failed: false, pages: 1 });
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBe('c1');

    // The same on the run's first request is no progress: retry-later, so no continuation. The log says
    // whose deadline it was: ours, not the partner's Retry-After.
    const first = setup(() => outOfTime());
    expect(await first.run()).toMatchObject({ kind: 'retry-later', pages: 0 });
    const messages = first.deps.log.lines.map((line) => line.message);
    expect(messages).toContain(
      "the run's own deadline ended the partner request; the next run repeats the request",
    );
    expect(messages.join('\n')).not.toMatch(/come back later/);
  });

  it('records how the run ended on the cursor item as it gives the lease up', async () => {
    const { deps, clock, run } = setup(threePages);

    await run('run-1', { ...SETTINGS, maxPagesPerRun: 1 });
    expect(deps.cursorStore.lastRuns.get(FEED)).toEqual({ outcome: 'page-limit', at: clock.now });
    await run('run-2');
    expect(deps.cursorStore.lastRuns.get(FEED)).toEqual({ outcome: 'caught-up', at: clock.now });
  });

  it('skips the run without calling the API while another invocation holds the lease', async () => {
    const { deps, run } = setup(threePages);
    await deps.cursorStore.acquire(FEED, 'other', 1_000_000, 1_120_000);

    const outcome = await run();

    expect(outcome.kind).toBe('lease-held');
    expect(deps.partner.calls).toHaveLength(0);
    expect(deps.metrics.counts.LeaseContended).toBe(1);
  });

  it('stops committing once another invocation has taken the lease, so the cursor never regresses', async () => {
    const { deps, run } = setup((query, call) => {
      if (call === 2) deps.cursorStore.steal(FEED, 'intruder');
      return threePages(query);
    });

    const outcome = await run();

    expect(outcome).toMatchObject({ kind: 'lease-lost', failed: true });
    expect(deps.cursorStore.items.get(FEED)?.leaseOwner).toBe('intruder');
  });

  it('starts no fetch once the time budget is spent', async () => {
    const { deps, clock, run } = setup(threePages);
    const outcome = await pollFeed(deps, SETTINGS, {
      owner: 'late',
      deadline: clock.now - 1,
      leaseExpiresAt: clock.now + 1000,
    });
    expect(outcome.kind).toBe('out-of-time');
    expect(deps.partner.calls).toHaveLength(0);
    expect((await run('next')).kind).toBe('caught-up');
  });

  it('passes the configured filters on every request', async () => {
    const { deps, run } = setup(threePages);
    await run('run-1', { ...SETTINGS, vendorIds: ['v1', 'v2'], minAgeMinutes: 90 });
    expect(deps.partner.calls[1]).toEqual({
      pageId: 'c1',
      pageSize: 10,
      vendorIds: ['v1', 'v2'],
      minAgeMinutes: 90,
    });
  });

  it('keeps the stream start as cursor when the stream is empty (no nextPageId)', async () => {
    const { deps, run } = setup(() => ({ data: [], hasMore: false }));
    const outcome = await run();
    expect(outcome.kind).toBe('caught-up');
    expect(deps.cursorStore.items.get(FEED)?.pageId).toBeUndefined();
    expect(deps.cursorStore.items.get(FEED)?.lastCaughtUpAt).toBeDefined();
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
    const accepted = new Set(['new-token']);
    const setupResult = setup((query) =>
      accepted.has(tokens.cached) ? threePages(query) : new PartnerError('auth'),
    );
    const deps = { ...setupResult.deps, tokens };
    const run = (owner: string) =>
      pollFeed(deps, SETTINGS, {
        owner,
        deadline: setupResult.clock.now + 60_000,
        leaseExpiresAt: setupResult.clock.now + 120_000,
      });
    return { ...setupResult, deps, tokens, run };
  }

  it('on a 401 reads SSM afresh and, the value having changed, retries the request once and succeeds', async () => {
    const { deps, tokens, run } = rotation();
    tokens.rotate('new-token'); // rotated in SSM; the cache still holds the old value

    const outcome = await run('run-1');

    expect(outcome).toMatchObject({ kind: 'caught-up', failed: false, pages: 3 });
    expect(deps.partner.calls.map((call) => call.pageId)).toEqual([undefined, undefined, 'c1', 'c2']);
    expect(tokens.reads).toBe(1);
    expect(deps.metrics.counts.AuthFailures).toBeUndefined();
    expect(deps.cursorStore.items.get(FEED)).toMatchObject({ pageId: 'c3', authFailures: 0 });
  });

  it('retries only once: a new value that is refused too ends the run, keyed to its version', async () => {
    const { deps, tokens, run } = rotation();
    tokens.rotate('also-refused');

    expect(await run('run-1')).toMatchObject({ kind: 'auth-failed', failed: true });
    expect(deps.partner.calls).toHaveLength(2);
    expect(deps.cursorStore.items.get(FEED)).toMatchObject({ authFailures: 1, authFailedTokenVersion: 2 });
  });

  it('stores the refused version, never the token, and logs no token', async () => {
    const { deps, run } = rotation();

    expect(await run('run-1')).toMatchObject({ kind: 'auth-failed' });

    const item = deps.cursorStore.items.get(FEED);
    expect(item).toMatchObject({ authFailures: 1, authFailedTokenVersion: 1, authRetryNotBefore: 1_060_000 });
    expect(JSON.stringify(item)).not.toContain('old-token');
    expect(JSON.stringify(deps.log.lines)).not.toContain('old-token');
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        attributes: expect.objectContaining({ failedTokenVersion: 1 }),
      }),
    );
  });

  it('stays in backoff while the parameter keeps the refused version, without calling the partner', async () => {
    const { deps, tokens, clock, run } = rotation();
    await run('run-1');
    clock.now += 30_000;

    expect(await run('run-2')).toMatchObject({ kind: 'auth-backoff', failed: false });
    expect(deps.partner.calls).toHaveLength(1);
    expect(tokens.reads).toBe(2); // the 401's fresh read, then the backoff's version check
    expect(deps.metrics.counts.AuthFailures).toBe(1);
  });

  it('calls the partner at once during the backoff when the parameter has a new version, and clears it', async () => {
    const { deps, tokens, clock, run } = rotation();
    await run('run-1');
    clock.now += 1_000;
    tokens.rotate('new-token');

    const outcome = await run('run-2');

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 3 });
    expect(deps.partner.calls.map((call) => call.pageId)).toEqual([undefined, undefined, 'c1', 'c2']);
    expect(deps.cursorStore.items.get(FEED)).toMatchObject({
      authFailures: 0,
      authRetryNotBefore: undefined,
      authFailedTokenVersion: undefined,
    });
  });

  it('starts the doubling again from the first wait when a new version is refused', async () => {
    const { deps, tokens, clock, run } = rotation();
    await run('run-1');
    clock.now = (deps.cursorStore.items.get(FEED)?.authRetryNotBefore ?? 0) + 1;
    await run('run-2'); // the same version refused again: 120 s
    expect(deps.cursorStore.items.get(FEED)).toMatchObject({
      authFailures: 2,
      authRetryNotBefore: clock.now + 120_000,
    });
    tokens.rotate('also-refused');

    expect(await run('run-3')).toMatchObject({ kind: 'auth-failed' });
    expect(deps.cursorStore.items.get(FEED)).toMatchObject({
      authFailures: 1,
      authFailedTokenVersion: 2,
      authRetryNotBefore: clock.now + 60_000,
    });
  });
});

describe('the lease', () => {
  it('expires at the time the run was given (deadline + grace), however many pages it commits', async () => {
    const expiries: Array<number | undefined> = [];
    const { deps, clock } = setup((query) => {
      expiries.push(deps.cursorStore.items.get(FEED)?.leaseExpiresAt);
      clock.now += 10_000; // each page takes 10 s
      return threePages(query);
    });

    const outcome = await pollFeed(deps, SETTINGS, {
      owner: 'run-1',
      deadline: 1_050_000,
      leaseExpiresAt: 1_110_000,
    });

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 3 });
    expect(expiries).toEqual([1_110_000, 1_110_000, 1_110_000]);
  });
});
