// Integration harness: the pipeline's AWS resources in a real moto_server, created from the same key
// schemas the stack uses, and the real handlers invoked as Lambda would invoke them.
import { CreateTableCommand, type CreateTableCommandInput, paginateScan } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import { CURSOR_TABLE_SCHEMA, ORDERS_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import type { Int64 } from '../../functions/core/model/int64.js';
import { type AwsAt, createAwsClients } from '../aws.js';
import { lambdaContext } from '../local/lambda-context.js';
import { EMULATOR_ENV, type RunningMoto } from '../local/moto.js';
import { type EventSourceOptions, pollQueueOnce } from '../local/sqs-event-source.js';
import { readSalesLedger, type SalesTotal } from '../store/sales-ledger.js';

export type AwsClients = Pick<AwsAt, 'dynamo' | 'sqs' | 's3' | 'ssm'>;

/** Points the SDK (ours and the handlers') at the emulator, with dummy credentials. */
export function useEmulator(moto: RunningMoto): AwsClients {
  Object.assign(process.env, EMULATOR_ENV, { AWS_ENDPOINT_URL: moto.endpoint });
  return createAwsClients(moto.endpoint, EMULATOR_ENV);
}

export interface PipelineResources {
  ordersTable: string;
  cursorTable: string;
  ordersQueueUrl: string;
  ordersDlqUrl: string;
  downstreamQueueUrl: string;
  quarantineBucket: string;
  tokenParameter: string;
}

export const TEST_TOKEN = 'sim-token-7f3a9c2e41b84d0f';

export async function createPipelineResources(
  aws: AwsClients,
  options: { maxReceiveCount?: number; token?: string } = {},
): Promise<PipelineResources> {
  const orders = ORDERS_TABLE_SCHEMA;
  const ordersTable: CreateTableCommandInput = {
    TableName: 'orders',
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: orders.partitionKey.name, AttributeType: orders.partitionKey.type },
      {
        AttributeName: orders.salesIndex.partitionKey.name,
        AttributeType: orders.salesIndex.partitionKey.type,
      },
    ],
    KeySchema: [{ AttributeName: orders.partitionKey.name, KeyType: 'HASH' }],
    GlobalSecondaryIndexes: [
      {
        IndexName: orders.salesIndex.name,
        KeySchema: [
          { AttributeName: orders.salesIndex.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: orders.salesIndex.sortKey.name, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...orders.salesIndex.nonKeyAttributes] },
      },
    ],
  };
  await aws.dynamo.send(new CreateTableCommand(ordersTable));
  await aws.dynamo.send(
    new CreateTableCommand({
      TableName: 'cursors',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        {
          AttributeName: CURSOR_TABLE_SCHEMA.partitionKey.name,
          AttributeType: CURSOR_TABLE_SCHEMA.partitionKey.type,
        },
      ],
      KeySchema: [{ AttributeName: CURSOR_TABLE_SCHEMA.partitionKey.name, KeyType: 'HASH' }],
    }),
  );
  const dlq = await aws.sqs.send(new CreateQueueCommand({ QueueName: 'orders-dlq' }));
  const dlqArn = await queueArn(aws.sqs, dlq.QueueUrl ?? '');
  const queue = await aws.sqs.send(
    new CreateQueueCommand({
      QueueName: 'orders',
      Attributes: {
        VisibilityTimeout: '30',
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: options.maxReceiveCount ?? 3,
        }),
      },
    }),
  );
  const downstream = await aws.sqs.send(new CreateQueueCommand({ QueueName: 'downstream-analytics' }));
  await aws.s3.send(new CreateBucketCommand({ Bucket: 'quarantine' }));
  await aws.ssm.send(
    new PutParameterCommand({
      Name: '/order-feed/partner-token',
      Type: 'SecureString',
      Value: options.token ?? TEST_TOKEN,
      Overwrite: true,
    }),
  );
  return {
    ordersTable: 'orders',
    cursorTable: 'cursors',
    ordersQueueUrl: queue.QueueUrl ?? '',
    ordersDlqUrl: dlq.QueueUrl ?? '',
    downstreamQueueUrl: downstream.QueueUrl ?? '',
    quarantineBucket: 'quarantine',
    tokenParameter: '/order-feed/partner-token',
  };
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const output = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  return output.Attributes?.QueueArn ?? '';
}

/** The environment the stack gives both functions, pointed at these resources. */
export function pipelineEnv(
  resources: PipelineResources,
  partnerBaseUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    FEED_ID: 'partner-feed',
    CURSOR_TABLE_NAME: resources.cursorTable,
    PARTNER_BASE_URL: partnerBaseUrl,
    PARTNER_TOKEN_PARAMETER: resources.tokenParameter,
    ORDERS_QUEUE_URL: resources.ordersQueueUrl,
    DOWNSTREAM_QUEUE_URLS: JSON.stringify({ analytics: resources.downstreamQueueUrl }),
    QUARANTINE_BUCKET_NAME: resources.quarantineBucket,
    PAGE_SIZE: '10',
    MAX_PAGES_PER_RUN: '50',
    ORDERS_TABLE_NAME: resources.ordersTable,
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    ...extra,
  };
}

/** Runs the emulated SQS event source until the queue is empty. */
export async function drainQueue(
  aws: AwsClients,
  queueUrl: string,
  handlers: { consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse> },
  options: Partial<EventSourceOptions> = {},
): Promise<{ batches: number; succeeded: number; failed: number; crashes: number }> {
  const totals = { batches: 0, succeeded: 0, failed: 0, crashes: 0 };
  for (;;) {
    const stats = await pollQueueOnce(
      aws.sqs,
      queueUrl,
      handlers.consume,
      () => lambdaContext('consumer', 30_000),
      {
        batchSize: 10,
        retryDelaySeconds: 0,
        ...options,
      },
    );
    if (stats.received === 0) return totals;
    totals.batches += 1;
    totals.succeeded += stats.succeeded;
    totals.failed += stats.failed;
    if (stats.crashed) totals.crashes += 1;
  }
}

/** Every item of the orders table by order id (a consistent scan). */
export async function scanOrders(
  aws: Pick<AwsClients, 'dynamo'>,
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

export function readLedger(aws: AwsClients, table: string): Promise<SalesTotal[]> {
  return readSalesLedger(aws.dynamo, table);
}

export async function receiveAll(aws: AwsClients, queueUrl: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const output = await aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
    );
    if (!output.Messages?.length) return bodies;
    bodies.push(...output.Messages.map((message) => message.Body ?? ''));
  }
}

export async function quarantinedKeys(aws: AwsClients, bucket: string): Promise<string[]> {
  const output = await aws.s3.send(new ListObjectsV2Command({ Bucket: bucket }));
  return (output.Contents ?? []).map((object) => object.Key ?? '');
}
