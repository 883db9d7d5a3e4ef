// Reading and resetting the deployed pipeline's data: queue depths, the orders table by status, the
// sales ledger (read from its index, never recomputed), quarantined objects and dead letters; and
// emptying all of it so one deployment can serve one run after another (emulator only).
import {
  type AttributeValue,
  BatchWriteItemCommand,
  paginateScan,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { DeleteObjectsCommand, paginateListObjectsV2 } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { QUARANTINE_PREFIX } from '../../functions/core/adapters/s3-quarantine.js';
import type { AwsAt } from '../aws.js';
import { readSalesLedger, type SalesTotal } from '../store/sales-ledger.js';
import { scanOrders } from '../store/stored-order.js';
import type { LocalAwsClients } from './aws.js';
import type { Deployment } from './deployment.js';

/** Messages waiting, in flight (received, not yet deleted) and delayed. */
export interface QueueDepth {
  visible: number;
  inFlight: number;
  delayed: number;
  total: number;
}

export async function queueDepth(aws: Pick<AwsAt, 'sqs'>, queueUrl: string): Promise<QueueDepth> {
  const { Attributes = {} } = await aws.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  const visible = Number(Attributes.ApproximateNumberOfMessages ?? 0);
  const inFlight = Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
  const delayed = Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0);
  return { visible, inFlight, delayed, total: visible + inFlight + delayed };
}

/** The quarantined records' keys (of one feed, or all), sorted: local mode's summary, ops, chaos, the tests. */
export function quarantinedKeys(
  aws: Pick<LocalAwsClients, 's3'>,
  bucket: string,
  feedId?: string,
): Promise<string[]> {
  return keysUnder(
    aws,
    bucket,
    `${QUARANTINE_PREFIX}${feedId === undefined ? '' : `${encodeURIComponent(feedId)}/`}`,
  );
}

async function keysUnder(
  aws: Pick<LocalAwsClients, 's3'>,
  bucket: string,
  prefix: string,
): Promise<string[]> {
  const keys: string[] = [];
  for await (const page of paginateListObjectsV2({ client: aws.s3 }, { Bucket: bucket, Prefix: prefix })) {
    for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
  }
  return keys.sort();
}

function countByStatus(orders: ReadonlyMap<number, { status: string }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status } of orders.values()) counts[status] = (counts[status] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

export interface DataSnapshot {
  ordersByStatus: Record<string, number>;
  sales: SalesTotal[];
  quarantined: string[];
  deadLettered: number;
}

/** The snapshot plus every stored order's version and status (one scan serves both). */
export async function readDataWithOrders(
  aws: LocalAwsClients,
  deployment: Deployment,
): Promise<DataSnapshot & { orders: Map<number, { version: number; status: string }> }> {
  const [orders, sales, quarantined, dlq] = await Promise.all([
    scanOrders(aws, deployment.ordersTable),
    readSalesLedger(aws.dynamo, deployment.ordersTable),
    quarantinedKeys(aws, deployment.quarantineBucket),
    queueDepth(aws, deployment.deadLetterQueueUrl),
  ]);
  // id → { version, status } of every stored order (to compare with an expected state).
  const versions = new Map(
    [...orders.values()].map((item) => [
      Number(item.orderId),
      { version: Number(item.version), status: String(item.status) },
    ]),
  );
  return {
    ordersByStatus: countByStatus(versions),
    sales,
    quarantined,
    deadLettered: dlq.total,
    orders: versions,
  };
}

/**
 * Empties the orders, history and cursor tables, purges every queue of the stack and deletes every object of the
 * quarantine bucket (the quarantined records and those `npm run ops -- quarantine retry` moved to
 * `retried/`; the bucket is versioned, so older versions stay, as on AWS). Only for an emulator: on AWS
 * this would be data loss, so callers check `endpoint.loopback`.
 */
export async function resetData(aws: LocalAwsClients, deployment: Deployment): Promise<void> {
  if (!aws.endpoint.loopback)
    throw new Error('resetting data is allowed only in an emulator on this machine');
  await Promise.all([
    emptyTable(aws, deployment.ordersTable, 'orderId'),
    emptyTable(aws, deployment.cursorTable, 'feedId'),
    ...(deployment.historyTable ? [emptyTable(aws, deployment.historyTable, 'orderId', 'version')] : []),
    ...[deployment.queueUrl, deployment.deadLetterQueueUrl, ...deployment.downstreamQueueUrls].map((url) =>
      aws.sqs.send(new PurgeQueueCommand({ QueueUrl: url })),
    ),
    emptyBucket(aws, deployment.quarantineBucket),
  ]);
}

async function emptyTable(aws: LocalAwsClients, table: string, ...key: string[]): Promise<void> {
  const keys: Record<string, AttributeValue>[] = [];
  const names = Object.fromEntries(key.map((name, index) => [`#k${index}`, name]));
  const pages = paginateScan(
    { client: aws.dynamo },
    {
      TableName: table,
      ProjectionExpression: Object.keys(names).join(', '),
      ExpressionAttributeNames: names,
    },
  );
  for await (const page of pages) keys.push(...(page.Items ?? []));
  for (let start = 0; start < keys.length; start += 25) {
    let requests: WriteRequest[] = keys.slice(start, start + 25).map((Key) => ({ DeleteRequest: { Key } }));
    while (requests.length > 0) {
      const output = await aws.dynamo.send(
        new BatchWriteItemCommand({ RequestItems: { [table]: requests } }),
      );
      requests = output.UnprocessedItems?.[table] ?? [];
    }
  }
}

async function emptyBucket(aws: LocalAwsClients, bucket: string): Promise<void> {
  const keys = await keysUnder(aws, bucket, '');
  for (let start = 0; start < keys.length; start += 1000) {
    const { Errors } = await aws.s3.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: keys.slice(start, start + 1000).map((Key) => ({ Key })), Quiet: true },
      }),
    );
    const failed = Errors?.[0];
    if (failed)
      throw new Error(`could not delete ${failed.Key} from ${bucket}: ${failed.Code} ${failed.Message}`);
  }
}

/**
 * The history's entries and an order to look at (the summary's hint): the one with the most entries stored since
 * `storedSince` (this run's; a reused emulator also holds earlier runs'), else the one with the most of all.
 */
export async function readHistoryCount(
  aws: LocalAwsClients,
  table: string,
  storedSince?: string,
): Promise<{ entries: number; busiestOrderId: string | undefined }> {
  const entries: HistoryEntryRef[] = [];
  const pages = paginateScan(
    { client: aws.dynamo },
    {
      TableName: table,
      ProjectionExpression: 'orderId, storedAt',
      ConsistentRead: true,
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      // The id as DynamoDB's text: exact beyond 2^53.
      entries.push({ orderId: item.orderId?.N ?? '', storedAt: item.storedAt?.S });
    }
  }
  return { entries: entries.length, busiestOrderId: busiestOrder(entries, storedSince) };
}

export interface HistoryEntryRef {
  orderId: string;
  /** When the consumer stored it (ISO); items without it count as stored before any run. */
  storedAt: string | undefined;
}

/** The order with the most entries stored at or after `since`; without any, the one with the most of all. */
export function busiestOrder(entries: readonly HistoryEntryRef[], since?: string): string | undefined {
  const most = (chosen: readonly HistoryEntryRef[]) => {
    const perOrder = new Map<string, number>();
    for (const { orderId } of chosen) perOrder.set(orderId, (perOrder.get(orderId) ?? 0) + 1);
    let busiest: string | undefined;
    for (const [id, count] of perOrder) {
      if (busiest === undefined || count > (perOrder.get(busiest) ?? 0)) busiest = id;
    }
    return busiest;
  };
  const sinceMs = since === undefined ? undefined : Date.parse(since);
  const recent =
    sinceMs === undefined ? [] : entries.filter((entry) => Date.parse(entry.storedAt ?? '') >= sinceMs);
  return most(recent) ?? most(entries);
}
