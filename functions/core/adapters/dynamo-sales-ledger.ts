// Reads the sales ledger: the sparse `salesByVendor` index holds exactly the orders whose latest
// applied version is accepted, so summing it per (vendor, currency) gives count and amount of sales.
// Index reads are eventually consistent on AWS: a figure read right after a write can trail it briefly.

import { type DynamoDBClient, paginateQuery, paginateScan } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { type SalesTotal, saleKeyOf } from '../apply/sale.js';
import { int64FromText, sumInt64 } from '../model/int64.js';
import { ORDERS_TABLE_SCHEMA } from './table-schemas.js';

const SALES_INDEX_NAME = ORDERS_TABLE_SCHEMA.salesIndex.name;

export type { SalesTotal };

/** Every (vendor, currency) with at least one sale, sorted by vendorId then currency. */
export async function readSalesLedger(client: DynamoDBClient, tableName: string): Promise<SalesTotal[]> {
  const totals = new Map<string, SalesTotal>();
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
      const saleKey = String(raw.saleKey?.S);
      const total = totals.get(saleKey) ?? {
        vendorId,
        currency: saleKey.slice(vendorId.length + 1),
        count: 0,
        amount: 0,
      };
      total.count += 1;
      total.amount = sumInt64([total.amount, int64FromText(raw.saleAmount?.N ?? '0')]);
      totals.set(saleKey, total);
    }
  }
  return [...totals.values()].sort(
    (a, b) => a.vendorId.localeCompare(b.vendorId) || a.currency.localeCompare(b.currency),
  );
}

/** One vendor's sales in one currency, by querying the index partition. */
export async function readVendorSales(
  client: DynamoDBClient,
  tableName: string,
  vendorId: string,
  currency: string,
): Promise<SalesTotal> {
  const total: SalesTotal = { vendorId, currency, count: 0, amount: 0 };
  const pages = paginateQuery(
    { client },
    {
      TableName: tableName,
      IndexName: SALES_INDEX_NAME,
      KeyConditionExpression: 'saleKey = :key',
      ExpressionAttributeValues: marshall({ ':key': saleKeyOf(vendorId, currency) }),
      ProjectionExpression: 'saleAmount',
    },
  );
  for await (const page of pages) {
    for (const raw of page.Items ?? []) {
      total.count += 1;
      total.amount = sumInt64([total.amount, int64FromText(raw.saleAmount?.N ?? '0')]);
    }
  }
  return total;
}
