// Test-only readers of the harness's resources: the order history in key order, the sales
// ledger, every message waiting on a queue, and a quarantined record.
import { paginateScan } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import type { Int64 } from '../../functions/core/model/int64.js';
import type { AwsClients } from '../../tools/harness/pipeline.js';
import { readSalesLedger, type SalesTotal } from '../../tools/store/sales-ledger.js';

/** Every history entry, ordered by order id then version (int64 exact). */
export async function scanHistory(
  aws: Pick<AwsClients, 'dynamo'>,
  table: string,
): Promise<Array<Record<string, unknown>>> {
  const entries: Array<Record<string, unknown>> = [];
  for await (const page of paginateScan({ client: aws.dynamo }, { TableName: table, ConsistentRead: true })) {
    entries.push(...(page.Items ?? []).map(unmarshallExact));
  }
  const key = (entry: Record<string, unknown>) => [
    BigInt(entry.orderId as Int64),
    BigInt(entry.version as Int64),
  ];
  return entries.sort((a, b) => {
    const [ao, av] = key(a) as [bigint, bigint];
    const [bo, bv] = key(b) as [bigint, bigint];
    return ao === bo ? (av < bv ? -1 : av > bv ? 1 : 0) : ao < bo ? -1 : 1;
  });
}

/** The quarantined record stored at `key` (reason, raw record, pageId, …). */
export async function readQuarantined(
  aws: Pick<AwsClients, 's3'>,
  bucket: string,
  key: string,
): Promise<Record<string, unknown>> {
  const object = await aws.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return JSON.parse((await object.Body?.transformToString()) ?? '{}');
}

export function readLedger(aws: AwsClients, table: string): Promise<SalesTotal[]> {
  return readSalesLedger(aws.dynamo, table);
}

/** Every message waiting on the queue (`remove`: deleted as read, so the next call sees only newer ones). */
export async function receiveAll(
  aws: AwsClients,
  queueUrl: string,
  { remove = false } = {},
): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const output = await aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
    );
    if (!output.Messages?.length) return bodies;
    bodies.push(...output.Messages.map((message) => message.Body ?? ''));
    if (remove) {
      const entries = output.Messages.map((message, index) => ({
        Id: String(index),
        ReceiptHandle: message.ReceiptHandle,
      }));
      await aws.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    }
  }
}
