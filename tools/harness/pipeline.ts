// Integration harness: the pipeline's AWS resources in a real moto_server, created from the stack's own
// synthesized template, and the real handlers invoked as Lambda would invoke them.
import { CreateTableCommand, type CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type AwsAt, createAwsClients } from '../aws.js';
import { lambdaContext } from '../local/lambda-context.js';
import { EMULATOR_ENV, type RunningMoto } from '../local/moto.js';
import { type EventSourceOptions, pollQueueOnce } from '../local/sqs-event-source.js';
import { type CfnTemplate, stackTemplate, TOKEN_PARAMETER } from './template.js';

/** One reader of the quarantine and one of the orders table for local mode, chaos and the tests. */
export { quarantinedKeys } from '../local/data.js';
export { scanOrders } from '../store/stored-order.js';
export { stackTemplate } from './template.js';

export type AwsClients = Pick<AwsAt, 'dynamo' | 'sqs' | 's3' | 'ssm'>;

/** Points the SDK (ours and the handlers') at the emulator, with dummy credentials. */
export function useEmulator(moto: RunningMoto): AwsAt {
  Object.assign(process.env, EMULATOR_ENV, { AWS_ENDPOINT_URL: moto.endpoint });
  return createAwsClients(moto.endpoint, EMULATOR_ENV);
}

export interface PipelineResources {
  ordersTable: string;
  /** The order history (the stack's HistoryTable; the harness's stack keeps history, the default). */
  historyTable: string;
  cursorTable: string;
  ordersQueueUrl: string;
  ordersDlqUrl: string;
  downstreamQueueUrl: string;
  quarantineBucket: string;
  tokenParameter: string;
}

export const TEST_TOKEN = 'sim-token-7f3a9c2e41b84d0f';

function propertiesOf(resources: CfnTemplate['Resources'], type: string, idPrefix: string) {
  const found = Object.entries(resources).find(([id, r]) => r.Type === type && id.startsWith(idPrefix));
  if (!found) throw new Error(`the stack's template has no ${type} ${idPrefix}…`);
  return { id: found[0], properties: found[1].Properties ?? {} };
}

async function createTable(aws: AwsClients, name: string, properties: Record<string, unknown>) {
  const { AttributeDefinitions, KeySchema, BillingMode, GlobalSecondaryIndexes } = properties;
  await aws.dynamo.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions,
      KeySchema,
      BillingMode,
      GlobalSecondaryIndexes,
    } as CreateTableCommandInput),
  );
}

const QUEUE_ATTRIBUTES = [
  'VisibilityTimeout',
  'MessageRetentionPeriod',
  'MaximumMessageSize',
  'DelaySeconds',
];

/** Creates the queue `idPrefix` names in the template (its dead-letter queue first), as `name`. */
async function createQueue(
  aws: AwsClients,
  resources: CfnTemplate['Resources'],
  idPrefix: string,
  name: string,
  maxReceiveCount?: number,
): Promise<{ url: string; dlqUrl: string }> {
  const dlq = await aws.sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqArn = await queueArn(aws.sqs, dlq.QueueUrl ?? '');
  const { properties } = propertiesOf(resources, 'AWS::SQS::Queue', idPrefix);
  const attributes: Record<string, string> = {};
  for (const key of QUEUE_ATTRIBUTES) {
    if (properties[key] !== undefined) attributes[key] = String(properties[key]);
  }
  const redrive = properties.RedrivePolicy as { maxReceiveCount: number } | undefined;
  if (!redrive) throw new Error(`the stack's ${idPrefix} has no redrive policy`);
  attributes.RedrivePolicy = JSON.stringify({
    deadLetterTargetArn: dlqArn,
    maxReceiveCount: maxReceiveCount ?? redrive.maxReceiveCount,
  });
  const queue = await aws.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  return { url: queue.QueueUrl ?? '', dlqUrl: dlq.QueueUrl ?? '' };
}

/**
 * The stack's tables and queues (from its template), the quarantine bucket and the token parameter.
 * `maxReceiveCount` overrides the orders queue's (tests that count redeliveries).
 */
export async function createPipelineResources(
  aws: AwsClients,
  options: { maxReceiveCount?: number; token?: string } = {},
): Promise<PipelineResources> {
  const { Resources } = await stackTemplate();
  await createTable(aws, 'orders', propertiesOf(Resources, 'AWS::DynamoDB::Table', 'OrdersTable').properties);
  await createTable(
    aws,
    'history',
    propertiesOf(Resources, 'AWS::DynamoDB::Table', 'HistoryTable').properties,
  );
  await createTable(
    aws,
    'cursors',
    propertiesOf(Resources, 'AWS::DynamoDB::Table', 'CursorTable').properties,
  );
  const orders = await createQueue(aws, Resources, 'QueuesOrdersQueue', 'orders', options.maxReceiveCount);
  const downstream = await createQueue(
    aws,
    Resources,
    'QueuesDownstreamAnalyticsQueue',
    'downstream-analytics',
  );
  await aws.s3.send(new CreateBucketCommand({ Bucket: 'quarantine' }));
  await aws.ssm.send(
    new PutParameterCommand({
      Name: TOKEN_PARAMETER,
      Type: 'SecureString',
      Value: options.token ?? TEST_TOKEN,
      Overwrite: true,
    }),
  );
  return {
    ordersTable: 'orders',
    historyTable: 'history',
    cursorTable: 'cursors',
    ordersQueueUrl: orders.url,
    ordersDlqUrl: orders.dlqUrl,
    downstreamQueueUrl: downstream.url,
    quarantineBucket: 'quarantine',
    tokenParameter: TOKEN_PARAMETER,
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
    HISTORY_TABLE_NAME: resources.historyTable,
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    ...extra,
  };
}

/** Runs the emulated SQS event source until the queue is empty (`timeoutMs`: the consumer's, default 30 s). */
export async function drainQueue(
  aws: Pick<AwsClients, 'sqs'>,
  queueUrl: string,
  handlers: { consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse | undefined> },
  options: Partial<EventSourceOptions> & { timeoutMs?: number } = {},
): Promise<{ batches: number; succeeded: number; failed: number; crashes: number }> {
  const totals = { batches: 0, succeeded: 0, failed: 0, crashes: 0 };
  const { timeoutMs = 30_000, ...eventSource } = options;
  for (;;) {
    const stats = await pollQueueOnce(
      aws.sqs,
      queueUrl,
      handlers.consume,
      () => lambdaContext('consumer', timeoutMs),
      { batchSize: 10, retryDelaySeconds: 0, ...eventSource },
    );
    if (stats.received === 0) return totals;
    totals.batches += 1;
    totals.succeeded += stats.succeeded;
    totals.failed += stats.failed;
    if (stats.crashed) totals.crashes += 1;
  }
}
