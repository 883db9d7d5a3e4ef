// The sales ledger rule (spec section 3): an order is a sale while its latest applied version is `accepted`.
import type { Int64 } from '../model/int64.js';
import type { Order } from '../model/types.js';

export interface SaleEntry {
  saleKey: string;
  vendorId: string;
  currency: string;
  amount: Int64;
}

/** The `salesByVendor` index's partition key. */
export function saleKeyOf(vendorId: string, currency: string): string {
  return `${vendorId}#${currency}`;
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

export type SalesChange = 'counted' | 'reversed' | 'amount-changed' | 'moved' | 'none';

export function salesChange(before: SaleEntry | undefined, after: SaleEntry | undefined): SalesChange {
  if (!before && !after) return 'none';
  if (!before) return 'counted';
  if (!after) return 'reversed';
  if (before.saleKey !== after.saleKey) return 'moved';
  return before.amount === after.amount ? 'none' : 'amount-changed';
}
