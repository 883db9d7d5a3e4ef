// What the chaos run ended with, against what the partner simulator says a correct ingester ends with.
//   lost   an expected order missing from the table, or stored at a lower version than the latest
//   wrong  stored at the expected version but with another status, vendor or total; stored at a version
//          higher than the partner ever served; an order the partner never served; a ledger row that
//          differs from the expected sales (or exists on one side only)
// Pure functions over plain data (the AWS reads are in run.ts), so they are unit-tested on their own.
import type { Int64 } from '../../functions/core/model/int64.js';
import type { ExpectedOrder, ExpectedSale } from '../../tools/simulator/index.js';

export interface OrderFacts {
  version: number;
  status: string;
  vendorId: string;
  total: { amount: number; currency: string };
}

export type OrderProblem = 'missing' | 'older' | 'content' | 'newer-than-served' | 'never-served';

export interface OrderIssue {
  orderId: number;
  problem: OrderProblem;
  stored?: OrderFacts;
  expected?: OrderFacts;
}

export interface LedgerRow {
  vendorId: string;
  currency: string;
  count: number;
  amount: Int64;
}

export interface LedgerDifference {
  vendorId: string;
  currency: string;
  expected?: { count: number; amount: number };
  actual?: { count: number; amount: Int64 };
}

export interface OrdersVerdict {
  lost: OrderIssue[];
  wrong: OrderIssue[];
  storedOrders: number;
}

/** The facts compared, from a stored item (as unmarshalled) or undefined when it has no version. */
export function factsOf(item: Record<string, unknown>): OrderFacts | undefined {
  const total = item.total as { amount?: unknown; currency?: unknown } | undefined;
  if (typeof item.version !== 'number') return undefined;
  return {
    version: item.version,
    status: String(item.status),
    vendorId: String(item.vendorId),
    total: { amount: Number(total?.amount), currency: String(total?.currency) },
  };
}

function expectedFacts(order: ExpectedOrder): OrderFacts {
  return {
    version: order.version,
    status: order.status,
    vendorId: order.vendorId,
    total: { amount: order.total.amount, currency: order.total.currency },
  };
}

export function compareOrders(
  expected: ReadonlyMap<number, ExpectedOrder>,
  stored: ReadonlyMap<Int64, Record<string, unknown>>,
): OrdersVerdict {
  const lost: OrderIssue[] = [];
  const wrong: OrderIssue[] = [];
  for (const [orderId, order] of expected) {
    const want = expectedFacts(order);
    const item = stored.get(orderId);
    const got = item ? factsOf(item) : undefined;
    if (!got) {
      lost.push({ orderId, problem: 'missing', expected: want });
    } else if (got.version < want.version) {
      lost.push({ orderId, problem: 'older', stored: got, expected: want });
    } else if (got.version > want.version) {
      wrong.push({ orderId, problem: 'newer-than-served', stored: got, expected: want });
    } else if (
      got.status !== want.status ||
      got.vendorId !== want.vendorId ||
      got.total.amount !== want.total.amount ||
      got.total.currency !== want.total.currency
    ) {
      wrong.push({ orderId, problem: 'content', stored: got, expected: want });
    }
  }
  for (const [storedId, item] of stored) {
    // The simulator's ids are safe integers: a bigint id was never served.
    const orderId = Number(storedId);
    if (typeof storedId === 'number' && expected.has(storedId)) continue;
    const got = factsOf(item);
    wrong.push({ orderId, problem: 'never-served', ...(got ? { stored: got } : {}) });
  }
  const byId = (a: OrderIssue, b: OrderIssue) => a.orderId - b.orderId;
  return { lost: lost.sort(byId), wrong: wrong.sort(byId), storedOrders: stored.size };
}

/** Every (vendor, currency) whose count or amount differs, or that exists on one side only. */
export function compareLedger(
  expected: readonly ExpectedSale[],
  actual: readonly LedgerRow[],
): LedgerDifference[] {
  const key = (row: { vendorId: string; currency: string }) => `${row.vendorId}#${row.currency}`;
  const want = new Map(expected.map((row) => [key(row), row]));
  const got = new Map(actual.map((row) => [key(row), row]));
  const differences: LedgerDifference[] = [];
  for (const name of [...new Set([...want.keys(), ...got.keys()])].sort()) {
    const w = want.get(name);
    const g = got.get(name);
    if (w && g && w.count === g.count && BigInt(w.amount) === BigInt(g.amount)) continue;
    const row = (w ?? g) as LedgerRow;
    differences.push({
      vendorId: row.vendorId,
      currency: row.currency,
      ...(w ? { expected: { count: w.count, amount: w.amount } } : {}),
      ...(g ? { actual: { count: g.count, amount: g.amount } } : {}),
    });
  }
  return differences;
}
