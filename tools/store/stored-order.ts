// The way back from an orders table item or an order history item (functions/core/adapters/stored-order-item.ts
// writes both) to the order version it holds: what backfill republishes and `ops history` compares; and the
// orders table scanned whole (local mode, verify, chaos and the tests compare it with what was served).
import { gunzipSync } from 'node:zlib';
import { type AttributeValue, type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import { type Int64, isInt64, parseJsonExact } from '../../functions/core/model/int64.js';
import type { Finding, Order } from '../../functions/core/model/types.js';

/**
 * What storedOrderItem adds to the order's own attributes, and what a history item adds to those (its sort
 * key `version` is the order's own): the way back leaves them out.
 */
const STORAGE_ATTRIBUTES = new Set([
  'orderId',
  'saleKey',
  'saleAmount',
  'findingCodes',
  'correlationId',
  'itemsGzip',
  'itemsEncoding',
  'fetchedAt',
  'storedAt',
  'feedId',
  'expiresAt',
  'arrivedAfterVersion',
]);

export class UnreadableItemError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableItemError';
  }
}

/**
 * The way back from storedOrderItem (functions/core/adapters/stored-order-item.ts): the order version an orders table item holds, exactly (int64 as stored), with its items decompressed
 * when the item was too large to store them plain; findings come back as their codes.
 */
export function orderOfStoredItem(raw: Record<string, AttributeValue>): {
  order: Order;
  findings: Finding[];
} {
  const item = unmarshallExact(raw);
  const order: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) if (!STORAGE_ATTRIBUTES.has(name)) order[name] = value;
  if (item.itemsEncoding !== undefined) {
    if (item.itemsEncoding !== 'gzip+json' || !(item.itemsGzip instanceof Uint8Array)) {
      throw new UnreadableItemError(
        `order ${String(item.orderId)}: items stored as ${String(item.itemsEncoding)}`,
      );
    }
    order.items = parseJsonExact(gunzipSync(item.itemsGzip).toString('utf8'));
  }
  if (!isInt64(order.id) || !isInt64(order.version) || !Array.isArray(order.items)) {
    throw new UnreadableItemError(`order ${String(item.orderId)}: the item has no id, version or items`);
  }
  const codes = item.findingCodes instanceof Set ? [...item.findingCodes].map(String).sort() : [];
  return {
    order: order as unknown as Order,
    // The detail was logged when the version was ingested; the item keeps only the codes.
    findings: codes.map((code) => ({ code, detail: 'recorded when this version was ingested' })),
  };
}

/** Every item of the orders table by order id (a consistent scan). */
export async function scanOrders(
  aws: { dynamo: DynamoDBClient },
  table: string,
): Promise<Map<Int64, Record<string, unknown>>> {
  // Keyed by the exact id (a bigint beyond 2^53, see int64.ts).
  const orders = new Map<Int64, Record<string, unknown>>();
  for await (const page of paginateScan({ client: aws.dynamo }, { TableName: table, ConsistentRead: true })) {
    for (const raw of page.Items ?? []) {
      const item = unmarshallExact(raw);
      orders.set(item.orderId as Int64, item);
    }
  }
  return orders;
}
