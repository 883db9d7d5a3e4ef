// Use case: apply one order version (a message the public kit's parser validated) to the orders table and
// its sales ledger.
//   1. derive the version's sale entry (a sale iff status is accepted)
//   2. one conditional put, the kit's (applyIfNewer), of the orders table item (stored-order-item.ts):
//      order + sale entry + finding codes + correlation id, only if newer than what is stored
//   3. report applied (with the ledger change, from the item it replaced) or stale (an equal or lower
//      version: a counted no-op)
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { saleOfStoredItem, storedOrderItem } from '../adapters/stored-order-item.js';
import { applyIfNewer } from '../contract/consumer.js';
import type { OrderVersionMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import { type SalesChange, saleOf, salesChange } from './sale.js';

/** The orders table the consumer writes to. */
export interface OrdersTable {
  client: DynamoDBClient;
  tableName: string;
}

export type ApplyResult =
  | { outcome: 'applied'; orderId: Int64; version: Int64; salesChange: SalesChange }
  | { outcome: 'stale'; orderId: Int64; version: Int64; storedVersion: Int64 };

export async function applyOrderVersion(
  orders: OrdersTable,
  message: OrderVersionMessage,
): Promise<ApplyResult> {
  const { order, source } = message;
  const sale = saleOf(order);
  const result = await applyIfNewer({
    client: orders.client,
    tableName: orders.tableName,
    message,
    item: () =>
      storedOrderItem(order, sale, {
        findingCodes: [...new Set(source.findings.map((finding) => finding.code))],
        ...(source.correlationId === undefined ? {} : { correlationId: source.correlationId }),
      }).attributes,
  });
  const { id: orderId, version } = order;
  if (result.outcome === 'stale') {
    return { outcome: 'stale', orderId, version, storedVersion: result.storedVersion };
  }
  const before = result.replaced === undefined ? undefined : saleOfStoredItem(result.replaced);
  return { outcome: 'applied', orderId, version, salesChange: salesChange(before, sale) };
}
