// Reads the sales ledger: the sparse `salesByVendor` index holds exactly the orders whose latest
// applied version is accepted, so summing it per (vendor, currency) by the sales rule (salesTotals)
// gives count and amount of sales. Index reads are eventually consistent on AWS: a figure read right
// after a write can trail it briefly.

import { type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { ORDERS_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import { saleOf } from '../../functions/core/apply/sale.js';
import { type Int64, int64FromText, sumInt64 } from '../../functions/core/model/int64.js';
import type { Order } from '../../functions/core/model/types.js';

const SALES_INDEX_NAME = ORDERS_TABLE_SCHEMA.salesIndex.name;

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

/** Every (vendor, currency) with at least one sale, sorted by vendorId then currency. */
export async function readSalesLedger(client: DynamoDBClient, tableName: string): Promise<SalesTotal[]> {
  const sales = [];
  const pages = paginateScan(
    { client },
    {
      TableName: tableName,
      IndexName: SALES_INDEX_NAME,
      ProjectionExpression: 'saleKey, saleAmount, vendorId',
    },
  );
  for await (const page of pages) {
    for (const raw of page.Items ?? []) {
      const vendorId = String(raw.vendorId?.S);
      const currency = String(raw.saleKey?.S).slice(vendorId.length + 1);
      const amount = int64FromText(raw.saleAmount?.N ?? '0');
      // Every entry of the index is a sale: the sales rule counts it as the accepted order it is.
      sales.push({ status: 'accepted' as const, vendorId, total: { currency, amount } });
    }
  }
  return salesTotals(sales);
}
