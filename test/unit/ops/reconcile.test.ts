// `ops reconcile`: the use case with fake ports (every result kind, repairs, the 401 stop, chunks and
// concurrency, exact int64 ids), and the command's flags and stack reading that need no AWS.
import { describe, expect, it } from 'vitest';
import { parseOrderVersionMessage } from '../../../functions/core/contract/consumer-kit.js';
import type { Int64 } from '../../../functions/core/model/int64.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import type { CallOptions, PartnerApi, RawPage } from '../../../functions/core/partner/types.js';
import { pollerOf } from '../../../tools/ops/reconcile/command.js';
import {
  CHUNK_SIZE,
  ReconcileAuthError,
  type ReconcileDeps,
  reconcileOrders,
  type StoredOrders,
  type StoredVersion,
} from '../../../tools/ops/reconcile/reconcile-orders.js';
import { sampleOrder } from '../../fixtures/orders.js';
import { RecordingPublisher } from '../../support/fakes.js';
import { runOpsCaptured } from '../../support/ops.js';

const NOW = 1_714_600_000_000;

/** The partner's answer per id: a raw record, or an error to throw. Unknown ids answer 404. */
class FakePartner implements PartnerApi {
  readonly calls: Array<{ id: Int64; deadline: number }> = [];
  inFlight = 0;
  maxInFlight = 0;
  constructor(
    private readonly answers: Map<Int64, unknown>,
    private readonly journal: string[] = [],
  ) {}

  async getOrderUpdates(): Promise<RawPage> {
    throw new Error('not used by reconciliation');
  }

  async getOrder(id: Int64, options: CallOptions): Promise<unknown> {
    this.calls.push({ id, deadline: options.deadline });
    this.journal.push(`getOrder ${id}`);
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise((resolve) => setTimeout(resolve, 1));
    this.inFlight -= 1;
    const answer = this.answers.has(id)
      ? this.answers.get(id)
      : new PartnerError('not-found', 'order not found');
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

class FakeStoredOrders implements StoredOrders {
  readonly reads: Int64[][] = [];
  constructor(
    readonly items: Map<Int64, StoredVersion>,
    private readonly journal: string[] = [],
  ) {}

  async getVersions(ids: readonly Int64[]): Promise<Map<Int64, StoredVersion>> {
    this.reads.push([...ids]);
    this.journal.push(`getVersions ${ids.join(',')}`);
    return new Map(
      ids.flatMap((id) => (this.items.has(id) ? [[id, this.items.get(id) as StoredVersion]] : [])),
    );
  }

  async sampleIds(limit: number): Promise<Int64[]> {
    return [...this.items.keys()].slice(0, limit);
  }
}

function setup(answers: Array<[Int64, unknown]>, stored: Array<[Int64, StoredVersion]>) {
  const journal: string[] = [];
  const partner = new FakePartner(new Map(answers), journal);
  const storedOrders = new FakeStoredOrders(new Map(stored), journal);
  const publisher = new RecordingPublisher(journal);
  const deps: ReconcileDeps = { partner, stored: storedOrders, publisher, now: () => NOW };
  return { deps, partner, storedOrders, publisher, journal };
}

/** One id per result kind (ids 1..8), plus what the table holds. */
function everyKind() {
  return setup(
    [
      [1, sampleOrder({ id: 1, version: 3 })], // in-sync
      [2, sampleOrder({ id: 2, version: 5, status: 'cancelled', cancelledAt: NOW })], // behind
      [3, sampleOrder({ id: 3, version: 2 })], // ahead
      [4, sampleOrder({ id: 4, version: 1, status: 'placed' })], // missing
      // 5: not-found (unknown to the partner)
      [6, new PartnerError('bad-request', '400', { serverMessage: 'order id out of range' })], // invalid-id
      [7, sampleOrder({ id: 7, total: undefined })], // invalid-record
      [
        8,
        new PartnerError('retry-later', 'GET /v1/orders/8: rate limited (429)', {
          reason: 'rate-limited',
          statusCode: 429,
        }),
      ],
    ],
    [
      [1, { version: 3, status: 'accepted' }],
      [2, { version: 4, status: 'accepted' }],
      [3, { version: 4, status: 'accepted' }],
      [5, { version: 1, status: 'placed' }],
    ],
  );
}

describe('reconcileOrders', () => {
  it('reports every result kind, in the order the ids were given', async () => {
    const { deps, publisher } = everyKind();

    const report = await reconcileOrders(deps, { ids: [1, 2, 3, 4, 5, 6, 7, 8], feedId: 'orders' });

    expect(report.orders[0]).toEqual({
      id: 1,
      result: 'in-sync',
      storedVersion: 3,
      storedStatus: 'accepted',
      partnerVersion: 3,
      partnerStatus: 'accepted',
    });
    expect(
      report.orders.map((entry) => [entry.id, entry.result, entry.storedVersion, entry.partnerVersion]),
    ).toEqual([
      [1, 'in-sync', 3, 3],
      [2, 'behind', 4, 5],
      [3, 'ahead', 4, 2],
      [4, 'missing', undefined, 1],
      [5, 'not-found', undefined, undefined],
      [6, 'invalid-id', undefined, undefined],
      [7, 'invalid-record', undefined, 3],
      [8, 'error', undefined, undefined],
    ]);
    expect(report.orders.map((entry) => entry.detail)).toEqual([
      undefined,
      'stored v4 (accepted), partner v5 (cancelled)',
      expect.any(String),
      'not in the orders table',
      'partner answered 404',
      'partner answered 400: order id out of range',
      expect.stringMatching(/total/),
      expect.stringMatching(/ERR_PARTNER_RETRY_LATER.*429/),
    ]);
    // Each of the eight kinds above counted once.
    expect(report.counts).toEqual(Object.fromEntries(report.orders.map((entry) => [entry.result, 1])));
    // ahead and not-found are reported but need no action; the rest do. Without repair it only reads.
    expect(report.unresolved).toBe(5);
    expect(publisher.published).toEqual([]);
    expect(report.orders.every((entry) => entry.repair === undefined)).toBe(true);
  });

  it('with repair publishes the partner version of behind and missing orders only, as contract messages', async () => {
    const { deps, publisher } = everyKind();

    const report = await reconcileOrders(deps, {
      ids: [1, 2, 3, 4, 5],
      feedId: 'orders',
      repair: true,
      runId: 'run-9',
    });

    expect(publisher.published.map((message) => [message.orderId, message.version])).toEqual([
      [2, 5],
      [4, 1],
    ]);
    const message = parseOrderVersionMessage(publisher.published[0]?.body ?? '');
    expect(message.order).toMatchObject({ id: 2, version: 5, status: 'cancelled' });
    // A repair names its run: origin reconcile, correlation id reconcile:<runId> (body and attribute).
    expect(message.source).toEqual({
      feedId: 'orders',
      pageId: null,
      fetchedAt: new Date(NOW).toISOString(),
      findings: [],
      correlationId: 'reconcile:run-9',
      origin: 'reconcile',
    });
    expect(publisher.published.map((sent) => sent.attributes.correlationId?.StringValue)).toEqual([
      'reconcile:run-9',
      'reconcile:run-9',
    ]);
    expect(report.runId).toBe('run-9');
    expect(report.orders.filter((entry) => entry.repair !== undefined)).toEqual([
      expect.objectContaining({ id: 2, result: 'behind', repair: 'published' }),
      expect.objectContaining({ id: 4, result: 'missing', repair: 'published' }),
    ]);
    expect(report.repairs).toEqual({ published: 2, failed: 0 });
    expect(report.unresolved).toBe(0);
  });

  it('reports a failed publish per order and keeps those orders unresolved', async () => {
    const { deps, publisher } = everyKind();
    publisher.failNext = 1;

    const report = await reconcileOrders(deps, { ids: [2, 4], feedId: 'orders', repair: true });

    expect(report.orders).toEqual([
      expect.objectContaining({
        id: 2,
        repair: 'failed',
        detail: expect.stringMatching(/repair not published/),
      }),
      expect.objectContaining({ id: 4, repair: 'failed' }),
    ]);
    expect(report.repairs).toEqual({ published: 0, failed: 2 });
    expect(report.unresolved).toBe(2);
  });

  it('publishes no repair the consumer could not store (a vendorId too long for the sales index key)', async () => {
    const { deps, publisher } = setup([[7, sampleOrder({ id: 7, vendorId: 'v'.repeat(2045) })]], []);

    const report = await reconcileOrders(deps, { ids: [7], feedId: 'orders', repair: true });

    expect(publisher.published).toEqual([]);
    expect(report.orders).toEqual([
      expect.objectContaining({
        id: 7,
        result: 'missing',
        repair: 'failed',
        detail: expect.stringMatching(/repair not published: vendorId too long: .* 2049 bytes/),
      }),
    ]);
  });

  it('stops calling the partner after a 401 and throws with what was reconciled before', async () => {
    const ids = Array.from({ length: CHUNK_SIZE + 20 }, (_, index) => index + 1);
    const answers: Array<[number, unknown]> = ids.map((id) => [id, sampleOrder({ id, version: 2 })]);
    answers[CHUNK_SIZE + 4] = [CHUNK_SIZE + 5, new PartnerError('auth')];
    const { deps, partner, publisher } = setup(
      answers,
      ids.map((id) => [id, { version: 1, status: 'accepted' }]),
    );

    const error = await reconcileOrders(deps, { ids, feedId: 'orders', repair: true, concurrency: 1 }).catch(
      (caught: unknown) => caught,
    );

    expect(error).toBeInstanceOf(ReconcileAuthError);
    expect((error as ReconcileAuthError).message).toMatch(/401 Unauthorized/);
    expect((error as ReconcileAuthError).cause).toMatchObject({ kind: 'auth' });
    // The first chunk was finished (and repaired); the second stopped at the 401 and published nothing.
    expect((error as ReconcileAuthError).partial.orders).toHaveLength(CHUNK_SIZE);
    expect(partner.calls.map((call) => call.id)).toEqual(ids.slice(0, CHUNK_SIZE + 5));
    expect(publisher.published).toHaveLength(CHUNK_SIZE);
  });

  it('reads the stored versions after the partner answered, in chunks, and skips ids the partner could not serve', async () => {
    const ids = Array.from({ length: 2 * CHUNK_SIZE + 5 }, (_, index) => index + 1);
    const { deps, storedOrders, journal } = setup(
      ids.filter((id) => id !== 3).map((id) => [id, sampleOrder({ id, version: 1 })]),
      [],
    );

    const report = await reconcileOrders(deps, { ids, feedId: 'orders' });

    expect(storedOrders.reads.map((read) => read.length)).toEqual([CHUNK_SIZE - 1, CHUNK_SIZE, 5]);
    expect(storedOrders.reads[0]).not.toContain(3);
    const firstRead = journal.findIndex((line) => line.startsWith('getVersions'));
    expect(journal.slice(0, firstRead).filter((line) => line.startsWith('getOrder'))).toHaveLength(
      CHUNK_SIZE,
    );
    expect(report.counts.missing).toBe(ids.length - 1);
    expect(report.counts['not-found']).toBe(1);
  });

  it('keeps at most `concurrency` calls in flight, each with its own deadline, and checks each id once', async () => {
    const ids = Array.from({ length: 30 }, (_, index) => index + 1);
    const { deps, partner } = setup(
      ids.map((id) => [id, sampleOrder({ id })]),
      [],
    );

    await reconcileOrders(deps, {
      ids: [...ids, 1, 2],
      feedId: 'orders',
      concurrency: 4,
      callTimeoutMs: 5_000,
    });

    expect(partner.maxInFlight).toBe(4);
    expect(partner.calls.map((call) => call.id)).toEqual(ids);
    expect(new Set(partner.calls.map((call) => call.deadline))).toEqual(new Set([NOW + 5_000]));
  });

  it('refuses ids that cannot be sent exactly, without calling the partner', async () => {
    const { deps, partner } = setup([], []);
    const report = await reconcileOrders(deps, {
      ids: [-1, 2 ** 53, 1.5, 2n ** 63n, -5n],
      feedId: 'orders',
    });
    expect(report.orders.map((entry) => entry.result)).toEqual(Array(5).fill('invalid-id'));
    expect(partner.calls).toEqual([]);
  });

  it('reconciles 64-bit ids beyond 2^53 exactly, and repairs one with its exact id', async () => {
    const big = 2n ** 62n + 7n;
    const neighbour = big + 1n; // the same double as `big`: a rounded id would mix the two up
    const { deps, partner, publisher } = setup(
      [
        [big, { ...sampleOrder({ id: 1, version: 5 }), id: big }],
        [neighbour, { ...sampleOrder({ id: 1, version: 2 }), id: neighbour }],
      ],
      [
        [big, { version: 4, status: 'accepted' }],
        [neighbour, { version: 2, status: 'accepted' }],
      ],
    );

    const report = await reconcileOrders(deps, { ids: [big, neighbour], feedId: 'orders', repair: true });

    expect(partner.calls.map((call) => call.id)).toEqual([big, neighbour]);
    expect(report.orders.map((entry) => [entry.id, entry.result])).toEqual([
      [big, 'behind'],
      [neighbour, 'in-sync'],
    ]);
    const repaired = publisher.published.map((message) => parseOrderVersionMessage(message.body));
    expect(repaired.map((message) => message.order.id)).toEqual([big]);
  });

  it('treats a record for another order id, or a malformed body, as not comparable', async () => {
    const { deps } = setup(
      [
        [10, sampleOrder({ id: 11 })],
        [
          12,
          new PartnerError('unreadable', 'GET /v1/orders/12: response is not an Order object', {
            statusCode: 200,
          }),
        ],
      ],
      [[10, { version: 1, status: 'placed' }]],
    );
    const report = await reconcileOrders(deps, { ids: [10, 12], feedId: 'orders', repair: true });
    expect(report.orders).toEqual([
      expect.objectContaining({
        id: 10,
        result: 'invalid-record',
        detail: 'partner returned order 11 for id 10',
      }),
      expect.objectContaining({
        id: 12,
        result: 'error',
        detail: expect.stringMatching(/not an Order object/),
      }),
    ]);
  });

  it('notes a status difference at the same version without calling it out of sync', async () => {
    const { deps } = setup(
      [[1, sampleOrder({ id: 1, version: 3 })]],
      [[1, { version: 3, status: 'placed' }]],
    );
    const report = await reconcileOrders(deps, { ids: [1], feedId: 'orders' });
    expect(report.orders[0]).toMatchObject({
      result: 'in-sync',
      detail: 'same version, but status differs: stored placed, partner accepted',
    });
  });

  it('returns an empty report for no ids, naming each run with its own id when none is given', async () => {
    const { deps } = setup([], []);
    const first = await reconcileOrders(deps, { ids: [], feedId: 'orders' });
    const second = await reconcileOrders(deps, { ids: [], feedId: 'orders' });
    expect(first).toMatchObject({ orders: [], unresolved: 0 });
    expect(first.runId).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.runId).not.toBe(first.runId);
  });
});

describe('npm run ops -- reconcile', () => {
  it.each([
    [['--idz', '1'], "Unknown option '--idz'"],
    [['--ids', '1', '--sample', '5'], '--ids and --sample cannot be combined'],
    [['--ids', '1,x'], '--ids: "x" is not an order id'],
    [['--ids', '9223372036854775808'], 'is not an order id'],
    [['--sample', '0'], '--sample must be an integer from 1 to 10000'],
    [['--concurrency', '17'], '--concurrency must be an integer from 1 to 16'],
    [['--orders-table', 't', '--repair'], 'without --stack-name, --api-url and --queue-url are required'],
    [['--token-file', 'a', '--token-parameter', 'b'], 'cannot be combined'],
  ])('exits 2 with the usage on stderr for %j', async (argv, message) => {
    const ran = await runOpsCaptured(['reconcile', ...argv]);

    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain(message);
    expect(ran.stderr).toContain('Usage: npm run ops -- reconcile');
  });

  it("takes the partner's URL and token from the poller of --feed-id on a stack of several feeds, else the first", () => {
    const feeds = { FeedPollers: JSON.stringify({ eu: 'poller-eu', uk: 'poller-uk' }) };

    expect(pollerOf(feeds, 'uk')).toBe('poller-uk');
    expect(pollerOf(feeds, undefined)).toBe('poller-eu');
    expect(pollerOf({ ...feeds, PollerFunctionName: 'poller' }, 'anything')).toBe('poller');
    // Refused rather than another feed's poller.
    expect(() => pollerOf(feeds, 'us')).toThrow('--feed-id us: the stack has no such feed (feeds: eu, uk)');
  });
});
