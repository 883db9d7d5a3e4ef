// What a correct ingester ends with after each scenario, written once for the simulator's tests, the
// pipeline tests, local mode (`npm start -- --scenario X`) and `npm run verify`:
// - SCENARIO_EXPECTATIONS, derived from the scenario data (all polls, default pageSize 10), exact: `orders`,
//   the highest version of each order (by id); `sales`, the orders whose highest version is `accepted`, per
//   (vendorId, currency); `polls`, the polls (runs ending on hasMore false) it takes to see everything;
//   `versions`, entries served in total. test-invalid-token serves nothing; test-expired-page-id serves its
//   one page (5 versions) then 404s the cursor, so its expectation holds for any pageSize ≥ 5. The hostile
//   scenarios (hostile.ts) add `quarantined` (one object per distinct refused record, a flood's included),
//   `stop` (the documented poll outcome it stops at) and `stored` (the versions the history keeps).
// - SPEC_CHECKS, each spec scenario (section 4) in the spec's own words rather than our data, since verify
//   applies them to the partner's real test environment too, whose ids and amounts are illustrative.

import { sumInt64 } from '../../../functions/core/model/int64.js';
import type { Order, OrderItem } from '../../../functions/core/model/types.js';
import { type SalesTotal, salesTotals } from '../../store/sales-ledger.js';
import { expectedStateOf } from '../generated-feed.js';
import type { AnyScenarioId, ExpectedOrder, ExpectedSale, ScenarioId } from '../types.js';
import { ALL_SCENARIO_IDS, SCENARIO_IDS } from '../types.js';
import { SCENARIOS } from './index.js';

export interface ScenarioExpectation {
  orders: ExpectedOrder[];
  sales: ExpectedSale[];
  polls: number;
  versions: number;
  quarantined?: number;
  stop?: string;
  stored?: number;
}

function expectationOf(id: AnyScenarioId): ScenarioExpectation {
  const {
    polls,
    quirk,
    refusedOrderIds = [],
    unreadableOrderIds = [],
    junkRecords = 0,
    stop,
  } = SCENARIOS[id];
  const served = polls.flat().map((entry) => entry.order);
  const kept = served.filter((order) => !refusedOrderIds.includes(order.id));
  const state = expectedStateOf(kept.filter((order) => !unreadableOrderIds.includes(order.id)));
  const expectation: ScenarioExpectation = {
    orders: [...state.orders.values()].sort((a, b) => a.id - b.id),
    sales: state.sales,
    polls: polls.length,
    versions: served.length,
  };
  // The spec's scenarios keep their expectation as it always was.
  if ((SCENARIO_IDS as readonly string[]).includes(id)) return expectation;
  const junk = quirk?.kind === 'record-flood' ? quirk.records.length : 0;
  return {
    ...expectation,
    quarantined: served.length - kept.length + junk + junkRecords,
    ...(stop === undefined ? {} : { stop }),
    stored: state.distinctVersions,
  };
}

/** Each computed when first read: some scenarios' data (the named faults') is built only then. */
export const SCENARIO_EXPECTATIONS: Readonly<Record<AnyScenarioId, ScenarioExpectation>> =
  Object.defineProperties(
    {},
    Object.fromEntries(
      ALL_SCENARIO_IDS.map((id) => {
        let expectation: ScenarioExpectation | undefined;
        return [id, { enumerable: true, get: () => (expectation ??= expectationOf(id)) }];
      }),
    ),
  ) as Record<AnyScenarioId, ScenarioExpectation>;

/** What one run of a scenario through the pipeline left behind (local mode's summary and orders table). */
export interface ScenarioRun {
  /** Local mode's exit code (3: stopped on an authentication failure). */
  exitCode: number;
  outcome: string | undefined;
  counters: RunCounters | undefined;
  sales: SalesTotal[];
  deadLettered: number;
  quarantined: string[];
  /** The orders table: the latest applied version of each order. */
  orders: Order[];
}

export interface RunCounters {
  polls: number;
  pages: number;
  versionsPublished: number;
  applied: number;
  stale: number;
  partnerRetries: number;
  rateLimitWaits: number;
  cursorRecoveries: number;
}

/** The problems of a run, [] when it is what the spec says. */
export type ScenarioCheck = (run: ScenarioRun) => string[];

/** Every order version the API served ends up applied or stale; nothing rejected or dead-lettered. */
function nothingLost(run: ScenarioRun): string[] {
  const problems: string[] = [];
  if (run.exitCode !== 0) problems.push(`local mode exited ${run.exitCode} (${run.outcome ?? 'no summary'})`);
  const counters = run.counters;
  if (!counters) return [...problems, 'no summary counters'];
  if (counters.applied + counters.stale !== counters.versionsPublished) {
    problems.push(
      `versions published ${counters.versionsPublished} != applied ${counters.applied} + stale ${counters.stale}`,
    );
  }
  if (run.quarantined.length > 0) problems.push(`${run.quarantined.length} record(s) quarantined`);
  if (run.deadLettered > 0) problems.push(`${run.deadLettered} message(s) dead-lettered`);
  return problems;
}

/** Sales must be exactly the orders whose stored version is accepted, per (vendor, currency). */
function ledgerMatchesAcceptedOrders(run: ScenarioRun): string[] {
  const expected = new Map(salesTotals(run.orders).map((row) => [`${row.vendorId}#${row.currency}`, row]));
  const actual = new Map(run.sales.map((row) => [`${row.vendorId}#${row.currency}`, row]));
  const problems: string[] = [];
  for (const [key, row] of expected) {
    const got = actual.get(key);
    if (!got || got.count !== row.count || got.amount !== row.amount) {
      problems.push(
        `ledger ${key}: expected ${row.count} sale(s) / ${row.amount}, got ${got ? `${got.count} / ${got.amount}` : 'none'}`,
      );
    }
  }
  for (const key of actual.keys())
    if (!expected.has(key)) problems.push(`ledger has ${key} but no accepted order`);
  return problems;
}

function paymentsSumToTotal(order: Order): boolean {
  return (
    BigInt(sumInt64(order.customerPayments.map((payment) => payment.payment.amount))) ===
    BigInt(order.total.amount)
  );
}

function itemsOf(run: ScenarioRun): OrderItem[] {
  return run.orders.flatMap((order) => order.items);
}

function problemUnless(condition: boolean, problem: string): string[] {
  return condition ? [] : [problem];
}

/** A healthy run that stored at least one order. */
const dataScenario =
  (...checks: ScenarioCheck[]): ScenarioCheck =>
  (run) => [
    ...nothingLost(run),
    ...ledgerMatchesAcceptedOrders(run),
    ...problemUnless(run.orders.length > 0, 'no orders stored'),
    ...checks.flatMap((check) => check(run)),
  ];

export const SPEC_CHECKS: Readonly<Record<ScenarioId, { expectation: string; check: ScenarioCheck }>> = {
  'test-authentication': {
    expectation: 'a normal stream is read with the token in the Authorization header',
    check: dataScenario(),
  },
  'test-invalid-token': {
    expectation: 'every request is 401: the run stops with an authentication failure and stores nothing',
    check: (run) => [
      ...problemUnless(
        run.exitCode === 3 && run.outcome === 'auth-failed',
        `expected auth failure (exit 3), got exit ${run.exitCode} (${run.outcome})`,
      ),
      ...problemUnless(run.orders.length === 0, `${run.orders.length} order(s) stored`),
    ],
  },
  'test-pagination': {
    expectation: 'a large multi-page backlog is read to the end through the cursor',
    check: dataScenario((run) =>
      problemUnless((run.counters?.pages ?? 0) > 2, `only ${run.counters?.pages} page(s) read`),
    ),
  },
  'test-rate-limit': {
    expectation: 'a 429 with Retry-After is waited out and the same request then succeeds',
    check: dataScenario((run) =>
      problemUnless(
        (run.counters?.rateLimitWaits ?? 0) >= 1,
        'no rate-limit wait was observed (expected a 429)',
      ),
    ),
  },
  'test-transient-error': {
    expectation: 'a transient 5xx is retried and the same request then succeeds',
    check: dataScenario((run) =>
      problemUnless((run.counters?.partnerRetries ?? 0) >= 1, 'no retry was observed (expected a 5xx)'),
    ),
  },
  'test-expired-page-id': {
    expectation: 'the expired cursor (404 pageId not found) is recovered by restarting without pageId',
    check: dataScenario((run) =>
      problemUnless(
        (run.counters?.cursorRecoveries ?? 0) >= 1,
        'no cursor recovery was observed (expected a 404)',
      ),
    ),
  },
  'test-empty-stream': {
    expectation: 'an empty stream leaves nothing stored and the run ends cleanly',
    check: (run) => [
      ...nothingLost(run),
      ...problemUnless(run.orders.length === 0, `${run.orders.length} order(s) stored`),
      ...problemUnless(run.counters?.versionsPublished === 0, 'versions were published'),
    ],
  },
  'test-order-lifecycle': {
    expectation:
      'placed → accepted → cancelled over three polls: the sale is counted then reversed; only the accepted order is a sale',
    check: dataScenario(
      (run) => problemUnless((run.counters?.polls ?? 0) >= 3, `only ${run.counters?.polls} poll(s)`),
      (run) => {
        const byStatus = (status: string) => run.orders.filter((order) => order.status === status);
        const cancelled = byStatus('cancelled');
        return [
          ...problemUnless(cancelled.length === 1, `expected 1 cancelled order, got ${cancelled.length}`),
          ...problemUnless(
            cancelled.every((order) => order.acceptedAt !== undefined && order.cancelledAt !== undefined),
            'the cancelled order lacks acceptedAt/cancelledAt (it was accepted before)',
          ),
          ...problemUnless(byStatus('rejected').length === 1, 'expected 1 rejected order'),
          ...problemUnless(byStatus('accepted').length === 1, 'expected 1 accepted order'),
          ...problemUnless(byStatus('placed').length === 1, 'expected 1 placed-only order'),
          ...problemUnless(
            run.sales.reduce((sum, row) => sum + row.count, 0) === 1,
            'expected exactly one sale (the accepted order)',
          ),
        ];
      },
    ),
  },
  'test-versioning': {
    expectation: 'four versions over three polls: v4 (accepted, delivered) is kept with its money',
    check: dataScenario((run) => {
      const order = run.orders[0];
      return [
        ...problemUnless(run.orders.length === 1, `expected 1 order, got ${run.orders.length}`),
        ...problemUnless(order?.version === 4, `kept version ${order?.version}, expected 4`),
        ...problemUnless(
          order?.status === 'accepted' && order.deliveredAt !== undefined,
          'v4 is not accepted/delivered',
        ),
      ];
    }),
  },
  'test-out-of-order-versions': {
    expectation: 'v2 (accepted) arrives before v1 (placed): the higher version is kept',
    check: dataScenario((run) =>
      problemUnless(
        run.orders.length === 1 && run.orders[0]?.version === 2 && run.orders[0]?.status === 'accepted',
        `expected one order at v2 accepted, got ${run.orders.map((order) => `v${order.version} ${order.status}`).join(', ')}`,
      ),
    ),
  },
  'test-items-and-options': {
    expectation:
      'a customised product with a surcharge option, an offer line, barcodes, an item short-fulfilled',
    check: dataScenario((run) => {
      const items = itemsOf(run);
      return [
        ...problemUnless(
          items.some((item) =>
            item.optionCategories?.some((category) =>
              category.selectedOptions.some((option) => option.optionPrice),
            ),
          ),
          'no option with a surcharge',
        ),
        ...problemUnless(
          items.some((item) => item.type === 'offer' && item.price.amount < 0),
          'no offer line with a negative price',
        ),
        ...problemUnless(
          items.some((item) => item.barcode !== undefined),
          'no barcode',
        ),
        ...problemUnless(
          items.some((item) => item.quantityFulfilled < item.quantityOrdered),
          'no short-fulfilled item in the kept version',
        ),
      ];
    }),
  },
  'test-substitutions': {
    expectation:
      'out-of-stock originals (fulfilled 0) replaced by cross-linked substitutes, one-to-one and many-to-one',
    check: dataScenario((run) => {
      const items = itemsOf(run);
      const originals = items.filter((item) => item.substitutionDetails?.substitutedBy?.length);
      const substitutes = items.filter((item) => item.substitutionDetails?.substitutedFor?.length);
      return [
        ...problemUnless(
          originals.length > 0 && originals.every((item) => item.quantityFulfilled === 0),
          'originals missing or still fulfilled',
        ),
        ...problemUnless(
          substitutes.length > 0 &&
            substitutes.every((item) => item.quantityOrdered === 0 && item.quantityFulfilled > 0),
          'substitutes missing or with wrong quantities',
        ),
        ...problemUnless(
          substitutes.some((item) => (item.substitutionDetails?.substitutedFor?.length ?? 0) >= 2),
          'no many-to-one substitution',
        ),
      ];
    }),
  },
  'test-price-adjustments': {
    expectation: 'a substitution by a dearer item plus a linked negative adjustment restoring the price',
    check: dataScenario((run) => {
      const items = itemsOf(run);
      const adjustments = items.filter((item) => item.type === 'adjustment');
      return [
        ...problemUnless(adjustments.length > 0, 'no adjustment item'),
        ...problemUnless(
          adjustments.every(
            (adjustment) =>
              adjustment.price.amount < 0 &&
              (adjustment.priceAdjustmentDetails?.itemsAdjusted ?? []).some((id) =>
                items.some(
                  (item) =>
                    item.id === id && item.priceAdjustmentDetails?.relatedPriceAdjustment === adjustment.id,
                ),
              ),
          ),
          'adjustment not negative or not linked both ways',
        ),
      ];
    }),
  },
  'test-vouchers': {
    expectation:
      'a vendor-funded voucher item and a platform voucher payment alongside cash; payments sum to total',
    check: dataScenario((run) => {
      const order = run.orders[0];
      return [
        ...problemUnless(
          itemsOf(run).some((item) => item.type === 'voucher' && item.price.amount < 0),
          'no negative voucher item',
        ),
        ...problemUnless(
          order?.customerPayments.some(
            (payment) => payment.type === 'voucher' && payment.collectedBy === 'platform',
          ) ?? false,
          'no platform voucher payment',
        ),
        ...problemUnless(
          order?.customerPayments.some((payment) => payment.type === 'cash') ?? false,
          'no cash payment',
        ),
        ...problemUnless(run.orders.every(paymentsSumToTotal), 'payments do not sum to total'),
      ];
    }),
  },
  'test-payments': {
    expectation:
      'two orders with split payments, each with deliveryFee and serviceFee; payments sum to total',
    check: dataScenario((run) => [
      ...problemUnless(run.orders.length === 2, `expected 2 orders, got ${run.orders.length}`),
      ...problemUnless(
        run.orders.every((order) => order.deliveryFee !== undefined),
        'an order lacks deliveryFee',
      ),
      ...problemUnless(run.orders.every(paymentsSumToTotal), 'payments do not sum to total'),
      ...problemUnless(
        run.orders.every((order) => order.customerPayments.some((payment) => payment.type === 'voucher')),
        'an order lacks its platform voucher payment',
      ),
    ]),
  },
  'test-delivery': {
    expectation: 'a collection order, a courier_partner delivery with deliveredAt, a vendor delivery without',
    check: dataScenario((run) => [
      ...problemUnless(
        run.orders.some((order) => order.type === 'collection'),
        'no collection order',
      ),
      ...problemUnless(
        run.orders.some(
          (order) => order.deliveryProvider === 'courier_partner' && order.deliveredAt !== undefined,
        ),
        'no courier_partner delivery with deliveredAt',
      ),
      ...problemUnless(
        run.orders.some((order) => order.deliveryProvider === 'vendor' && order.deliveredAt === undefined),
        'no vendor delivery without deliveredAt',
      ),
    ]),
  },
  'test-multi-location': {
    expectation: 'two orders from two vendor locations, kept apart by vendorId',
    check: dataScenario((run) =>
      problemUnless(
        new Set(run.orders.map((order) => order.vendorId)).size === 2,
        'orders are not from two vendors',
      ),
    ),
  },
};
