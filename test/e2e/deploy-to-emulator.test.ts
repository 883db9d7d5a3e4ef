// Deploys the real stack (bundled functions included) into a fresh moto_server with `cdk deploy`, then
// checks through the AWS APIs that what was created matches the stack definition.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeRuleCommand,
  EventBridgeClient,
  ListTargetsByRuleCommand,
} from '@aws-sdk/client-eventbridge';
import {
  GetFunctionConfigurationCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
} from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STACK_NAME } from '../../infra/app.js';
import { deployLocal } from '../../tools/deploy-local.js';
import { EMULATOR_ENV, type RunningMoto, startMoto } from '../support/moto.js';

const DEPLOY_TIMEOUT_MS = 180_000;
/** Enough configuration for either handler's cold start (nothing is called at import). */
const POLLER_AND_CONSUMER_ENV = {
  FEED_ID: 'orders',
  CURSOR_TABLE_NAME: 'cursor',
  PARTNER_BASE_URL: 'http://localhost:4010',
  PARTNER_TOKEN_PARAMETER: '/order-feed-ingester/partner-token',
  ORDERS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders',
  DOWNSTREAM_QUEUE_URLS: '{}',
  QUARANTINE_BUCKET_NAME: 'quarantine',
  ORDERS_TABLE_NAME: 'orders',
};
const workDir = mkdtempSync(join(tmpdir(), 'order-feed-deploy-'));
let moto: RunningMoto | undefined;
let outputs: Record<string, string>;
let deployLog = '';

function clientConfig(endpoint: string) {
  return {
    endpoint,
    region: EMULATOR_ENV.AWS_REGION,
    credentials: {
      accessKeyId: EMULATOR_ENV.AWS_ACCESS_KEY_ID,
      secretAccessKey: EMULATOR_ENV.AWS_SECRET_ACCESS_KEY,
      sessionToken: EMULATOR_ENV.AWS_SESSION_TOKEN,
    },
  };
}

let cloudFormation: CloudFormationClient;
let dynamo: DynamoDBClient;
let sqs: SQSClient;
let lambda: LambdaClient;
let events: EventBridgeClient;

beforeAll(async () => {
  moto = await startMoto();
  try {
    outputs = await deployLocal({
      endpoint: moto.endpoint,
      outputsFile: join(workDir, 'outputs.json'),
      partnerBaseUrl: 'http://localhost:4010',
      tokenParameterName: '/order-feed-ingester/partner-token',
      subscribers: ['billing'],
      log: (chunk) => {
        deployLog = (deployLog + chunk).slice(-20_000);
      },
    });
  } catch (err) {
    throw new Error(`deploy failed; cdk output tail:\n${deployLog}`, { cause: err });
  }
  const config = clientConfig(moto.endpoint);
  cloudFormation = new CloudFormationClient(config);
  dynamo = new DynamoDBClient(config);
  // CloudFormation hands out real AWS queue URLs: send every call to the emulator regardless.
  sqs = new SQSClient({ ...config, useQueueUrlAsEndpoint: false });
  lambda = new LambdaClient(config);
  events = new EventBridgeClient(config);
}, DEPLOY_TIMEOUT_MS);

afterAll(async () => {
  for (const client of [cloudFormation, dynamo, sqs, lambda, events]) client?.destroy();
  await moto?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

function output(key: string): string {
  const value = outputs[key];
  if (value === undefined) throw new Error(`stack output ${key} missing`);
  return value;
}

async function queueAttributes(queueUrl: string): Promise<Record<string, string>> {
  const result = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }),
  );
  return result.Attributes ?? {};
}

describe('stack deployed into the emulator', () => {
  it('is created, with every output', async () => {
    const { Stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: STACK_NAME }));
    const stack = Stacks?.[0];

    expect(stack?.StackStatus).toBe('CREATE_COMPLETE');
    const described = Object.fromEntries((stack?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
    expect(described).toEqual(outputs);
    expect(Object.keys(described).sort()).toEqual(
      [
        'OrdersTableName',
        'CursorTableName',
        'QuarantineBucketName',
        'OrdersQueueUrl',
        'OrdersDeadLetterQueueUrl',
        'DownstreamQueueUrlBilling',
        'DownstreamDeadLetterQueueUrlBilling',
        'PollerFunctionName',
        'ConsumerFunctionName',
        'PollScheduleRuleName',
        'FeedPollers',
        'DashboardName',
        'AlarmTopicArn',
        'HistoryTableName',
      ].sort(),
    );
    // No alarmTopicArn given: the stack's own topic.
    expect(described.AlarmTopicArn).toMatch(/^arn:aws:sns:[a-z0-9-]+:\d{12}:/);
    expect(JSON.parse(described.FeedPollers ?? '{}')).toEqual({ orders: described.PollerFunctionName });
  });

  it('has the order history keyed by orderId and version', async () => {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: output('HistoryTableName') }));

    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'orderId', KeyType: 'HASH' },
      { AttributeName: 'version', KeyType: 'RANGE' },
    ]);
    expect(Table?.DeletionProtectionEnabled).toBe(true);
  });

  it('has the orders table keyed by orderId with the salesByVendor index', async () => {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: output('OrdersTableName') }));

    expect(Table?.KeySchema).toEqual([{ AttributeName: 'orderId', KeyType: 'HASH' }]);
    expect(Table?.DeletionProtectionEnabled).toBe(true);
    const index = Table?.GlobalSecondaryIndexes?.find((gsi) => gsi.IndexName === 'salesByVendor');
    expect(index?.KeySchema).toEqual([
      { AttributeName: 'saleKey', KeyType: 'HASH' },
      { AttributeName: 'orderId', KeyType: 'RANGE' },
    ]);
    expect(index?.Projection).toEqual({
      ProjectionType: 'INCLUDE',
      NonKeyAttributes: ['saleAmount', 'vendorId'],
    });
  });

  it('has the cursor table keyed by feedId', async () => {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: output('CursorTableName') }));

    expect(Table?.KeySchema).toEqual([{ AttributeName: 'feedId', KeyType: 'HASH' }]);
    expect(Table?.AttributeDefinitions).toEqual([{ AttributeName: 'feedId', AttributeType: 'S' }]);
  });

  it.each([
    ['OrdersQueueUrl', 'OrdersDeadLetterQueueUrl', 4],
    ['DownstreamQueueUrlBilling', 'DownstreamDeadLetterQueueUrlBilling', 14],
  ])(
    '%s redrives to %s after 5 receives, with a 14-day DLQ, keeping messages %i days',
    async (queueKey, dlqKey, days) => {
      const queue = await queueAttributes(output(queueKey));
      const dlq = await queueAttributes(output(dlqKey));

      expect(JSON.parse(queue.RedrivePolicy ?? '{}')).toEqual({
        deadLetterTargetArn: dlq.QueueArn,
        maxReceiveCount: 5,
      });
      expect(queue.VisibilityTimeout).toBe('180');
      expect(dlq.MessageRetentionPeriod).toBe(String(14 * 24 * 3600));
      expect(queue.MessageRetentionPeriod).toBe(String(days * 24 * 3600));
    },
  );

  it('runs the poller on Node.js 22 with its environment pointing at the deployed resources', async () => {
    const fn = await lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: output('PollerFunctionName') }),
    );
    const variables = fn.Environment?.Variables ?? {};

    expect(fn).toMatchObject({
      Runtime: 'nodejs22.x',
      Handler: 'index.handler',
      Timeout: 120,
      MemorySize: 512,
    });
    expect(variables).toMatchObject({
      CURSOR_TABLE_NAME: output('CursorTableName'),
      ORDERS_QUEUE_URL: output('OrdersQueueUrl'),
      QUARANTINE_BUCKET_NAME: output('QuarantineBucketName'),
      PARTNER_BASE_URL: 'http://localhost:4010',
      PARTNER_TOKEN_PARAMETER: '/order-feed-ingester/partner-token',
      POWERTOOLS_SERVICE_NAME: 'order-feed-poller',
    });
    expect(JSON.parse(variables.DOWNSTREAM_QUEUE_URLS ?? 'null')).toEqual({
      billing: output('DownstreamQueueUrlBilling'),
    });
  });

  it('runs the consumer on Node.js 22 against the orders table', async () => {
    const fn = await lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: output('ConsumerFunctionName') }),
    );

    expect(fn).toMatchObject({ Runtime: 'nodejs22.x', Handler: 'index.handler', Timeout: 30 });
    expect(fn.Environment?.Variables).toMatchObject({
      ORDERS_TABLE_NAME: output('OrdersTableName'),
      POWERTOOLS_SERVICE_NAME: 'order-feed-consumer',
    });
  });

  it('feeds the consumer from the orders queue with partial batch responses', async () => {
    const { EventSourceMappings } = await lambda.send(
      new ListEventSourceMappingsCommand({ FunctionName: output('ConsumerFunctionName') }),
    );
    const orders = await queueAttributes(output('OrdersQueueUrl'));

    expect(EventSourceMappings).toHaveLength(1);
    expect(EventSourceMappings?.[0]).toMatchObject({
      EventSourceArn: orders.QueueArn,
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('ships handler bundles that load as ESM and export handler', () => {
    const bundles = shippedBundles();
    const env = {
      ...process.env,
      ...EMULATOR_ENV,
      ...POLLER_AND_CONSUMER_ENV,
    };

    expect(bundles).toHaveLength(2);
    for (const bundle of bundles) {
      // A child process: the module runs its cold-start code (config checks, client creation) on import,
      // with source maps on as the functions' NODE_OPTIONS has it.
      const result = spawnSync(
        process.execPath,
        [
          '--enable-source-maps',
          '--input-type=module',
          '-e',
          "const m = await import('./index.mjs'); console.log(typeof m.handler);",
        ],
        { cwd: bundle, env, encoding: 'utf8' },
      );
      expect(result.stdout.trim(), result.stderr).toBe('function');
    }
  });

  it("ships source maps of our own code only (IngesterFunction's afterBundling step ran)", () => {
    const sources = shippedBundles().map(
      (bundle) =>
        (JSON.parse(readFileSync(join(bundle, 'index.mjs.map'), 'utf8')) as { sources: string[] }).sources,
    );

    expect(sources).toHaveLength(2);
    expect(sources.flat().filter((source) => source.includes('node_modules'))).toEqual([]);
    expect(
      sources.flat().filter((source) => /functions\/(poller|consumer)\/handler\.ts$/.test(source)),
    ).toHaveLength(2);
  });

  /** The unpacked asset directory of each function in the synthesized template. */
  function shippedBundles(): string[] {
    const template = JSON.parse(
      readFileSync(join(workDir, 'cdk.out', `${STACK_NAME}.template.json`), 'utf8'),
    ) as {
      Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }>;
    };
    return Object.values(template.Resources)
      .filter((resource) => resource.Type === 'AWS::Lambda::Function')
      .map((resource) =>
        join(workDir, 'cdk.out', `asset.${resource.Properties.Code?.S3Key?.replace(/\.zip$/, '')}`),
      );
  }

  it('schedules the poller every minute (the default)', async () => {
    const ruleName = output('PollScheduleRuleName');
    const rule = await events.send(new DescribeRuleCommand({ Name: ruleName }));
    const { Targets } = await events.send(new ListTargetsByRuleCommand({ Rule: ruleName }));
    const poller = await lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: output('PollerFunctionName') }),
    );

    expect(rule).toMatchObject({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
    expect(Targets?.map((target) => target.Arn)).toEqual([poller.FunctionArn]);
  });
});
