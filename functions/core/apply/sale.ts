// The sales ledger rule (spec section 3): an order is a sale while its latest applied version is
// `accepted`; cancelling reverses it, and rejected or placed-only orders are never sales. The ledger
// entry lives on the order item itself and is written by the same version-guarded put, so it can
// never disagree with the order: duplicates, reordering, replays and crashes cannot double-count it.
import { type Int64, sumInt64 } from '../model/int64.js';
import type { Order } from '../model/types.js';

export interface SaleEntry {
  /** `<vendorId>#<currency>`: the ledger's grouping key (a sparse index over accepted orders). */
  saleKey: string;
  vendorId: string;
  currency: string;
  amount: Int64;
}

export function saleOf(order: Pick<Order, 'status' | 'vendorId' | 'total'>): SaleEntry | undefined {
  if (order.status !== 'accepted') return undefined;
  return {
    saleKey: saleKeyOf(order.vendorId, order.total.currency),
    vendorId: order.vendorId,
    currency: order.total.currency,
    amount: order.total.amount,
  };
}

export function saleKeyOf(vendorId: string, currency: string): string {
  return `${vendorId}#${currency}`;
}

export type SalesChange = 'counted' | 'reversed' | 'amount-changed' | 'moved' | 'none';

/** How applying a version changed the ledger, for metrics and logs. */
export function salesChange(before: SaleEntry | undefined, after: SaleEntry | undefined): SalesChange {
  if (!before && !after) return 'none';
  if (!before) return 'counted';
  if (!after) return 'reversed';
  if (before.saleKey !== after.saleKey) return 'moved';
  return before.amount === after.amount ? 'none' : 'amount-changed';
}

export interface SalesTotal {
  vendorId: string;
  currency: string;
  count: number;
  /** Exact: a bigint where a number would round (see int64.ts). */
  amount: Int64;
}

/** The ledger as the sales rule defines it over a set of latest order versions, sorted by vendor and currency. */
export function salesTotals(orders: Iterable<Pick<Order, 'status' | 'vendorId' | 'total'>>): SalesTotal[] {
  const totals = new Map<string, SalesTotal>();
  for (const order of orders) {
    const sale = saleOf(order);
    if (!sale) continue;
    const total = totals.get(sale.saleKey) ?? {
      vendorId: sale.vendorId,
      currency: sale.currency,
      count: 0,
      amount: 0,
    };
    total.count += 1;
    total.amount = sumInt64([total.amount, sale.amount]);
    totals.set(sale.saleKey, total);
  }
  return [...totals.values()].sort(
    (a, b) => a.vendorId.localeCompare(b.vendorId) || a.currency.localeCompare(b.currency),
  );
}
