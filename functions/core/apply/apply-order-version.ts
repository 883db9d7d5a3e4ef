// Use case: apply one order version (a message the public kit's parser validated) to the orders table and
// its sales ledger, and keep it in the order history.
//   1. derive the version's sale entry (a sale iff status is accepted)
//   2. one conditional put, the kit's, of the orders table item (stored-order-item.ts): order + sale entry
//      + finding codes + correlation id, only if newer than what is stored
//   3. when history is on: one conditional put of the same item into the history table under
//      (orderId, version), only if that version is not there yet (the first stored content is kept), marked
//      `arrivedAfterVersion` when step 2 found a higher version stored
//   4. report applied (with the ledger change, from the item it replaced) or stale (an equal or lower
//      version: a counted no-op for the orders table)
// The history write comes second so it can say whether the version arrived out of order without a read. A
// crash between the two writes leaves the version applied but not yet in the history: the redelivery finds
// it stale (equal) in the orders table and writes the history entry then.
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { saleOfStoredItem, storedOrderItem } from '../adapters/stored-order-item.js';
import { applyItemIfNewer } from '../contract/consumer-kit.js';
import type { OrderVersionMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import { type SaleEntry, type SalesChange, saleOf, salesChange } from './sale.js';

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
  const { id: orderId, version } = message.order;
  const sale = saleOf(message.order);
  const stored = storedItem(message, sale);
  const result = await applyItemIfNewer(orders.client, orders.tableName, message.order, stored);
  const storedVersion = result.outcome === 'stale' ? result.storedVersion : undefined;
  await putHistoryItem(orders, message, stored.item, storedVersion);
  if (result.outcome === 'stale')
    return { outcome: 'stale', orderId, version, storedVersion: result.storedVersion };
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
  await putHistoryItem(orders, message, storedItem(message, saleOf(message.order)).item, storedBefore);
}

/** The orders table item of a version, marshalled once (the history entry starts from the same). */
function storedItem({ order, source }: OrderVersionMessage, sale: SaleEntry | undefined) {
  return storedOrderItem(order, sale, {
    findingCodes: [...new Set(source.findings.map((finding) => finding.code))],
    ...(source.correlationId === undefined ? {} : { correlationId: source.correlationId }),
  });
}

/**
 * Writes the version's history entry (when history is on) unless one is there: a redelivery, a replay or a
 * second feed serving the same version writes nothing (ConditionalCheckFailed is the expected outcome, not an
 * error). `storedBefore`: the version the orders table held; above this one, the entry arrived out of order.
 */
async function putHistoryItem(
  { client, history }: OrdersTable,
  { order, source }: OrderVersionMessage,
  item: Record<string, AttributeValue>,
  storedBefore: Int64 | undefined,
): Promise<void> {
  if (!history) return;
  const now = Date.now();
  const extra = {
    fetchedAt: source.fetchedAt,
    storedAt: new Date(now).toISOString(),
    feedId: source.feedId,
    ...(history.retentionDays > 0
      ? { expiresAt: Math.floor(now / 1000) + history.retentionDays * 86_400 }
      : {}),
    ...(storedBefore !== undefined && BigInt(storedBefore) > BigInt(order.version)
      ? { arrivedAfterVersion: storedBefore }
      : {}),
  };
  try {
    await client.send(
      new PutItemCommand({
        TableName: history.tableName,
        Item: { ...item, ...marshall(extra) },
        ConditionExpression: 'attribute_not_exists(#version)',
        ExpressionAttributeNames: { '#version': 'version' },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}
