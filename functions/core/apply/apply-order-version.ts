// Why the history write comes after the orders put: functions/README.md, "The order history".
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

export interface HistoryTable {
  tableName: string;
  /** Days an entry is kept (TTL attribute `expiresAt`); 0: forever. */
  retentionDays: number;
}

/** The history table (when history is on) shares the orders table's client. */
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
  if (result.replaced === undefined)
    return { outcome: 'applied', orderId, version, salesChange: salesChange(undefined, sale) };
  const before = saleOfStoredItem(result.replaced);
  const replacedVersion = result.replaced.version as Int64;
  return { outcome: 'applied', orderId, version, salesChange: salesChange(before, sale), replacedVersion };
}

/** The history entry of a version skipped for a higher one of its batch (`by`: that version's write). */
export async function recordSupersededVersion(
  orders: OrdersTable,
  message: OrderVersionMessage,
  by: ApplyResult,
): Promise<void> {
  if (!orders.history) return;
  const storedBefore = by.outcome === 'stale' ? by.storedVersion : by.replacedVersion;
  await putHistoryItem(orders, message, storedItem(message, saleOf(message.order)).item, storedBefore);
}

function storedItem({ order, source }: OrderVersionMessage, sale: SaleEntry | undefined) {
  return storedOrderItem(order, sale, {
    findingCodes: [...new Set(source.findings.map((finding) => finding.code))],
    ...(source.correlationId === undefined ? {} : { correlationId: source.correlationId }),
  });
}

/** `storedBefore`: the version the orders table held; above this one, the entry arrived out of order. */
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
