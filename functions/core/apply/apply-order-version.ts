// Use case: apply one order version (a message the public kit's parser validated) to the orders table and
// its sales ledger, and keep it in the order history.
//   1. derive the version's sale entry (a sale iff status is accepted)
//   2. one conditional put, the kit's (applyIfNewer), of the orders table item (stored-order-item.ts):
//      order + sale entry + finding codes + correlation id, only if newer than what is stored
//   3. when history is on: one conditional put of the same item into the history table under
//      (orderId, version), only if that version is not there yet (the first stored content is kept), marked
//      `arrivedAfterVersion` when step 2 found a higher version stored
//   4. report applied (with the ledger change, from the item it replaced) or stale (an equal or lower
//      version: a counted no-op for the orders table)
// The history write comes second so it can say whether the version arrived out of order without a read. A
// crash between the two writes leaves the version applied but not yet in the history: the redelivery finds
// it stale (equal) in the orders table and writes the history entry then.
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { saleOfStoredItem, storedOrderItem } from '../adapters/stored-order-item.js';
import { applyIfNewer } from '../contract/consumer.js';
import type { OrderVersionMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import { type SalesChange, saleOf, salesChange } from './sale.js';

/** The history table (same client as the orders table). */
export interface HistoryTable {
  tableName: string;
  /** Days an entry is kept (TTL attribute `expiresAt`); 0: forever (no `expiresAt`). */
  retentionDays: number;
}

/** The orders table the consumer writes to, and the history table when history is on. */
export interface OrdersTable {
  client: DynamoDBClient;
  tableName: string;
  history?: HistoryTable;
}

export type ApplyResult =
  | {
      outcome: 'applied';
      orderId: Int64;
      version: Int64;
      salesChange: SalesChange;
      /** The version this write replaced; absent for a new order. */
      replacedVersion?: Int64;
    }
  | { outcome: 'stale'; orderId: Int64; version: Int64; storedVersion: Int64 };

export async function applyOrderVersion(
  orders: OrdersTable,
  message: OrderVersionMessage,
): Promise<ApplyResult> {
  const { order } = message;
  const sale = saleOf(order);
  const attributes = storedAttributes(message);
  const result = await applyIfNewer({
    client: orders.client,
    tableName: orders.tableName,
    message,
    item: () => attributes,
  });
  const { id: orderId, version } = order;
  if (orders.history) {
    const higher = higherThan(version, result.outcome === 'stale' ? result.storedVersion : undefined);
    await putHistoryItem(orders.client, orders.history, message, attributes, higher);
  }
  if (result.outcome === 'stale') {
    return { outcome: 'stale', orderId, version, storedVersion: result.storedVersion };
  }
  if (result.replaced === undefined) {
    return { outcome: 'applied', orderId, version, salesChange: salesChange(undefined, sale) };
  }
  const before = saleOfStoredItem(result.replaced);
  const replacedVersion = result.replaced.version as Int64;
  return { outcome: 'applied', orderId, version, salesChange: salesChange(before, sale), replacedVersion };
}

/**
 * The history entry of a version whose orders write was skipped because a higher version of the same order in
 * its batch was written (`by`, that write's result): it arrived after a higher one when the table already held
 * a version above it before that write.
 */
export async function recordSupersededVersion(
  orders: OrdersTable,
  message: OrderVersionMessage,
  by: ApplyResult,
): Promise<void> {
  if (!orders.history) return;
  const storedBefore = by.outcome === 'stale' ? by.storedVersion : by.replacedVersion;
  const higher = higherThan(message.order.version, storedBefore);
  await putHistoryItem(orders.client, orders.history, message, storedAttributes(message), higher);
}

/** The orders table item's attributes of a version (the history entry starts from the same). */
function storedAttributes({ order, source }: OrderVersionMessage): Record<string, unknown> {
  return storedOrderItem(order, saleOf(order), {
    findingCodes: [...new Set(source.findings.map((finding) => finding.code))],
    ...(source.correlationId === undefined ? {} : { correlationId: source.correlationId }),
  }).attributes;
}

/** `stored` when it is a higher version than `version` (the entry then arrived out of order). */
function higherThan(version: Int64, stored: Int64 | undefined): Int64 | undefined {
  return stored !== undefined && BigInt(stored) > BigInt(version) ? stored : undefined;
}

/**
 * Writes the version's history entry unless one is there: a redelivery, a replay or a second feed serving
 * the same version writes nothing (ConditionalCheckFailed is the expected outcome, not an error).
 */
async function putHistoryItem(
  client: DynamoDBClient,
  history: HistoryTable,
  { source }: OrderVersionMessage,
  attributes: Record<string, unknown>,
  arrivedAfterVersion: Int64 | undefined,
): Promise<void> {
  const now = Date.now();
  const item = {
    ...attributes,
    fetchedAt: source.fetchedAt,
    storedAt: new Date(now).toISOString(),
    feedId: source.feedId,
    ...(history.retentionDays > 0
      ? { expiresAt: Math.floor(now / 1000) + history.retentionDays * 86_400 }
      : {}),
    ...(arrivedAfterVersion === undefined ? {} : { arrivedAfterVersion }),
  };
  try {
    await client.send(
      new PutItemCommand({
        TableName: history.tableName,
        Item: marshall(item, { removeUndefinedValues: true }),
        ConditionExpression: 'attribute_not_exists(#version)',
        ExpressionAttributeNames: { '#version': 'version' },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}
