// The synthesized stack: template assertions, cdk-nag (AwsSolutions) and cfn-lint, the construct in another
// team's app, the configuration contract between synth and the functions' cold start, and least privilege by
// action. One file and one synth per configuration (test/support/synth.ts): importing aws-cdk-lib and
// warming its first synth cost more than most tests here.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type AssetStaging, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { Asset } from 'aws-cdk-lib/aws-s3-assets';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { CURRENTLY_RECOMMENDED_FLAGS } from 'aws-cdk-lib/cx-api';
import { AwsSolutionsChecks } from 'cdk-nag';
import { build } from 'esbuild';
import { FEATURE_FLAGS } from 'order-feed-ingester/infra/feature-flags';
import { beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { ENVIRONMENT, type RULES, readMetricsNamespace } from '../../functions/core/config/settings.js';
import { initialFeedsText, parseInitialFeeds } from '../../functions/core/fleet/feed-config.js';
import {
  CONSUMER_COUNTS,
  type CountName,
  DISPATCHER_COUNTS,
  type FindingMetricName,
  FLEET_GAUGES,
  POLLER_COUNTS,
} from '../../functions/core/observability/metric-names.js';
import { loadDispatcherConfig } from '../../functions/dispatcher/config.js';
import { loadPollerConfig, type PollerConfig } from '../../functions/poller/config.js';
import { buildApp, STACK_NAME } from '../../infra/app.js';
import { type ConfigKey, FEED_KEYS, initialFeedsTextOf, parseConfig, SETTINGS } from '../../infra/config.js';
import { PROP_KEYS } from '../../infra/config-props.js';
import { CONSUMER_ENTRY, ordersQueueVisibilityTimeout } from '../../infra/constructs/consumer.js';
import { DISPATCHER_ENTRY } from '../../infra/constructs/dispatcher.js';
import { LAMBDA_ENVIRONMENT_LIMIT_BYTES } from '../../infra/constructs/lambda-environment.js';
import { DEAD_LETTER_RETENTION, QUEUE_RETENTION } from '../../infra/constructs/order-queues.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import {
  type FeedProps,
  OrderFeedIngester,
  type OrderFeedIngesterProps,
} from '../../infra/order-feed-ingester.js';
import { asyncapi } from '../support/asyncapi.js';
import {
  FEEDS_CONFIG,
  FULL_CONFIG,
  REQUIRED_CONFIG,
  THROWAWAY_CONFIG,
  templateOf,
} from '../support/synth.js';

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

const DAY = 24 * 3600;
/** Beside the defaults: no history TTL, short quarantine. */
const VARIANT_CONFIG = {
  ...REQUIRED_CONFIG,
  historyRetentionDays: 0,
  quarantineRetentionDays: 7,
};
/** An initial set as large as the dispatcher's environment holds (1,000 feeds are rows added at runtime). */
const MANY_FEEDS_CONFIG = {
  ...REQUIRED_CONFIG,
  feeds: Array.from({ length: 1000 }, (_, index) => ({
    id: `merchant-${String(index).padStart(4, '0')}`,
    vendorIds: [`vendor-${index}`],
  })),
};

/** Every metric name, as a typed object: a name renamed in metric-names.ts fails to compile here. */
const M = Object.fromEntries(
  [...POLLER_COUNTS, ...CONSUMER_COUNTS, ...DISPATCHER_COUNTS, ...Object.values(FLEET_GAUGES)].map((name) => [
    name,
    name,
  ]),
) as { readonly [K in Exclude<CountName, FindingMetricName>]: K };

let full: Template;
let minimal: Template;
let feeds: Template;
let throwaway: Template;

beforeAll(() => {
  full = templateOf(FULL_CONFIG).template;
  minimal = templateOf(REQUIRED_CONFIG).template;
  feeds = templateOf(FEEDS_CONFIG).template;
  throwaway = templateOf(THROWAWAY_CONFIG).template;
});

function resources(template: Template, type: string, prefix = ''): Array<[string, Resource]> {
  return Object.entries(template.findResources(type) as Record<string, Resource>).filter(([id]) =>
    id.startsWith(prefix),
  );
}

/** The one resource of `type` whose logical id starts with `prefix`. */
function resource(template: Template, type: string, prefix: string): [string, Resource] {
  const matches = resources(template, type, prefix);
  expect(
    matches.map(([id]) => id),
    `${type} ${prefix}*`,
  ).toHaveLength(1);
  return matches[0] as [string, Resource];
}

const ref = (logicalId: string) => ({ Ref: logicalId });
const arnOf = (logicalId: string) => ({ 'Fn::GetAtt': [logicalId, 'Arn'] });
const queueNameOf = (logicalId: string) => [
  { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId, 'QueueName'] } },
];
const variablesOf = (fn: Resource) =>
  (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

function statementsOfRole(template: Template, rolePrefix: string): Statement[] {
  const [roleId] = resource(template, 'AWS::IAM::Role', rolePrefix);
  return resources(template, 'AWS::IAM::Policy')
    .filter(([, policy]) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([ref(roleId)]))
    .flatMap(([, policy]) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

function actionsOn(statements: Statement[], resourceValue: unknown): string[] {
  return statements
    .filter((s) => JSON.stringify(s.Resource).includes(JSON.stringify(resourceValue)))
    .flatMap(actionsOf);
}

/** What CDK grants a function with active tracing. */
const XRAY_WRITE = {
  Effect: 'Allow',
  Action: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'],
  Resource: '*',
};

describe('tables and bucket', () => {
  it('keys the orders table by orderId (N) with the sparse salesByVendor index, on demand, PITR, AWS-owned key, retained', () => {
    const [, table] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');

    expect(table.Properties).toMatchObject({
      KeySchema: [{ AttributeName: 'orderId', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
      // SSEEnabled false selects the AWS-owned key; KMS keys would say true.
      SSESpecification: { SSEEnabled: false },
      GlobalSecondaryIndexes: [
        {
          IndexName: 'salesByVendor',
          KeySchema: [
            { AttributeName: 'saleKey', KeyType: 'HASH' },
            { AttributeName: 'orderId', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['saleAmount', 'vendorId'] },
        },
      ],
    });
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'orderId', AttributeType: 'N' },
        { AttributeName: 'saleKey', AttributeType: 'S' },
      ]),
    );
    expect([table.DeletionPolicy, table.UpdateReplacePolicy]).toEqual(['Retain', 'Retain']);
  });

  it.each([
    [
      'HistoryTable',
      [
        ['orderId', 'N', 'HASH'],
        ['version', 'N', 'RANGE'],
      ],
    ],
    ['CursorTable', [['feedId', 'S', 'HASH']]],
  ])('keys the %s as the adapters expect, on demand, PITR, no index, retained', (prefix, keys) => {
    const [, table] = resource(full, 'AWS::DynamoDB::Table', prefix);

    expect(table.Properties).toMatchObject({
      KeySchema: keys.map(([name, , kind]) => ({ AttributeName: name, KeyType: kind })),
      AttributeDefinitions: keys.map(([name, type]) => ({ AttributeName: name, AttributeType: type })),
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(table.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(table.DeletionPolicy).toBe('Retain');
  });

  it('expires history on expiresAt, not with historyRetentionDays 0, and has none with history false', () => {
    const ttl = (template: Template) =>
      resource(template, 'AWS::DynamoDB::Table', 'HistoryTable')[1].Properties.TimeToLiveSpecification;
    const off = templateOf(CASES.lowest).template; // history: false

    expect(ttl(full)).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    expect(ttl(templateOf(VARIANT_CONFIG).template)).toBeUndefined();
    expect(resources(off, 'AWS::DynamoDB::Table', 'History')).toEqual([]);
    expect(Object.keys(off.toJSON().Outputs)).not.toContain('HistoryTableName');
    expect(variablesOf(resource(off, 'AWS::Lambda::Function', 'ConsumerFunction')[1])).not.toHaveProperty(
      'HISTORY_TABLE_NAME',
    );
  });

  it('blocks public access to the quarantine bucket, encrypts it with SSE-S3, versions it, keeps it, TLS only', () => {
    const [, bucket] = resource(full, 'AWS::S3::Bucket', 'QuarantineBucket');

    expect(bucket.Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      VersioningConfiguration: { Status: 'Enabled' },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
    });
    expect(bucket.DeletionPolicy).toBe('Retain');
    full.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('expires quarantined records after 90 days or quarantineRetentionDays, overwritten copies after 30', () => {
    const rules = (template: Template) =>
      (
        resource(template, 'AWS::S3::Bucket', 'QuarantineBucket')[1].Properties.LifecycleConfiguration as {
          Rules: unknown[];
        }
      ).Rules;

    expect(rules(minimal)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Id: 'expire-quarantined-records',
          ExpirationInDays: 90,
          Status: 'Enabled',
        }),
        expect.objectContaining({
          Id: 'expire-overwritten-copies',
          NoncurrentVersionExpiration: { NoncurrentDays: 30 },
        }),
      ]),
    );
    expect(rules(templateOf(VARIANT_CONFIG).template)).toContainEqual(
      expect.objectContaining({ ExpirationInDays: 7 }),
    );
  });

  it('drops retention and deletion protection with removalPolicy destroy, and empties the bucket on deletion', () => {
    const [, table] = resource(throwaway, 'AWS::DynamoDB::Table', 'OrdersTable');
    const [bucketId] = resource(throwaway, 'AWS::S3::Bucket', 'QuarantineBucket');

    expect(table.DeletionPolicy).toBe('Delete');
    expect(table.Properties.DeletionProtectionEnabled).toBe(false);
    throwaway.hasResourceProperties('Custom::S3AutoDeleteObjects', { BucketName: ref(bucketId) });
    minimal.resourceCountIs('Custom::S3AutoDeleteObjects', 0);
  });
});

describe('queues', () => {
  it('creates the orders queue and one queue per downstream subscriber, each with a DLQ, each TLS only', () => {
    full.resourceCountIs('AWS::SQS::Queue', 6);
    minimal.resourceCountIs('AWS::SQS::Queue', 2);
    const policies = resources(full, 'AWS::SQS::QueuePolicy');
    expect(policies).toHaveLength(6);
    for (const [, policy] of policies) {
      expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
    }
  });

  it.each([
    ['QueuesOrdersQueue', 'QueuesOrdersDeadLetterQueue', 4],
    ['QueuesDownstreamBillingQueue', 'QueuesDownstreamBillingDeadLetterQueue', 14],
    ['QueuesDownstreamAuditLogQueue', 'QueuesDownstreamAuditLogDeadLetterQueue', 14],
  ])(
    '%s: SQS-managed SSE, redrive to its DLQ after maxReceiveCount, kept %i days by default, DLQ 14',
    (queueId, dlqPrefix, days) => {
      const [, queue] = resource(full, 'AWS::SQS::Queue', queueId);
      const [dlqId, dlq] = resource(full, 'AWS::SQS::Queue', dlqPrefix);

      expect(queue.Properties).toMatchObject({
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: days * DAY,
        RedrivePolicy: { deadLetterTargetArn: arnOf(dlqId), maxReceiveCount: FULL_CONFIG.maxReceiveCount },
      });
      expect(dlq.Properties).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * DAY });
      expect([queue.DeletionPolicy, dlq.DeletionPolicy]).toEqual(['Retain', 'Retain']);
    },
  );

  it('gives the orders queue a visibility timeout of 6 × consumer timeout + batching window', () => {
    const [, queue] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');
    const [, consumer] = resource(full, 'AWS::Lambda::Function', 'ConsumerFunction');

    expect(queue.Properties.VisibilityTimeout).toBe(
      6 * (consumer.Properties.Timeout as number) + FULL_CONFIG.consumerMaxBatchingWindowSeconds,
    );
  });

  it('alarms on a subscriber queue’s oldest message at half its retention, or subscriberMaxAgeHours', () => {
    for (const name of ['Billing', 'AuditLog']) {
      const [queueId] = resource(full, 'AWS::SQS::Queue', `QueuesDownstream${name}Queue`);
      const [, alarm] = resource(full, 'AWS::CloudWatch::Alarm', `MonitoringDownstream${name}QueueAgeAlarm`);
      expect(alarm.Properties).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queueNameOf(queueId),
        Statistic: 'Maximum',
        Threshold: 7 * DAY,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
    const [, alarm] = resource(
      throwaway,
      'AWS::CloudWatch::Alarm',
      'MonitoringDownstreamBillingQueueAgeAlarm',
    );
    expect(alarm.Properties.Threshold).toBe(24 * 3600);
    // subscriberRetentionDays 3.
    const [, queue] = resource(throwaway, 'AWS::SQS::Queue', 'QueuesDownstreamBillingQueue');
    expect(queue.Properties.MessageRetentionPeriod).toBe(3 * DAY);
  });
});

describe('functions', () => {
  it.each(['PollerFunction', 'DispatcherFunction', 'ConsumerFunction'])(
    '%s: Node.js 22 on ARM64, source maps and no heap flag, X-Ray active, JSON logs to its own log group kept 30 days',
    (prefix) => {
      const [, fn] = resource(full, 'AWS::Lambda::Function', prefix);
      const [logGroupId, logGroup] = resource(full, 'AWS::Logs::LogGroup', `${prefix}LogGroup`);

      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: ref(logGroupId) },
      });
      expect(variablesOf(fn).NODE_OPTIONS).toBe('--enable-source-maps');
      expect(logGroup.Properties.RetentionInDays).toBe(30);
      expect(resource(minimal, 'AWS::Lambda::Function', prefix)[1].Properties.TracingConfig).toEqual({
        Mode: 'Active',
      });
    },
  );

  it('reserves no concurrency for any function, with one feed or several (a fresh account keeps 100 unreserved)', () => {
    for (const template of [full, minimal, feeds]) {
      for (const [id, fn] of resources(template, 'AWS::Lambda::Function')) {
        expect(fn.Properties.ReservedConcurrentExecutions, id).toBeUndefined();
      }
    }
  });

  it('runs the poller up to 2 minutes with 512 MB, more for a larger page body cap (~36 × the cap)', () => {
    expect(resource(full, 'AWS::Lambda::Function', 'PollerFunction')[1].Properties).toMatchObject({
      Timeout: 120,
      MemorySize: 512,
    });
    // The highest edge has maxPageBodyBytes 64 MiB.
    const [, large] = resource(templateOf(CASES.highest).template, 'AWS::Lambda::Function', 'PollerFunction');
    expect(large.Properties).toMatchObject({ MemorySize: 2496 });
    expect(variablesOf(large).MAX_PAGE_BODY_BYTES).toBe('67108864');
  });

  it('sets exactly the poller environment the handler reads: the deployment-wide settings only', () => {
    const [, poller] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');
    const id = (type: string, prefix: string) => resource(full, type, prefix)[0];

    expect(variablesOf(poller)).toEqual({
      CURSOR_TABLE_NAME: ref(id('AWS::DynamoDB::Table', 'CursorTable')),
      PARTNER_BASE_URL: 'https://partner.example.com',
      ORDERS_QUEUE_URL: ref(id('AWS::SQS::Queue', 'QueuesOrdersQueue')),
      DOWNSTREAM_QUEUE_URLS: {
        'Fn::Join': [
          '',
          [
            '{"billing":"',
            ref(id('AWS::SQS::Queue', 'QueuesDownstreamBillingQueue')),
            '","audit-log":"',
            ref(id('AWS::SQS::Queue', 'QueuesDownstreamAuditLogQueue')),
            '"}',
          ],
        ],
      },
      QUARANTINE_BUCKET_NAME: ref(id('AWS::S3::Bucket', 'QuarantineBucket')),
      MAX_PAGES_PER_RUN: '30',
      MAX_PAGE_BODY_BYTES: '8388608',
      ARRAY_QUERY_ENCODING: 'comma',
      CURSOR_RECOVERY_LOOKBACK_MINUTES: '120',
      POWERTOOLS_SERVICE_NAME: 'order-feed-poller',
      POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedTest',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      INGESTER_INSTANCE: 'OrderFeedIngester/Default',
      NODE_OPTIONS: '--enable-source-maps',
    });
  });

  it('sets exactly the dispatcher environment the handler reads, the initial set as an object to read', () => {
    const [, dispatcher] = resource(full, 'AWS::Lambda::Function', 'DispatcherFunction');
    const [pollerId] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');

    expect(variablesOf(dispatcher)).toEqual({
      CURSOR_TABLE_NAME: ref(resource(full, 'AWS::DynamoDB::Table', 'CursorTable')[0]),
      POLLER_FUNCTION_NAME: ref(pollerId),
      MAX_CONCURRENT_POLLERS: '10',
      STALE_AFTER_MINUTES: '30',
      INITIAL_FEEDS_OBJECT: {
        'Fn::Sub': expect.stringMatching(
          /^s3:\/\/cdk-hnb659fds-assets-\$\{AWS::AccountId\}-\$\{AWS::Region\}\/[0-9a-f]{64}\.json$/,
        ),
      },
      POWERTOOLS_SERVICE_NAME: 'order-feed-dispatcher',
      POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedTest',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      INGESTER_INSTANCE: 'OrderFeedIngester/Default',
      NODE_OPTIONS: '--enable-source-maps',
    });
  });

  it('ships the initial set as a file asset the dispatcher may read, that object alone', () => {
    expect(JSON.parse(initialFeedsOf(templateOf(FULL_CONFIG)))).toEqual({
      shared: {
        tokenParameterName: '/order-feed-ingester/partner-token',
        vendorIds: ['vendor-1', 'vendor-2'],
        minAgeMinutes: 60,
        pageSize: 50,
        scheduleMinutes: 5,
      },
      feeds: [{ id: 'partner-orders' }],
    });
    const [, dispatcher] = resource(full, 'AWS::Lambda::Function', 'DispatcherFunction');
    const key = /\/([0-9a-f]{64}\.json)$/.exec(rendered(variablesOf(dispatcher).INITIAL_FEEDS_OBJECT))?.[1];
    const reads = statementsOfRole(full, 'DispatcherFunctionRole').filter((s) =>
      JSON.stringify(s.Action).includes('s3:'),
    );
    expect(reads).toEqual([
      expect.objectContaining({
        Action: 's3:GetObject',
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':s3:::',
              { 'Fn::Sub': `cdk-hnb659fds-assets-\${AWS::AccountId}-\${AWS::Region}` },
              `/${key}`,
            ],
          ],
        },
      }),
    ]);
  });

  it('sets exactly the consumer environment the handler reads', () => {
    const [, consumer] = resource(full, 'AWS::Lambda::Function', 'ConsumerFunction');

    expect(variablesOf(consumer)).toEqual({
      ORDERS_TABLE_NAME: ref(resource(full, 'AWS::DynamoDB::Table', 'OrdersTable')[0]),
      HISTORY_TABLE_NAME: ref(resource(full, 'AWS::DynamoDB::Table', 'HistoryTable')[0]),
      HISTORY_RETENTION_DAYS: '400',
      POWERTOOLS_SERVICE_NAME: 'order-feed-consumer',
      POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedTest',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      INGESTER_INSTANCE: 'OrderFeedIngester/Default',
      NODE_OPTIONS: '--enable-source-maps',
    });
  });

  it('refuses at synth an environment over 4 KB that passes key by key', () => {
    // The queue URLs at their own budget (2,800 bytes), the namespace at its longest, and a long instance id (a
    // construct nested under long ids in a platform team's app): together with the longest generated names they
    // pass Lambda's 4 KB.
    const props = {
      partnerBaseUrl: 'https://partner.example.com',
      tokenParameterName: '/order-feed-ingester/partner-token',
      metricsNamespace: `N${'n'.repeat(254)}`,
      downstreamSubscribers: Array.from(
        { length: 15 },
        (_, index) => `s-${String(index).padStart(2, '0')}-${'x'.repeat(30)}`,
      ),
    };
    const app = new App({ context: { ...FEATURE_FLAGS, 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'PlatformServices');
    expect(() => parseConfig(props)).not.toThrow();

    expect(() => new OrderFeedIngester(stack, `Orders${'x'.repeat(500)}`, props)).toThrow(
      new RegExp(
        `/Poller/Function: its environment can reach \\d+ bytes, over Lambda's limit of ${LAMBDA_ENVIRONMENT_LIMIT_BYTES} \\(largest: DOWNSTREAM_QUEUE_URLS 2\\d{3}, INGESTER_INSTANCE 5\\d\\d, `,
      ),
    );
  });

  it('runs no function past Lambda’s loop detection, never retries the poller or the dispatcher, and drops stale batches', () => {
    const [pollerId] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');
    const [dispatcherId] = resource(full, 'AWS::Lambda::Function', 'DispatcherFunction');

    for (const [id, fn] of resources(full, 'AWS::Lambda::Function')) {
      expect(fn.Properties.RecursiveLoop, id).toBeUndefined();
    }
    for (const functionId of [pollerId, dispatcherId]) {
      full.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: ref(functionId),
        MaximumRetryAttempts: 0,
        MaximumEventAgeInSeconds: 60,
      });
    }
  });

  it('runs the dispatcher every minute, whatever the feeds’ intervals, and nothing else on a schedule', () => {
    const [dispatcherId] = resource(full, 'AWS::Lambda::Function', 'DispatcherFunction');

    expect(resources(full, 'AWS::Events::Rule')).toHaveLength(1);
    expect(resource(full, 'AWS::Events::Rule', 'DispatcherSchedule')[1].Properties).toMatchObject({
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [
        {
          Arn: arnOf(dispatcherId),
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
        },
      ],
    });
    full.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: arnOf(dispatcherId),
    });
    full.resourceCountIs('AWS::Lambda::Permission', 1);
  });

  it('reads the orders queue into the consumer with partial batch responses and the configured batching', () => {
    full.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    full.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: ref(resource(full, 'AWS::Lambda::Function', 'ConsumerFunction')[0]),
      EventSourceArn: arnOf(resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue')[0]),
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: 5,
      ScalingConfig: { MaximumConcurrency: 3 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('lets the consumer run 50 at once by default, whatever the number of feeds', () => {
    const concurrency = (template: Template) =>
      (
        resource(template, 'AWS::Lambda::EventSourceMapping', '')[1].Properties.ScalingConfig as {
          MaximumConcurrency: number;
        }
      ).MaximumConcurrency;

    expect([minimal, feeds, templateOf(MANY_FEEDS_CONFIG).template].map(concurrency)).toEqual([50, 50, 50]);
  });
});

/** arn:<partition>:ssm:<region>:<account>:parameter/<name> of the stack's own account and region. */
const parameterArn = (name: string) => ({
  'Fn::Join': [
    '',
    [
      'arn:',
      ref('AWS::Partition'),
      ':ssm:',
      ref('AWS::Region'),
      ':',
      ref('AWS::AccountId'),
      `:parameter/${name}`,
    ],
  ],
});

describe('IAM', () => {
  it('gives the poller its batch’s rows, SendMessage to every queue, PutObject under quarantine/ and the token path', () => {
    const statements = statementsOfRole(full, 'PollerFunctionRole');
    const [cursorId] = resource(full, 'AWS::DynamoDB::Table', 'CursorTable');
    const [bucketId] = resource(full, 'AWS::S3::Bucket', 'QuarantineBucket');
    const queueIds = [
      'QueuesOrdersQueue',
      'QueuesDownstreamBillingQueue',
      'QueuesDownstreamAuditLogQueue',
    ].map((prefix) => resource(full, 'AWS::SQS::Queue', prefix)[0]);

    expect(actionsOn(statements, arnOf(cursorId))).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
    ]);
    // The recommended feature flags list a statement's resources in sorted order.
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'sqs:SendMessage',
      Resource: [...queueIds].sort().map(arnOf),
    });
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 's3:PutObject',
      Resource: { 'Fn::Join': ['', [arnOf(bucketId), '/quarantine/*']] },
    });
    // The single feed's parameter is under tokenParameterPath: the path covers it.
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'ssm:GetParameter',
      Resource: parameterArn('order-feed-ingester/*'),
    });
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'kms:Decrypt',
      Resource: FULL_CONFIG.tokenKmsKeyArn,
      Condition: {
        StringEquals: {
          'kms:ViaService': { 'Fn::Join': ['', ['ssm.', ref('AWS::Region'), '.amazonaws.com']] },
        },
      },
    });
  });

  it('gives the dispatcher the rows, the poller to invoke, the account’s concurrency and the token versions, no KMS', () => {
    const statements = statementsOfRole(full, 'DispatcherFunctionRole');
    const [cursorId] = resource(full, 'AWS::DynamoDB::Table', 'CursorTable');
    const [pollerId] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');

    expect(actionsOn(statements, arnOf(cursorId))).toEqual([
      'dynamodb:GetItem',
      'dynamodb:Scan',
      'dynamodb:UpdateItem',
    ]);
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'lambda:InvokeFunction',
      Resource: arnOf(pollerId),
    });
    expect(statements.filter((statement) => statement.Resource === '*').flatMap(actionsOf)).toContain(
      'lambda:GetAccountSettings',
    );
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'ssm:GetParameter',
      Resource: parameterArn('order-feed-ingester/*'),
    });
    // Versions only (GetParameter without decryption): the customer-managed key is the poller's alone.
    expect(statements.flatMap(actionsOf)).not.toContain('kms:Decrypt');
  });

  it('lets the poller invoke the dispatcher alone, from a policy of its own (no cycle), and nothing invoke itself', () => {
    const [pollerId] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');
    const [dispatcherId] = resource(full, 'AWS::Lambda::Function', 'DispatcherFunction');
    const [, policy] = resource(full, 'AWS::IAM::Policy', 'PollerDispatchRequests');

    expect(policy.Properties.PolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: arnOf(dispatcherId) }],
    });
    expect(policy.Properties.Roles).toEqual([ref(resource(full, 'AWS::IAM::Role', 'PollerFunctionRole')[0])]);
    // The poller's function waits for its role's default policy, which must not name the dispatcher.
    expect(
      JSON.stringify(resource(full, 'AWS::IAM::Policy', 'PollerFunctionRoleDefaultPolicy')[1]),
    ).not.toContain(dispatcherId);
    expect(actionsOn(statementsOfRole(full, 'PollerFunctionRole'), arnOf(pollerId))).toEqual([]);
    expect(actionsOn(statementsOfRole(full, 'DispatcherFunctionRole'), arnOf(dispatcherId))).toEqual([]);
  });

  it('keeps the poller off the orders table and queue reads, the consumer off the token, cursors and sends', () => {
    const poller = statementsOfRole(full, 'PollerFunctionRole');
    const consumer = statementsOfRole(full, 'ConsumerFunctionRole');
    const [ordersTableId] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');
    const [historyId] = resource(full, 'AWS::DynamoDB::Table', 'HistoryTable');
    const [queueId] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');

    // Which actions each role holds at all: 'IAM by action' below; here, on which resources.
    expect(actionsOn(poller, ordersTableId)).toEqual([]);
    expect(poller.flatMap(actionsOf)).not.toContain('sqs:ReceiveMessage'); // the platform's, the consumer's only
    expect(actionsOn(consumer, arnOf(ordersTableId))).toEqual(['dynamodb:PutItem']);
    expect(actionsOn(consumer, arnOf(historyId))).toEqual(['dynamodb:PutItem']);
    expect(actionsOn(consumer, arnOf(queueId))).toEqual(
      expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']),
    );
    expect(actionsOn(consumer, resource(full, 'AWS::DynamoDB::Table', 'CursorTable')[0])).toEqual([]);
  });

  it('uses no managed policies and no "*" but X-Ray’s and GetAccountSettings’ (the other wildcards: quarantine/, the token path)', () => {
    for (const [, role] of resources(full, 'AWS::IAM::Role')) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    const statements = resources(full, 'AWS::IAM::Policy').flatMap(
      ([, policy]) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
    );
    const wildcards = statements.filter((s) => JSON.stringify(s.Resource).includes('*'));
    const [bucketId] = resource(full, 'AWS::S3::Bucket', 'QuarantineBucket');
    expect(wildcards.filter((s) => s.Resource !== '*').map((s) => s.Resource)).toEqual(
      expect.arrayContaining([
        { 'Fn::Join': ['', [arnOf(bucketId), '/quarantine/*']] },
        parameterArn('order-feed-ingester/*'),
      ]),
    );
    // The quarantine prefix for the poller, the token path for the poller and the dispatcher.
    expect(wildcards.filter((s) => s.Resource !== '*')).toHaveLength(3);
    expect(statements.flatMap(actionsOf).filter((a) => a.includes('*'))).toEqual([]);
    // X-Ray's two write actions and GetAccountSettings take no resource-level permissions: "*" is their only form.
    for (const role of ['PollerFunctionRole', 'ConsumerFunctionRole']) {
      expect(statementsOfRole(full, role).filter((s) => s.Resource === '*')).toEqual([XRAY_WRITE]);
    }
    expect(statementsOfRole(full, 'DispatcherFunctionRole').filter((s) => s.Resource === '*')).toEqual([
      { ...XRAY_WRITE, Action: ['lambda:GetAccountSettings', ...XRAY_WRITE.Action] },
    ]);
  });
});

describe('IAM by action: each role holds exactly the AWS actions its code calls', () => {
  // moto runs every call whatever the role allows, so this compares the synthesized statements with the SDK
  // commands in each handler's bundle: esbuild's, tree-shaken as the deployed one is, our code only (the
  // packages left outside), so a command in a class the function never uses (the poller's token reader in the
  // dispatcher's graph) is not counted.
  const ROOT = fileURLToPath(new URL('../../', import.meta.url));
  /** IAM's name of an action whose SDK command is named otherwise (SQS batch actions take the single one's). */
  const ACTION_OF_COMMAND: Readonly<Record<string, string>> = {
    'sqs:SendMessageBatch': 'sqs:SendMessage',
    'lambda:Invoke': 'lambda:InvokeFunction',
  };
  /** GetParameter WithDecryption: SSM decrypts with the parameter's KMS key for the caller, who needs kms:Decrypt. */
  const LIBRARY_CALLS = [
    { pattern: /new GetParameterCommand\(\{[^}]*WithDecryption: true/, actions: ['kms:Decrypt'] },
  ];
  /**
   * Commands in a bundle that its function never sends: a method of a class it uses for others (tree-shaking
   * keeps a used class whole), each with the reason checked by reading the code.
   */
  const NEVER_SENT: Readonly<Record<string, Record<string, string>>> = {
    poller: {
      'dynamodb:Scan':
        "DynamoFeedRegistry.scan is the dispatcher's; the poller calls only its setState and endBatch",
    },
  };
  /** What the platform grants beside the code's calls: logs and traces, and the SQS event source's polling. */
  const PLATFORM_ACTIONS =
    /^(logs|xray):|^sqs:(ReceiveMessage|ChangeMessageVisibility|GetQueueUrl|DeleteMessage|GetQueueAttributes)$/;

  async function actionsCalledFrom(entry: string): Promise<string[]> {
    const result = await build({
      entryPoints: [entry],
      absWorkingDir: ROOT,
      bundle: true,
      write: false,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      outdir: 'unused',
      logLevel: 'silent',
    });
    const source = result.outputFiles.map((file) => file.text).join('\n');
    const clients = new Map<string, string>();
    for (const [, names, service] of source.matchAll(
      /import\s*\{([^}]*)\}\s*from\s*"@aws-sdk\/client-([a-z0-9-]+)"/g,
    )) {
      for (const name of (names ?? '').split(',')) {
        const [imported, local] = name.split(/\s+as\s+/).map((part) => part.trim());
        if (imported) clients.set(local ?? imported, service ?? '');
      }
    }
    const actions = new Set<string>();
    for (const [, command] of source.matchAll(/new (\w+)Command\(/g)) {
      const service = clients.get(`${command}Command`);
      expect(service, `${entry}: ${command}Command is imported from an @aws-sdk client`).toBeDefined();
      const action = `${service}:${command}`;
      actions.add(ACTION_OF_COMMAND[action] ?? action);
    }
    for (const call of LIBRARY_CALLS)
      if (call.pattern.test(source)) for (const a of call.actions) actions.add(a);
    return [...actions].sort();
  }

  it.each([
    [
      'poller',
      POLLER_ENTRY,
      'PollerFunctionRole',
      [
        'dynamodb:BatchGetItem',
        'dynamodb:UpdateItem',
        'sqs:SendMessage',
        's3:PutObject',
        'ssm:GetParameter',
        'lambda:InvokeFunction',
      ],
    ],
    [
      'dispatcher',
      DISPATCHER_ENTRY,
      'DispatcherFunctionRole',
      ['dynamodb:Scan', 'dynamodb:UpdateItem', 'lambda:InvokeFunction', 'lambda:GetAccountSettings'],
    ],
    ['consumer', CONSUMER_ENTRY, 'ConsumerFunctionRole', ['dynamodb:PutItem']],
  ])('the %s (DynamoDB, SQS, S3, SSM, KMS, Lambda)', async (name, entry, role, mustCall) => {
    const neverSent = Object.keys(NEVER_SENT[name] ?? {});
    const inBundle = await actionsCalledFrom(entry);
    expect(inBundle).toEqual(expect.arrayContaining(neverSent)); // each exception still needed
    const called = inBundle.filter((action) => !neverSent.includes(action));
    // FULL_CONFIG has a customer-managed token key, so the poller's kms:Decrypt is in the template.
    const granted = statementsOfRole(full, role)
      .flatMap(actionsOf)
      .filter((a) => !PLATFORM_ACTIONS.test(a));

    expect(called).toEqual(expect.arrayContaining(mustCall)); // the mapping is not vacuous
    expect([...new Set(granted)].sort()).toEqual(called);
  });
});

describe('monitoring', () => {
  // Every EMF series is this instance's: the stack's name and the construct's path.
  const INSTANCE = 'OrderFeedIngester/Default';
  const emf = (metricName: string) => ({
    Namespace: 'OrderFeedTest',
    MetricName: metricName,
    Dimensions: [
      { Name: 'Ingester', Value: INSTANCE },
      { Name: 'service', Value: 'order-feed-poller' },
    ],
  });

  it('creates one alarm per failure signal, plus two per downstream subscriber, each on a listed metric', () => {
    full.resourceCountIs('AWS::CloudWatch::Alarm', 21);
    minimal.resourceCountIs('AWS::CloudWatch::Alarm', 17);
    const alarms = resources(full, 'AWS::CloudWatch::Alarm').map(([, alarm]) => alarm.Properties);
    expect(alarms.map((alarm) => (alarm.MetricName as string | undefined) ?? 'metric math').sort()).toEqual(
      [
        M.RecordsQuarantined,
        M.OversizedRecords,
        M.MissingNextPageId,
        M.CursorRecoveries,
        M.StuckCursor,
        M.UnreadablePages,
        M.LongRateLimitHolds,
        M.StaleFeeds,
        M.StoppedFeeds,
        M.AuthFailingFeeds,
        M.UnregisteredFeeds,
        'Errors',
        'Errors',
        'Errors',
        ...Array(3).fill('ApproximateNumberOfMessagesVisible'),
        ...Array(3).fill('ApproximateAgeOfOldestMessage'),
        'metric math',
      ].sort(),
    );
    const listed: readonly string[] = Object.keys(M);
    for (const alarm of alarms.filter((a) => a.Namespace === 'OrderFeedTest')) {
      expect(listed, String(alarm.MetricName)).toContain(alarm.MetricName);
    }
  });

  it.each([M.RecordsQuarantined, M.OversizedRecords, M.MissingNextPageId, M.CursorRecoveries])(
    'alarms on any %s',
    (metricName) => {
      full.hasResourceProperties('AWS::CloudWatch::Alarm', {
        ...emf(metricName),
        Statistic: 'Sum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      });
    },
  );

  it('alarms on a stuck cursor (or a cycle) three runs in a row, unreadable pages two, long 429 holds two of three: periods at least the schedule', () => {
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...emf(M.StuckCursor),
      Threshold: 0,
      Period: 300,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
    });
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...emf(M.UnreadablePages),
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 2,
      DatapointsToAlarm: 2,
      Period: 300,
      TreatMissingData: 'notBreaching',
    });
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...emf(M.LongRateLimitHolds),
      Statistic: 'Sum',
      Threshold: 0,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      Period: 300,
    });
    // A stuck run ends its chain, so only the schedule runs again: with an hourly schedule (the highest edge),
    // three 5-minute periods in a row could never all hold a run.
    templateOf(CASES.highest).template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: M.StuckCursor,
      Period: 3600,
    });
  });

  it('alarms on the fleet by count: feeds stale (missing gauges breach: no dispatcher), stopped, failing auth, unregistered', () => {
    const gauge = (metricName: string) => ({
      Namespace: 'OrderFeedTest',
      MetricName: metricName,
      Dimensions: [
        { Name: 'Ingester', Value: INSTANCE },
        { Name: 'service', Value: 'order-feed-dispatcher' },
      ],
      Statistic: 'Maximum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });

    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...gauge(M.StaleFeeds),
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: 'breaching',
    });
    for (const metricName of [M.StoppedFeeds, M.AuthFailingFeeds, M.UnregisteredFeeds]) {
      full.hasResourceProperties('AWS::CloudWatch::Alarm', {
        ...gauge(metricName),
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      });
    }
    // Staleness is the dispatcher's judgement, at alarmLagMinutes: the gauge counts, the alarm rings on any.
    expect(
      variablesOf(resource(full, 'AWS::Lambda::Function', 'DispatcherFunction')[1]).STALE_AFTER_MINUTES,
    ).toBe(String(FULL_CONFIG.alarmLagMinutes));
  });

  it('has no per-feed alarm, metric dimension or dashboard row, whatever the initial set', () => {
    for (const template of [full, feeds, templateOf(MANY_FEEDS_CONFIG).template]) {
      const monitoring = JSON.stringify([
        template.findResources('AWS::CloudWatch::Alarm'),
        template.findResources('AWS::CloudWatch::Dashboard'),
      ]);
      expect(monitoring).not.toContain('FeedId');
      expect(monitoring).not.toMatch(/merchant-|"eu"|Feed eu/);
    }
    expect(resources(feeds, 'AWS::CloudWatch::Alarm')).toHaveLength(
      resources(minimal, 'AWS::CloudWatch::Alarm').length + 2, // feeds' stack: one subscriber's two alarms
    );
  });

  it('alarms on any dead letter, an old orders-queue message, the orders queue growing, and function errors', () => {
    for (const prefix of [
      'QueuesOrdersDeadLetterQueue',
      'QueuesDownstreamBillingDeadLetterQueue',
      'QueuesDownstreamAuditLogDeadLetterQueue',
    ]) {
      full.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queueNameOf(resource(full, 'AWS::SQS::Queue', prefix)[0]),
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
    const queueName = queueNameOf(resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue')[0]);
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: queueName,
      Threshold: 15 * 60,
    });
    const sqsSum = (id: string, metricName: string) =>
      Match.objectLike({
        Id: id,
        MetricStat: Match.objectLike({
          Metric: { Namespace: 'AWS/SQS', MetricName: metricName, Dimensions: queueName },
          Stat: 'Sum',
        }),
      });
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'sent - deleted' }),
        sqsSum('sent', 'NumberOfMessagesSent'),
        sqsSum('deleted', 'NumberOfMessagesDeleted'),
      ]),
    });
    for (const prefix of ['PollerFunction', 'DispatcherFunction', 'ConsumerFunction']) {
      full.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [
          { Name: 'FunctionName', Value: ref(resource(full, 'AWS::Lambda::Function', prefix)[0]) },
        ],
        Threshold: 0,
      });
    }
  });

  it('has a dashboard of the fleet, pages, versions, quarantine, apply outcomes, sales, queues and subscriber queue age', () => {
    const body = JSON.stringify(
      resource(full, 'AWS::CloudWatch::Dashboard', 'MonitoringDashboard')[1].Properties.DashboardBody,
    );

    for (const metricName of [
      M.PagesFetched,
      M.VersionsPublished,
      M.RecordsQuarantined,
      M.VersionsApplied,
      M.VersionsStale,
      M.SalesCounted,
      M.SalesReversed,
      M.SalesAmountChanged,
      'ApproximateNumberOfMessagesVisible',
      'ApproximateAgeOfOldestMessage',
    ]) {
      expect(body).toContain(`\\"${metricName}\\"`);
    }
    // The fleet from the dispatch's log line (every gauge; no metric of its own), its budget and the stale
    // threshold in the titles; the poller's warnings by feed as a log query.
    for (const gauge of [
      'enabled',
      'paused',
      'stopped',
      'removed',
      'unregistered',
      'stale',
      'authFailing',
      'failing',
      'behind',
      'runningPollers',
      'dispatchedPollers',
      'dueWaiting',
      'maxLagSeconds',
    ])
      expect(body).toContain(`max(gauges.${gauge}) as `);
    expect(body).toMatch(/feeds waiting for a slot \(budget \d+\)/);
    expect(body).toContain(`stale at ${FULL_CONFIG.alarmLagMinutes * 60}`);
    expect(body).toContain('stats count(*) as lines, latest(@timestamp) as last by feedId');
    // A run's duration is Lambda's own metric; each feed's pace and lag come from its outcome line.
    expect(body).toContain('\\"Duration\\"');
    expect(body).toContain('max(paceDelayMs) as slowestPaceMs, max(secondsSinceCaughtUp)');
    // One line per subscriber, with the alarm threshold.
    expect(body).toContain('Subscriber queues: age of oldest message');
    expect(body).toContain('\\"label\\":\\"billing\\"');
    expect(body).toContain('\\"label\\":\\"audit-log\\"');
    expect(body).toContain(`\\"value\\":${7 * DAY}`);
  });
});

describe('the saved query for one feed', () => {
  it('reads the poller’s log group by feedId, newest first, named under the instance', () => {
    const [, query] = resource(full, 'AWS::Logs::QueryDefinition', 'MonitoringFeedDetailQuery');

    expect(query.Properties).toEqual({
      Name: 'order-feed-ingester/OrderFeedIngester/Default/feed-detail',
      QueryString: [
        'fields @timestamp, level, message, kind, pages, versionsPublished, quarantined, secondsSinceCaughtUp, paceDelayMs, correlationId, error.message',
        '| filter feedId = "FEED_ID"',
        '| sort @timestamp desc',
        '| limit 200',
      ].join('\n'),
      LogGroupNames: [ref(resource(full, 'AWS::Logs::LogGroup', 'PollerFunctionLogGroup')[0])],
    });
  });
});

describe('alarm topic (alarms reach someone)', () => {
  it('notifies the configured topic on alarm and on recovery, subscribing alarmEmail to it', () => {
    for (const [, alarm] of resources(full, 'AWS::CloudWatch::Alarm')) {
      expect(alarm.Properties.AlarmActions).toEqual([FULL_CONFIG.alarmTopicArn]);
      expect(alarm.Properties.OKActions).toEqual([FULL_CONFIG.alarmTopicArn]);
    }
    full.resourceCountIs('AWS::SNS::Topic', 0);
    full.resourceCountIs('AWS::KMS::Key', 0);
    full.hasOutput('AlarmTopicArn', { Value: FULL_CONFIG.alarmTopicArn });
    full.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: FULL_CONFIG.alarmTopicArn,
    });
  });

  it('is the stack’s own without alarmTopicArn: KMS-encrypted with a rotated key, TLS only, output, alarmEmail subscribed', () => {
    const [keyId, key] = resource(minimal, 'AWS::KMS::Key', 'MonitoringAlarmTopicKey');
    const [topicId, topic] = resource(minimal, 'AWS::SNS::Topic', 'MonitoringAlarmTopic');
    resource(minimal, 'AWS::SNS::TopicPolicy', 'MonitoringAlarmTopicPolicy');

    expect(topic.Properties.KmsMasterKeyId).toEqual(arnOf(keyId));
    expect(key.Properties.EnableKeyRotation).toBe(true);
    for (const [, alarm] of resources(minimal, 'AWS::CloudWatch::Alarm')) {
      expect([alarm.Properties.AlarmActions, alarm.Properties.OKActions]).toEqual([
        [ref(topicId)],
        [ref(topicId)],
      ]);
    }
    const fromCloudWatch = {
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': ref('AWS::AccountId') } }),
    };
    minimal.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [ref(topicId)],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sns:Publish',
            Principal: '*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          Match.objectLike({ Effect: 'Allow', Action: 'sns:Publish', ...fromCloudWatch }),
        ]),
      },
    });
    // CloudWatch must be able to use the key: alarms cannot publish to a topic under alias/aws/sns.
    minimal.hasResourceProperties('AWS::KMS::Key', {
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
            ...fromCloudWatch,
          }),
        ]),
      },
    });
    minimal.hasOutput('AlarmTopicArn', { Value: ref(topicId) });
    minimal.resourceCountIs('AWS::SNS::Subscription', 0);
    throwaway.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: ref(resource(throwaway, 'AWS::SNS::Topic', 'MonitoringAlarmTopic')[0]),
    });
  });
});

/** The single-feed stack's logical ids and outputs now, and its resources' logical ids before the fleet. */
const FIXTURE = JSON.parse(
  readFileSync(new URL('../fixtures/single-feed-logical-ids.json', import.meta.url), 'utf8'),
) as { resources: string[]; outputs: string[]; before: string[] };

describe('stack', () => {
  it('names no physical resources (CloudFormation generates every name)', () => {
    const names = ['TableName', 'QueueName', 'BucketName', 'FunctionName', 'RoleName', 'LogGroupName'];
    const types = [
      'DynamoDB::Table',
      'SQS::Queue',
      'S3::Bucket',
      'Lambda::Function',
      'IAM::Role',
      'Logs::LogGroup',
    ];
    for (const type of [...types, 'CloudWatch::Alarm', 'CloudWatch::Dashboard', 'Events::Rule']) {
      for (const [id, found] of resources(full, `AWS::${type}`)) {
        for (const name of [...names, 'AlarmName', 'DashboardName', 'Name']) {
          expect(found.Properties?.[name], `${id}.${name}`).toBeUndefined();
        }
      }
    }
  });

  it('outputs every name and URL operators and tools look up, one pair per downstream subscriber', () => {
    // The outputs of the default stack: single-feed-logical-ids.json, below.
    const outputs = (template: Template) => Object.keys(template.toJSON().Outputs).sort();
    const subscribers = ['Billing', 'AuditLog'].flatMap((name) => [
      `DownstreamQueueUrl${name}`,
      `DownstreamDeadLetterQueueUrl${name}`,
    ]);

    expect(outputs(full)).toEqual([...outputs(minimal), ...subscribers].sort());
    full.hasOutput('OrdersQueueUrl', {
      Value: ref(resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue')[0]),
    });
  });

  it('has, without feeds, the logical ids and outputs listed in the fixture', () => {
    const template = minimal.toJSON();

    expect(Object.keys(template.Resources).sort()).toEqual(FIXTURE.resources);
    expect(Object.keys(template.Outputs).sort()).toEqual(FIXTURE.outputs);
  });

  it('keeps the stateful resources’ logical ids of a deployed stack, and the poller’s (updated in place)', () => {
    // What a single-feed stack deployed before the fleet has (test/fixtures/single-feed-logical-ids.json,
    // `before`): CloudFormation replaces a resource whose logical id moves, and a table, queue, bucket, key or
    // topic replaced is its data lost. Listed feeds' stacks had the same stateful ids.
    const stateful = FIXTURE.before.filter((id) =>
      /^(OrdersTable|HistoryTable|CursorTable|Quarantine|Queues|MonitoringAlarmTopic)/.test(id),
    );
    expect(stateful).toHaveLength(12);
    for (const template of [minimal, feeds, templateOf(MANY_FEEDS_CONFIG).template]) {
      expect(Object.keys(template.toJSON().Resources)).toEqual(expect.arrayContaining(stateful));
    }
    expect(FIXTURE.resources).toEqual(
      expect.arrayContaining(['PollerFunctionD1C91003', 'PollerFunctionRole8235B617']),
    );
  });

  it('names its stack from the stackName context, by default the name a deployed stack has', () => {
    const named = (stackName: string) =>
      buildApp({ context: { orderFeed: REQUIRED_CONFIG, stackName, 'aws:cdk:bundling-stacks': [] } }).stack;

    expect(templateOf(REQUIRED_CONFIG).stack.stackName).toBe(STACK_NAME);
    expect(named('OrderFeedIngester-staging').stackName).toBe('OrderFeedIngester-staging');
    expect(named('OrderFeedIngester-staging').ingester.instanceId).toBe('OrderFeedIngester-staging/Default');
    expect(() => named('bad name')).toThrow(/stackName: must be a CloudFormation stack name/);
  });

  it('pins every flag aws-cdk-lib recommends, at the recommended value, and applies them to the app', () => {
    expect(FEATURE_FLAGS).toEqual(CURRENTLY_RECOMMENDED_FLAGS);
    const { stack } = templateOf(REQUIRED_CONFIG);
    for (const [flag, value] of Object.entries(FEATURE_FLAGS)) {
      expect(stack.node.tryGetContext(flag), flag).toEqual(value);
    }
  });
});

describe('the initial set of feeds', () => {
  it('has the same resources for one feed and for a thousand, which synthesize', () => {
    const many = templateOf(MANY_FEEDS_CONFIG).template.toJSON();
    const one = minimal.toJSON();
    const shape = (template: Record<string, unknown>) =>
      Object.entries(template.Resources as Record<string, { Type: string }>)
        .map(([id, { Type }]) => `${id} ${Type}`)
        .sort();

    expect(Object.keys(many.Resources)).toHaveLength(Object.keys(one.Resources).length);
    expect(shape(many)).toEqual(shape(one));
    expect(parseInitialFeeds(initialFeedsOf(templateOf(MANY_FEEDS_CONFIG)))).toHaveLength(1000);
    // And the templates differ in nothing but the initial set's object key (the asset's hash of its content).
    const withoutInitialFeeds = (template: unknown) =>
      JSON.stringify(template).replace(/[0-9a-f]{64}\.json/g, '');
    expect(withoutInitialFeeds(many)).toBe(withoutInitialFeeds(one));
  });

  it('travels in the dispatcher’s asset as its cold start reads it: per feed its row, disabled ones paused', () => {
    const environment = environmentOf(feeds, 'DispatcherFunction');
    const text = initialFeedsOf(templateOf(FEEDS_CONFIG));
    const loaded = loadDispatcherConfig(environment, text);
    const config = parseConfig(FEEDS_CONFIG);

    expect(text).toBe(initialFeedsTextOf(config.feeds, config.partnerBaseUrl));
    expect(loaded.initialFeeds.map((feed) => [feed.feedId, feed.state, feed.config.vendorIds])).toEqual([
      ['eu', 'enabled', ['vendor-eu-1', 'vendor-eu-2']],
      ['uk', 'enabled', ['vendor-uk-1']],
      ['us.second-account', 'paused', undefined],
    ]);
    expect(loaded.initialFeeds[2]?.config).toMatchObject({
      partnerBaseUrl: 'https://us.partner.example.com',
      tokenParameterName: '/order-feed-ingester/us-token',
    });
    // The one poller's environment names no feed.
    expect(Object.keys(environmentOf(feeds, 'PollerFunction'))).toEqual(
      Object.keys(environmentOf(minimal, 'PollerFunction')),
    );
  });

  it('lets the poller decrypt with each initial feed’s key, and read a parameter outside the path only if listed', () => {
    const decrypt = statementsOfRole(feeds, 'PollerFunctionRole').filter((s) => s.Action === 'kms:Decrypt');
    expect(decrypt.map((s) => s.Resource)).toEqual([FEEDS_CONFIG.feeds[2].tokenKmsKeyArn]);

    const elsewhere = templateOf({
      ...REQUIRED_CONFIG,
      feeds: [{ id: 'a' }, { id: 'b', tokenParameterName: '/merchants/b/token' }],
    }).template;
    for (const role of ['PollerFunctionRole', 'DispatcherFunctionRole']) {
      const ssm = statementsOfRole(elsewhere, role).filter((s) => s.Action === 'ssm:GetParameter');
      expect(ssm).toHaveLength(1);
      expect(ssm[0]?.Resource).toEqual(
        expect.arrayContaining([parameterArn('order-feed-ingester/*'), parameterArn('merchants/b/token')]),
      );
      expect(ssm[0]?.Resource).toHaveLength(2);
    }
  });

  it('outputs the poller, the dispatcher and its rule and the token path, no per-feed output', () => {
    const outputs = Object.keys(feeds.toJSON().Outputs);

    expect(outputs).toEqual(
      expect.arrayContaining([
        'PollerFunctionName',
        'DispatcherFunctionName',
        'DispatchScheduleRuleName',
        'TokenParameterPath',
      ]),
    );
    expect(outputs.filter((name) => /Eu|Uk|FeedPollers|PollSchedule/.test(name))).toEqual([]);
    feeds.hasOutput('DispatcherFunctionName', {
      Value: ref(resource(feeds, 'AWS::Lambda::Function', 'DispatcherFunction')[0]),
    });
    feeds.hasOutput('TokenParameterPath', { Value: '/order-feed-ingester/' });
  });
});

describe('the AsyncAPI document’s SQS bindings', () => {
  it('show the stack’s queue settings at the configuration’s defaults', () => {
    const config = parseConfig(REQUIRED_CONFIG);
    for (const name of ['orders', 'downstream']) {
      const { queue, deadLetterQueue } = asyncapi.channels[name].bindings.sqs;
      expect(queue, name).toMatchObject({
        fifoQueue: false,
        visibilityTimeout: ordersQueueVisibilityTimeout(config).toSeconds(),
        messageRetentionPeriod: QUEUE_RETENTION.toSeconds(),
        redrivePolicy: { maxReceiveCount: config.maxReceiveCount },
      });
      expect(queue.redrivePolicy.deadLetterQueue.name).toBe(deadLetterQueue.name);
      expect(deadLetterQueue.messageRetentionPeriod, name).toBe(DEAD_LETTER_RETENTION.toSeconds());
    }
  });

  it('name each queue by the stack output that gives it', () => {
    const outputs = Object.keys(full.toJSON().Outputs);
    const names = Object.values<{ bindings: { sqs: Record<string, unknown> } }>(asyncapi.channels).flatMap(
      ({ bindings }) =>
        Object.values(bindings.sqs).flatMap((queue) => {
          const q = queue as { name?: string; redrivePolicy?: { deadLetterQueue: { name: string } } };
          return typeof queue === 'object' ? [q.name, q.redrivePolicy?.deadLetterQueue.name] : [];
        }),
    );

    for (const name of names.filter((candidate) => candidate !== undefined)) {
      const output = /^\{name in stack output (\w+)(<Subscriber>)?\}$/.exec(name as string);
      expect(output, name).not.toBeNull();
      expect(outputs, name).toContain(`${output?.[1]}${output?.[2] ? 'Billing' : ''}`);
    }
  });
});

// The configuration contract end to end: every setting at the lowest and the highest value its rule allows,
// and at its default, goes through synth into the template; the functions' cold-start loaders must accept
// exactly what the template carries, and both sides must refuse one step beyond each bound. A deployment-wide
// setting is a variable of the poller or the dispatcher; a feed's own arrives as the initial set
// (the asset INITIAL_FEEDS_OBJECT names), read back by the dispatcher's loader into registry rows.
type ContractKey = Exclude<keyof typeof RULES, 'metricsNamespace' | 'historyRetentionDays'>;
type DispatcherConfig = ReturnType<typeof loadDispatcherConfig>;
type InitialFeed = DispatcherConfig['initialFeeds'][number];

/** How a function reads each setting (a new rule fails to compile until it is placed here). */
type Reading =
  | { from: 'PollerFunction'; variable: string; value: (loaded: PollerConfig) => unknown }
  | { from: 'DispatcherFunction'; variable: string; value: (loaded: DispatcherConfig) => unknown }
  | { from: 'initial set'; rowKey?: string; value: (feed: InitialFeed) => unknown };
const poller = (variable: string, value: (loaded: PollerConfig) => unknown): Reading => ({
  from: 'PollerFunction',
  variable,
  value,
});
const row = (value: (feed: InitialFeed) => unknown, rowKey?: string): Reading => ({
  from: 'initial set',
  value,
  ...(rowKey === undefined ? {} : { rowKey }),
});
const READING: Record<ContractKey, Reading> = {
  partnerBaseUrl: poller('PARTNER_BASE_URL', (c) => c.partnerBaseUrl),
  maxPagesPerRun: poller('MAX_PAGES_PER_RUN', (c) => c.maxPagesPerRun),
  maxPageBodyBytes: poller('MAX_PAGE_BODY_BYTES', (c) => c.maxPageBodyBytes),
  arrayQueryEncoding: poller('ARRAY_QUERY_ENCODING', (c) => c.arrayQueryEncoding),
  cursorRecoveryLookbackMinutes: poller('CURSOR_RECOVERY_LOOKBACK_MINUTES', (c) => c.recoveryLookbackMinutes),
  partnerRequestsPerSecond: poller('PARTNER_REQUESTS_PER_SECOND', (c) => c.partnerRequestsPerSecond),
  maxConcurrentPollers: {
    from: 'DispatcherFunction',
    variable: 'MAX_CONCURRENT_POLLERS',
    value: (c) => c.dispatch.maxConcurrentPollers,
  },
  alarmLagMinutes: {
    from: 'DispatcherFunction',
    variable: 'STALE_AFTER_MINUTES',
    value: (c) => c.dispatch.staleAfterMs / 60_000,
  },
  feedId: row((feed) => feed.feedId),
  tokenParameterName: row((feed) => feed.config.tokenParameterName),
  vendorIds: row((feed) => feed.config.vendorIds),
  minAgeMinutes: row((feed) => feed.config.minAgeMinutes, 'minAgeMinutes'),
  pageSize: row((feed) => feed.config.pageSize, 'pageSize'),
  scheduleMinutes: row((feed) => feed.config.scheduleMinutes, 'scheduleMinutes'),
  enabled: row((feed) => feed.state === 'enabled'),
};
const CONTRACT_KEYS = Object.keys(READING) as ContractKey[];
/** The `orderFeed` key of a rule (the interval's key is `schedule`). */
const configKeyOf = (key: ContractKey): ConfigKey => (key === 'scheduleMinutes' ? 'schedule' : key);

/** The lowest and the highest value each bounded key accepts. */
const EDGES: Partial<Record<ConfigKey, readonly [lowest: unknown, highest: unknown]>> = {
  partnerBaseUrl: ['http://127.0.0.1:1', 'https://partner.example.com/test-pagination'],
  tokenParameterName: ['p', `/${'p'.repeat(1010)}`],
  tokenParameterPath: ['/t/', `/${'p'.repeat(998)}/`],
  feedId: ['f', `F${'x'.repeat(63)}`],
  schedule: [1, 60],
  pageSize: [1, 100],
  maxPageBodyBytes: [2 * 1024 * 1024, 64 * 1024 * 1024],
  maxPagesPerRun: [1, 100_000],
  maxConcurrentPollers: [1, 1000],
  minAgeMinutes: [1, 1440],
  vendorIds: [['v'], ['v-1', `V${'v'.repeat(127)}`]],
  enabled: [false, true],
  arrayQueryEncoding: ['repeat', 'comma'],
  cursorRecoveryLookbackMinutes: [1, 1_581_120],
  partnerRequestsPerSecond: [1, 10_000],
  downstreamSubscribers: [[], ['a', `s${'-x'.repeat(19)}x`]],
  subscriberRetentionDays: [1, 14],
  subscriberMaxAgeHours: [1, 335],
  maxReceiveCount: [1, 1000],
  consumerBatchSize: [1, 10_000],
  consumerMaxBatchingWindowSeconds: [0, 300],
  consumerMaxConcurrency: [2, 1000],
  alarmLagMinutes: [2, 1440],
  alarmQueueAgeMinutes: [1, 20_160],
  metricsNamespace: ['N', `N${'n'.repeat(254)}`],
  logRetentionDays: [1, 3653],
  removalPolicy: ['retain', 'destroy'],
  quarantineRetentionDays: [1, 3650],
  history: [false, true],
  historyRetentionDays: [0, 3650],
};
const EDGE_KEYS = Object.keys(EDGES) as ConfigKey[];
/** The keys that take one of a few values. */
const CHOSEN: ConfigKey[] = ['enabled', 'arrayQueryEncoding', 'removalPolicy', 'history'];
/** Variables a function gets that no setting declares: fixed by the constructs themselves. */
const FIXED_VARIABLES = ['POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_LOG_LEVEL', 'NODE_OPTIONS'];
const DECLARED_VARIABLES = Object.keys(ENVIRONMENT.shape);
const FUNCTIONS = ['PollerFunction', 'DispatcherFunction', 'ConsumerFunction'];

const atEdge = (edge: 0 | 1) => Object.fromEntries(EDGE_KEYS.map((key) => [key, EDGES[key]?.[edge]]));
const CASES = { defaults: { ...REQUIRED_CONFIG }, lowest: atEdge(0), highest: atEdge(1) };

/** A template value as the function would see it: CloudFormation references become placeholder strings. */
function rendered(value: unknown): string {
  if (typeof value === 'string') return value;
  const node = value as Record<string, unknown>;
  if (typeof node.Ref === 'string') return `placeholder-${node.Ref}`;
  if (Array.isArray(node['Fn::GetAtt'])) return `placeholder-${node['Fn::GetAtt'].join('.')}`;
  const sub = node['Fn::Sub'];
  if (typeof sub === 'string') return sub.replace(/\$\{[^}]+\}/g, 'placeholder');
  const join = node['Fn::Join'];
  if (Array.isArray(join)) {
    const [separator, parts] = join as [string, unknown[]];
    return parts.map(rendered).join(separator);
  }
  throw new Error(`no placeholder for ${JSON.stringify(value)}`);
}

/** The rendered environment of the one function whose logical id starts with `prefix`. */
/** The dispatcher's initial set as its cold start reads it: the text of the stack's file asset. */
/** The initial set as staged in the cloud assembly; the file synth wrote to stage it is gone (no temp left). */
function initialFeedsOf({ app, stack }: ReturnType<typeof templateOf>): string {
  const asset = stack.node
    .findAll()
    .find(
      (construct): construct is Asset => construct instanceof Asset && construct.node.id === 'InitialFeeds',
    );
  if (asset === undefined) throw new Error('no InitialFeeds asset');
  expect(existsSync((asset.node.findChild('Stage') as AssetStaging).sourcePath)).toBe(false);
  return readFileSync(join(app.outdir, asset.assetPath), 'utf8');
}

function environmentOf(template: Template, prefix: string): Record<string, string> {
  const [, fn] = resource(template, 'AWS::Lambda::Function', prefix);
  return Object.fromEntries(Object.entries(variablesOf(fn)).map(([name, value]) => [name, rendered(value)]));
}

describe.each(Object.entries(CASES))('synthesized at the %s of every setting', (_edge, raw) => {
  const template = () => templateOf(raw).template;

  it('gives the poller and the dispatcher environments their cold starts accept, with the values synth validated', () => {
    const expected = parseConfig(raw);
    const loaded = {
      PollerFunction: loadPollerConfig(environmentOf(template(), 'PollerFunction')),
      DispatcherFunction: loadDispatcherConfig(
        environmentOf(template(), 'DispatcherFunction'),
        initialFeedsOf(templateOf(raw)),
      ),
    };
    const [initialFeed] = loaded.DispatcherFunction.initialFeeds;
    const feed = expected.feeds[0] as Record<string, unknown> | undefined;

    for (const key of CONTRACT_KEYS) {
      const reading = READING[key];
      const configKey = configKeyOf(key);
      const synthValue =
        configKey === 'feedId'
          ? feed?.id
          : (FEED_KEYS as readonly string[]).includes(configKey) && configKey !== 'partnerBaseUrl'
            ? feed?.[configKey]
            : (expected as unknown as Record<string, unknown>)[configKey];
      const read =
        reading.from === 'initial set'
          ? reading.value(initialFeed as InitialFeed)
          : reading.from === 'PollerFunction'
            ? reading.value(loaded.PollerFunction)
            : reading.value(loaded.DispatcherFunction);
      expect(read, key).toEqual(synthValue);
    }
    expect(loaded.DispatcherFunction.initialFeeds).toHaveLength(1);
    expect(Object.keys(loaded.PollerFunction.downstreamQueueUrls)).toEqual(expected.downstreamSubscribers);
  });

  it('gives the consumer an environment its cold start accepts, and refuses history retention beyond bounds', () => {
    const environment = environmentOf(template(), 'ConsumerFunction');
    const loaded = loadConsumerConfig(environment);

    expect(loaded.ordersTableName).toMatch(/^placeholder-OrdersTable/);
    const { history, historyRetentionDays } = parseConfig(raw);
    expect(loaded.history?.tableName ?? 'none').toMatch(history ? /^placeholder-HistoryTable/ : /^none$/);
    if (history) expect(loaded.history?.retentionDays).toBe(historyRetentionDays);
    for (const days of ['-1', '3651']) {
      expect(() => loadConsumerConfig({ ...environment, HISTORY_RETENTION_DAYS: days })).toThrow(
        'configuration error: HISTORY_RETENTION_DAYS must be an integer from 0 to 3650',
      );
    }
  });

  it('gives every function the metrics namespace synth validated, and only variables a setting declares', () => {
    const environments = FUNCTIONS.map((prefix) => environmentOf(template(), prefix));

    for (const environment of environments) {
      expect(readMetricsNamespace(environment)).toBe(parseConfig(raw).metricsNamespace);
    }
    const written = environments.flatMap(Object.keys);
    expect(
      written.filter((name) => !DECLARED_VARIABLES.includes(name) && !FIXED_VARIABLES.includes(name)),
    ).toEqual([]);
  });
});

describe('settings and variables', () => {
  it('every variable the functions read is one the stack writes from a documented key', () => {
    // At the highest edge every optional key is set, so every variable a key feeds is written.
    const { template } = templateOf(CASES.highest);
    const written = new Set(FUNCTIONS.flatMap((p) => Object.keys(environmentOf(template, p))));

    expect(DECLARED_VARIABLES.filter((name) => !written.has(name))).toEqual([]);
  });

  const ranged = EDGE_KEYS.flatMap((key) => {
    const [lowest, highest] = EDGES[key] ?? [];
    return typeof lowest === 'number' && typeof highest === 'number'
      ? [[key, lowest - 1, highest + 1] as const]
      : [];
  });
  const readingOf = (key: ConfigKey) =>
    CONTRACT_KEYS.filter((contractKey) => configKeyOf(contractKey) === key).map(
      (contractKey) => READING[contractKey],
    )[0];

  /** The function's environment with one variable, or the initial set's one row's key, set to `value`. */
  function refusedByColdStart(reading: Reading, value: unknown): () => unknown {
    if (reading.from === 'initial set') {
      const feeds = initialFeedsText({ tokenParameterName: '/t' }, [
        { id: 'f', [reading.rowKey ?? '']: value },
      ]);
      return () => loadDispatcherConfig(environmentOf(minimal, 'DispatcherFunction'), feeds);
    }
    const environment = { ...environmentOf(minimal, reading.from), [reading.variable]: String(value) };
    return reading.from === 'PollerFunction'
      ? () => loadPollerConfig(environment)
      : () => loadDispatcherConfig(environment);
  }

  it('cover every integer and every choice the functions read', () => {
    const covered: string[] = [...ranged.map(([key]) => key), ...CHOSEN];

    expect(CONTRACT_KEYS.filter((key) => !covered.includes(configKeyOf(key))).sort()).toEqual([
      'feedId',
      'partnerBaseUrl',
      'tokenParameterName',
      'vendorIds',
    ]);
  });

  it.each(ranged)('synth and the cold start refuse orderFeed.%s at %i and %i', (key, below, above) => {
    const reading = readingOf(key);
    for (const value of [below, above]) {
      expect(() => parseConfig({ ...REQUIRED_CONFIG, [key]: value })).toThrow(`orderFeed.${key}: must be`);
      if (reading === undefined) continue;
      const where =
        reading.from === 'initial set'
          ? `INITIAL_FEEDS_OBJECT feeds[0].${reading.rowKey}:`
          : reading.variable;
      expect(refusedByColdStart(reading, value)).toThrow(
        `configuration error: ${where} must be an integer from`,
      );
    }
  });

  it.each(CHOSEN)('synth and the cold start refuse orderFeed.%s outside its choices', (key) => {
    expect(() => parseConfig({ ...REQUIRED_CONFIG, [key]: 'not-a-choice' })).toThrow(
      `orderFeed.${key}: must be one of`,
    );
    const reading = readingOf(key);
    // `enabled` travels as a row's state (`paused`), not as a value the cold start could misread.
    if (reading === undefined || reading.from === 'initial set') return;
    expect(refusedByColdStart(reading, 'not-a-choice')).toThrow(
      `configuration error: ${reading.variable} must be one of`,
    );
  });
});

/** The token path's wildcard as cdk-nag names it. */
const TOKEN_PATH_FINDING =
  'arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter/order-feed-ingester/*';

function nagViolations(scope: App): string[] {
  return new AwsSolutionsChecks()
    .validateScope(scope)
    .violations.map((v) => `${v.severity} ${v.ruleName} at ${v.violatingResources[0]?.constructPath}`);
}

describe('cdk-nag AWS Solutions checks and cfn-lint', () => {
  const CONFIGS = { full: FULL_CONFIG, feeds: FEEDS_CONFIG, throwaway: THROWAWAY_CONFIG };

  it.each(Object.entries(CONFIGS))(
    'report nothing for the %s stack, in the app and in its cloud assembly',
    (_name, config) => {
      const { app } = templateOf(config);

      expect(nagViolations(app)).toEqual([]);
      const report = JSON.parse(readFileSync(join(app.outdir, 'validation-report.json'), 'utf8')) as {
        pluginReports: { violations?: unknown[] }[];
      };
      expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
    },
  );

  it('acknowledge only the expected findings, each with a reason', () => {
    const found = templateOf(FULL_CONFIG)
      .app.node.findAll()
      .flatMap((construct) =>
        construct.node.metadata
          .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          .flatMap((entry) =>
            Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
              key: `${construct.node.path} ${id.replace(/^annotation::/i, '')}`,
              reason,
            })),
          ),
      );

    expect(found.map((ack) => ack.key).sort()).toEqual(
      [
        'OrderFeedIngester/Default/Consumer/Function AwsSolutions-L1',
        'OrderFeedIngester/Default/Consumer/FunctionRole AwsSolutions-IAM5[Resource::*]',
        'OrderFeedIngester/Default/Dispatcher/Function AwsSolutions-L1',
        'OrderFeedIngester/Default/Dispatcher/FunctionRole AwsSolutions-IAM5[Resource::*]',
        `OrderFeedIngester/Default/Dispatcher/FunctionRole AwsSolutions-IAM5[Resource::${TOKEN_PATH_FINDING}]`,
        'OrderFeedIngester/Default/Poller/Function AwsSolutions-L1',
        'OrderFeedIngester/Default/Poller/FunctionRole AwsSolutions-IAM5[Resource::*]',
        'OrderFeedIngester/Default/Poller/FunctionRole AwsSolutions-IAM5[Resource::<QuarantineBucket2B128B57.Arn>/quarantine/*]',
        `OrderFeedIngester/Default/Poller/FunctionRole AwsSolutions-IAM5[Resource::${TOKEN_PATH_FINDING}]`,
        'OrderFeedIngester/Default/Quarantine/Bucket AwsSolutions-S1',
      ].sort(),
    );
    for (const ack of found) expect(ack.reason.length, `${ack.key} reason`).toBeGreaterThan(40);
  });

  it('fail the synth of the app when a finding is not acknowledged', () => {
    const { app, stack } = buildApp({
      context: { orderFeed: REQUIRED_CONFIG, 'aws:cdk:bundling-stacks': [] },
    });
    new Queue(stack, 'UnguardedQueue'); // no DLQ, no TLS-only policy

    expect(() => app.synth({ force: true })).toThrow(/AwsSolutions-SQS(3|4)/);
  });

  it('cfn-lint finds nothing in the templates (one feed, three feeds, throwaway)', () => {
    // CDK idioms are suppressed in infra/cfn-lint.yaml.
    const templates = Object.values(CONFIGS).flatMap((config) => {
      const { outdir } = templateOf(config).app;
      return readdirSync(outdir)
        .filter((file) => file.endsWith('.template.json'))
        .map((file) => join(outdir, file));
    });
    expect(templates).toHaveLength(3);

    const configFile = fileURLToPath(new URL('../../infra/cfn-lint.yaml', import.meta.url));
    const result = spawnSync('cfn-lint', ['--config-file', configFile, '--', ...templates], {
      encoding: 'utf8',
    });

    expect(result.error).toBeUndefined();
    expect(`${result.stdout}${result.stderr}`).toBe('');
    expect(result.status).toBe(0);
  });
});

describe('OrderFeedIngester in a platform team’s own app', () => {
  /** A foreign app: its own stack name, and bundling skipped (as `cdk synth --exclusively` would). */
  function platformApp() {
    const app = new App({ context: { ...FEATURE_FLAGS, 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'PlatformServices', {
      env: { account: '123456789012', region: 'eu-west-1' },
    });
    return { app, stack };
  }
  const PROPS = {
    partnerBaseUrl: 'https://partner.example.com',
    tokenParameterName: '/platform/partner-token',
  };

  it('synthesizes beside their resources with cdk-nag clean, granting a subscriber its queue and readers the tables', () => {
    const { app, stack } = platformApp();
    const ingester = new OrderFeedIngester(stack, 'PartnerOrders', {
      ...PROPS,
      downstreamSubscribers: ['billing'],
      feeds: [
        { id: 'eu', vendorIds: ['v-eu'] },
        { id: 'uk', vendorIds: ['v-uk'] },
      ],
    });
    expect(nagViolations(app)).toEqual([]);
    // Their own role (their nag findings, not ours):
    const role = new Role(stack, 'BillingRole', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    ingester.grantConsumeMessages('billing', role);
    ingester.grantReadOrders(role);
    ingester.grantReadHistory(role);

    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 3); // orders, cursor, history
    expect(ingester.config.feeds.map((feed) => feed.id)).toEqual(['eu', 'uk']);
    expect(
      Object.keys(template.findResources('AWS::Lambda::Function')).every((id) =>
        id.startsWith('PartnerOrders'),
      ),
    ).toBe(true);
    const policy = Object.values(template.findResources('AWS::IAM::Policy')).find((p) =>
      JSON.stringify(p.Properties.Roles).includes('BillingRole'),
    );
    const statements = JSON.stringify(policy?.Properties.PolicyDocument.Statement);
    const idOf = (arn: string) => stack.resolve(arn)['Fn::GetAtt'][0];
    expect(statements).toContain('sqs:ReceiveMessage');
    expect(statements).toContain(idOf(ingester.subscriberQueue('billing').queueArn));
    expect(statements).toContain('dynamodb:Query');
    expect(statements).toContain(idOf(ingester.ordersTable.table.tableArn));
    expect(statements).toContain(idOf(ingester.historyTable?.table.tableArn ?? ''));
    expect(() => ingester.subscriberQueue('audit')).toThrow(
      /no downstream subscriber "audit" \(subscribers: billing\)/,
    );
  });

  it('types and checks its props as the configuration keys: required, bounded with units, no unknown ones', () => {
    expectTypeOf<(typeof PROP_KEYS)[keyof OrderFeedIngesterProps]>().toEqualTypeOf<ConfigKey>();
    expectTypeOf<(typeof PROP_KEYS)[Exclude<keyof FeedProps, 'id'>]>().toEqualTypeOf<
      (typeof FEED_KEYS)[number]
    >();
    // At run time too: the keys the construct checks are the keys SETTINGS declares.
    expect(new Set(Object.values(PROP_KEYS))).toEqual(new Set(Object.keys(SETTINGS)));
    const { stack } = platformApp();

    // @ts-expect-error partnerBaseUrl and tokenParameterName are required
    expect(() => new OrderFeedIngester(stack, 'A', {})).toThrow(/partnerBaseUrl: is required/);
    expect(
      () => new OrderFeedIngester(stack, 'B', { ...PROPS, pageSize: 500, minAge: Duration.seconds(90) }),
    ).toThrow(
      /Invalid OrderFeedIngester props:\n {2}- pageSize: must be an integer from 1 to 100[\s\S]*- minAge \(in minutes\): /,
    );
    // A context key is not a prop (from JavaScript).
    const props = { ...PROPS, alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops' };
    expect(() => new OrderFeedIngester(stack, 'C', props)).toThrow(
      /- alarmTopicArn: unknown prop \(accepted: partnerBaseUrl, .*alarmTopic,/,
    );
  });

  it('takes CDK types (an ITopic, Durations) and scopes every metric of two instances to its own instance', () => {
    const { stack } = platformApp();
    const topic = new Topic(stack, 'OpsAlerts');
    const first = new OrderFeedIngester(stack, 'First', {
      ...PROPS,
      alarmTopic: topic,
      alarmLag: Duration.hours(1),
    });
    const second = new OrderFeedIngester(stack, 'Second', PROPS);

    const alarms = Object.entries(Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm'));
    const stale = alarms.find(([id]) => id.startsWith('FirstMonitoringFeedsStaleAlarm'))?.[1];
    expect(stale?.Properties.AlarmActions).toEqual([
      ref(stack.getLogicalId(topic.node.defaultChild as never)),
    ]);
    const dispatcher = stack.resolve(
      (first.dispatcher.function.node.defaultChild as CfnFunction).environment,
    );
    expect(dispatcher.variables.STALE_AFTER_MINUTES).toBe('60');
    expect(first.instanceId).toBe('PlatformServices/First');
    const dimensionsOf = (prefix: string) =>
      alarms
        .filter(([id, alarm]) => id.startsWith(prefix) && alarm.Properties.Namespace === 'OrderFeedIngester')
        .map(([, alarm]) => JSON.stringify(alarm.Properties.Dimensions));
    expect(dimensionsOf('First').length).toBeGreaterThan(5);
    expect(dimensionsOf('First').every((d) => d.includes('"PlatformServices/First"'))).toBe(true);
    expect(dimensionsOf('Second').every((d) => d.includes('"PlatformServices/Second"'))).toBe(true);
    const environment = stack.resolve(
      (second.consumer.function.node.defaultChild as CfnFunction).environment,
    );
    expect(environment.variables.INGESTER_INSTANCE).toBe('PlatformServices/Second');
  });
});
