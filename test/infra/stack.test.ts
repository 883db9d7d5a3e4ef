// Template assertions for OrderFeedIngesterStack: one synth per configuration, shared by all tests.
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FULL_CONFIG, REQUIRED_CONFIG, synthStack } from './synth.js';

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

let full: Template;
let minimal: Template;

beforeAll(() => {
  full = synthStack(FULL_CONFIG).template;
  minimal = synthStack(REQUIRED_CONFIG).template;
});

/** The one resource of `type` whose logical id starts with `prefix`. */
function resource(template: Template, type: string, prefix: string): [string, Resource] {
  const matches = Object.entries(template.findResources(type) as Record<string, Resource>).filter(([id]) =>
    id.startsWith(prefix),
  );
  expect(
    matches.map(([id]) => id),
    `${type} ${prefix}*`,
  ).toHaveLength(1);
  return matches[0] as [string, Resource];
}

function ref(logicalId: string) {
  return { Ref: logicalId };
}
function arnOf(logicalId: string) {
  return { 'Fn::GetAtt': [logicalId, 'Arn'] };
}

function statementsOfRole(template: Template, rolePrefix: string): Statement[] {
  const [roleId] = resource(template, 'AWS::IAM::Role', rolePrefix);
  return Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Resource>)
    .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([ref(roleId)]))
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

function actionsOn(statements: Statement[], resourceValue: unknown): string[] {
  return statements
    .filter((s) => JSON.stringify(s.Resource).includes(JSON.stringify(resourceValue)))
    .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
}

/** What CDK grants a function with active tracing. */
const XRAY_WRITE = {
  Effect: 'Allow',
  Action: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'],
  Resource: '*',
};

function allActions(statements: Statement[]): string[] {
  return statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
}

describe('orders table', () => {
  it('is keyed by orderId (N), on demand, with PITR and deletion protection, retained', () => {
    const [, table] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');

    expect(table.Properties).toMatchObject({
      KeySchema: [{ AttributeName: 'orderId', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'orderId', AttributeType: 'N' },
        { AttributeName: 'saleKey', AttributeType: 'S' },
      ]),
    );
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
  });

  it('has the sparse salesByVendor index: saleKey (S) / orderId (N), projecting saleAmount and vendorId', () => {
    const [, table] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');

    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'salesByVendor',
        KeySchema: [
          { AttributeName: 'saleKey', KeyType: 'HASH' },
          { AttributeName: 'orderId', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['saleAmount', 'vendorId'] },
      },
    ]);
  });

  it('is encrypted at rest with the AWS-owned key (SSEEnabled false selects it; KMS keys would say true)', () => {
    const [, table] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');

    expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: false });
  });
});

describe('history table', () => {
  it('is keyed by orderId (N) and version (N), on demand, with PITR, TTL on expiresAt, retained', () => {
    const [, table] = resource(full, 'AWS::DynamoDB::Table', 'HistoryTable');

    expect(table.Properties).toMatchObject({
      KeySchema: [
        { AttributeName: 'orderId', KeyType: 'HASH' },
        { AttributeName: 'version', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'orderId', AttributeType: 'N' },
        { AttributeName: 'version', AttributeType: 'N' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
    expect(table.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(table.DeletionPolicy).toBe('Retain');
  });

  it('has no TTL with historyRetentionDays 0, and is not there with history false', () => {
    const forever = synthStack({ ...REQUIRED_CONFIG, historyRetentionDays: 0 }).template;
    const off = synthStack({ ...REQUIRED_CONFIG, history: false }).template;

    expect(
      resource(forever, 'AWS::DynamoDB::Table', 'HistoryTable')[1].Properties.TimeToLiveSpecification,
    ).toBe(undefined);
    expect(
      Object.keys(off.findResources('AWS::DynamoDB::Table')).some((id) => id.startsWith('History')),
    ).toBe(false);
    expect(Object.keys(off.toJSON().Outputs)).not.toContain('HistoryTableName');
    const [, consumer] = resource(off, 'AWS::Lambda::Function', 'ConsumerFunction');
    expect(Object.keys((consumer.Properties.Environment as { Variables: object }).Variables)).not.toContain(
      'HISTORY_TABLE_NAME',
    );
  });

  it('gives the consumer PutItem on it and nothing else', () => {
    const [historyId] = resource(full, 'AWS::DynamoDB::Table', 'HistoryTable');

    expect(actionsOn(statementsOfRole(full, 'ConsumerFunction'), arnOf(historyId))).toEqual([
      'dynamodb:PutItem',
    ]);
  });
});

describe('cursor table', () => {
  it('is keyed by feedId (S), on demand, with PITR and deletion protection, retained, and no other index', () => {
    const [, table] = resource(full, 'AWS::DynamoDB::Table', 'CursorTable');

    expect(table.Properties).toMatchObject({
      KeySchema: [{ AttributeName: 'feedId', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'feedId', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(table.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(table.DeletionPolicy).toBe('Retain');
  });
});

describe('quarantine bucket', () => {
  it('blocks public access, encrypts with SSE-S3, is versioned and retained', () => {
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
  });

  it('denies requests without TLS', () => {
    full.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });
});

describe('queues', () => {
  it('creates the orders queue and one queue per downstream subscriber, each with a DLQ', () => {
    full.resourceCountIs('AWS::SQS::Queue', 6);
    minimal.resourceCountIs('AWS::SQS::Queue', 2);
  });

  it.each([
    ['QueuesOrdersQueue', 'QueuesOrdersDeadLetterQueue'],
    ['QueuesDownstreamBillingQueue', 'QueuesDownstreamBillingDeadLetterQueue'],
    ['QueuesDownstreamAuditLogQueue', 'QueuesDownstreamAuditLogDeadLetterQueue'],
  ])(
    '%s: SQS-managed SSE, redrive to its DLQ after maxReceiveCount, DLQ kept 14 days',
    (queuePrefix, dlqPrefix) => {
      const [, queue] = resource(full, 'AWS::SQS::Queue', queuePrefix);
      const [dlqId, dlq] = resource(full, 'AWS::SQS::Queue', dlqPrefix);

      expect(queue.Properties).toMatchObject({
        SqsManagedSseEnabled: true,
        RedrivePolicy: { deadLetterTargetArn: arnOf(dlqId), maxReceiveCount: FULL_CONFIG.maxReceiveCount },
      });
      expect(dlq.Properties).toMatchObject({
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 14 * 24 * 3600,
      });
      expect(queue.DeletionPolicy).toBe('Retain');
      expect(dlq.DeletionPolicy).toBe('Retain');
    },
  );

  it('gives the orders queue a visibility timeout of 6 × consumer timeout + batching window', () => {
    const [, queue] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');
    const [, consumer] = resource(full, 'AWS::Lambda::Function', 'ConsumerFunction');

    const timeout = consumer.Properties.Timeout as number;
    expect(queue.Properties.VisibilityTimeout).toBe(
      6 * timeout + FULL_CONFIG.consumerMaxBatchingWindowSeconds,
    );
  });

  it('denies non-TLS access on every queue', () => {
    const policies = Object.values(full.findResources('AWS::SQS::QueuePolicy') as Record<string, Resource>);
    expect(policies).toHaveLength(6);
    for (const policy of policies) {
      expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
    }
  });
});

describe('functions', () => {
  it.each(['PollerFunction', 'ConsumerFunction'])(
    '%s: Node.js 22 on ARM64, JSON logs to its own log group',
    (prefix) => {
      const [, fn] = resource(full, 'AWS::Lambda::Function', prefix);
      const [logGroupId, logGroup] = resource(full, 'AWS::Logs::LogGroup', `${prefix}LogGroup`);

      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        LoggingConfig: { LogFormat: 'JSON', LogGroup: ref(logGroupId) },
      });
      expect(
        (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables.NODE_OPTIONS,
      ).toBe('--enable-source-maps');
      expect(logGroup.Properties.RetentionInDays).toBe(30);
    },
  );

  it.each(['PollerFunction', 'ConsumerFunction'])('%s: X-Ray active tracing', (prefix) => {
    for (const template of [full, minimal]) {
      const [, fn] = resource(template, 'AWS::Lambda::Function', prefix);

      expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
    }
  });

  it('runs the poller for up to 2 minutes with 512 MB, reserving no concurrency (deploys on a fresh account)', () => {
    const [, poller] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');

    expect(poller.Properties).toMatchObject({ Timeout: 120, MemorySize: 512 });
    // Lambda keeps 100 executions unreserved: any reservation fails on an account with a quota of 10.
    for (const fn of Object.values(full.findResources('AWS::Lambda::Function') as Record<string, Resource>)) {
      expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    }
  });

  it('gives the poller memory for its page body cap: a page can take ~36 × the cap', () => {
    const large = synthStack({ ...REQUIRED_CONFIG, maxPageBodyBytes: 64 * 1024 * 1024 }).template;
    const [, poller] = resource(large, 'AWS::Lambda::Function', 'PollerFunction');

    expect(poller.Properties).toMatchObject({ MemorySize: 2496 });
    expect(poller.Properties.Environment).toMatchObject({ Variables: { MAX_PAGE_BODY_BYTES: '67108864' } });
  });

  it('sets exactly the poller environment the handler reads', () => {
    const [, poller] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');
    const [cursorId] = resource(full, 'AWS::DynamoDB::Table', 'CursorTable');
    const [ordersQueueId] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');
    const [billingId] = resource(full, 'AWS::SQS::Queue', 'QueuesDownstreamBillingQueue');
    const [auditId] = resource(full, 'AWS::SQS::Queue', 'QueuesDownstreamAuditLogQueue');
    const [bucketId] = resource(full, 'AWS::S3::Bucket', 'QuarantineBucket');

    expect((poller.Properties.Environment as { Variables: unknown }).Variables).toEqual({
      FEED_ID: 'partner-orders',
      CURSOR_TABLE_NAME: ref(cursorId),
      PARTNER_BASE_URL: 'https://partner.example.com',
      PARTNER_TOKEN_PARAMETER: '/order-feed-ingester/partner-token',
      ORDERS_QUEUE_URL: ref(ordersQueueId),
      DOWNSTREAM_QUEUE_URLS: {
        'Fn::Join': ['', ['{"billing":"', ref(billingId), '","audit-log":"', ref(auditId), '"}']],
      },
      QUARANTINE_BUCKET_NAME: ref(bucketId),
      PAGE_SIZE: '50',
      MAX_PAGES_PER_RUN: '30',
      MAX_PAGE_BODY_BYTES: '8388608',
      MAX_CONTINUATIONS: '1000',
      MIN_AGE_MINUTES: '60',
      VENDOR_IDS: 'vendor-1,vendor-2',
      FEED_ENABLED: 'true',
      ARRAY_QUERY_ENCODING: 'comma',
      CURSOR_RECOVERY_LOOKBACK_MINUTES: '120',
      POWERTOOLS_SERVICE_NAME: 'order-feed-poller',
      POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedTest',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      INGESTER_INSTANCE: 'OrderFeedIngester/Default',
      NODE_OPTIONS: '--enable-source-maps',
    });
  });

  it('omits the optional poller variables when unset and sends {} as DOWNSTREAM_QUEUE_URLS without subscribers', () => {
    const [, poller] = resource(minimal, 'AWS::Lambda::Function', 'PollerFunction');
    const variables = (poller.Properties.Environment as { Variables: Record<string, unknown> }).Variables;

    expect(Object.keys(variables).sort()).toEqual(
      [
        'FEED_ID',
        'CURSOR_TABLE_NAME',
        'PARTNER_BASE_URL',
        'PARTNER_TOKEN_PARAMETER',
        'ORDERS_QUEUE_URL',
        'DOWNSTREAM_QUEUE_URLS',
        'QUARANTINE_BUCKET_NAME',
        'PAGE_SIZE',
        'MAX_PAGE_BODY_BYTES',
        'MAX_CONTINUATIONS',
        'FEED_ENABLED',
        'ARRAY_QUERY_ENCODING',
        'POWERTOOLS_SERVICE_NAME',
        'POWERTOOLS_METRICS_NAMESPACE',
        'POWERTOOLS_LOG_LEVEL',
        'INGESTER_INSTANCE',
        'NODE_OPTIONS',
      ].sort(),
    );
    expect(variables).toMatchObject({
      DOWNSTREAM_QUEUE_URLS: '{}',
      PAGE_SIZE: '100',
      MAX_CONTINUATIONS: '1000',
      FEED_ENABLED: 'true',
      ARRAY_QUERY_ENCODING: 'repeat',
      POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedIngester',
    });
  });

  it('sets exactly the consumer environment the handler reads', () => {
    const [, consumer] = resource(full, 'AWS::Lambda::Function', 'ConsumerFunction');
    const [ordersTableId] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');
    const [historyTableId] = resource(full, 'AWS::DynamoDB::Table', 'HistoryTable');

    expect((consumer.Properties.Environment as { Variables: unknown }).Variables).toEqual({
      ORDERS_TABLE_NAME: ref(ordersTableId),
      HISTORY_TABLE_NAME: ref(historyTableId),
      HISTORY_RETENTION_DAYS: '400',
      POWERTOOLS_SERVICE_NAME: 'order-feed-consumer',
      POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedTest',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      INGESTER_INSTANCE: 'OrderFeedIngester/Default',
      NODE_OPTIONS: '--enable-source-maps',
    });
  });

  it("lets the poller's self-continuation chain run past Lambda's 16-hop loop detection, and only the poller", () => {
    const [, poller] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');
    const [, consumer] = resource(full, 'AWS::Lambda::Function', 'ConsumerFunction');

    expect(poller.Properties.RecursiveLoop).toBe('Allow');
    expect(consumer.Properties.RecursiveLoop).toBeUndefined();
  });

  it('does not retry a failed poller run and drops ticks older than one interval', () => {
    const [pollerId] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');

    full.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: ref(pollerId),
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 300,
    });
  });
});

describe('schedule', () => {
  it('invokes the poller on the configured rate', () => {
    const [pollerId] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');
    const [, rule] = resource(full, 'AWS::Events::Rule', 'PollScheduleRule');

    expect(rule.Properties).toMatchObject({
      ScheduleExpression: 'rate(5 minutes)',
      State: 'ENABLED',
      Targets: [
        { Arn: arnOf(pollerId), RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 300 } },
      ],
    });
    full.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: arnOf(pollerId),
    });
  });
});

describe('consumer event source', () => {
  it('reads the orders queue with partial batch responses and the configured batching', () => {
    const [consumerId] = resource(full, 'AWS::Lambda::Function', 'ConsumerFunction');
    const [queueId] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');

    full.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    full.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: ref(consumerId),
      EventSourceArn: arnOf(queueId),
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: 5,
      ScalingConfig: { MaximumConcurrency: 3 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });
});

describe('IAM', () => {
  it('gives the poller cursor access, SendMessage to every queue, PutObject under quarantine/ and the token', () => {
    const statements = statementsOfRole(full, 'PollerFunctionRole');
    const [cursorId] = resource(full, 'AWS::DynamoDB::Table', 'CursorTable');
    const [bucketId] = resource(full, 'AWS::S3::Bucket', 'QuarantineBucket');
    const queueIds = [
      'QueuesOrdersQueue',
      'QueuesDownstreamBillingQueue',
      'QueuesDownstreamAuditLogQueue',
    ].map((prefix) => resource(full, 'AWS::SQS::Queue', prefix)[0]);

    expect(actionsOn(statements, arnOf(cursorId))).toEqual(['dynamodb:UpdateItem']);
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'sqs:SendMessage',
      // The recommended feature flags list a statement's resources in sorted order.
      Resource: [...queueIds].sort().map(arnOf),
    });
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 's3:PutObject',
      Resource: { 'Fn::Join': ['', [arnOf(bucketId), '/quarantine/*']] },
    });
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'ssm:GetParameter',
      Resource: {
        'Fn::Join': [
          '',
          [
            'arn:',
            ref('AWS::Partition'),
            ':ssm:',
            ref('AWS::Region'),
            ':',
            ref('AWS::AccountId'),
            ':parameter/order-feed-ingester/partner-token',
          ],
        ],
      },
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

  it('does not let the poller touch the orders table or read queues', () => {
    const statements = statementsOfRole(full, 'PollerFunctionRole');
    const [ordersTableId] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');

    expect(actionsOn(statements, ordersTableId)).toEqual([]);
    expect(allActions(statements).filter((a) => a.startsWith('dynamodb:'))).not.toContain('dynamodb:Query');
    expect(allActions(statements)).not.toContain('sqs:ReceiveMessage');
    expect(allActions(statements)).not.toContain('s3:GetObject');
  });

  it('gives the consumer single-item access to the orders table and consume rights on its queue only', () => {
    const statements = statementsOfRole(full, 'ConsumerFunctionRole');
    const [ordersTableId] = resource(full, 'AWS::DynamoDB::Table', 'OrdersTable');
    const [queueId] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');

    expect(actionsOn(statements, arnOf(ordersTableId))).toEqual(['dynamodb:PutItem']);
    expect(actionsOn(statements, arnOf(queueId))).toEqual(
      expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']),
    );
  });

  it('does not let the consumer read the token, the cursor table, or send messages', () => {
    const statements = statementsOfRole(full, 'ConsumerFunctionRole');
    const [cursorId] = resource(full, 'AWS::DynamoDB::Table', 'CursorTable');
    const actions = allActions(statements);

    expect(
      actions.filter((a) => a.startsWith('ssm:') || a.startsWith('kms:') || a.startsWith('s3:')),
    ).toEqual([]);
    expect(actions).not.toContain('sqs:SendMessage');
    expect(actionsOn(statements, cursorId)).toEqual([]);
  });

  it('lets the poller invoke only itself (self-continuation), from a policy of its own', () => {
    const [fnId, fn] = resource(full, 'AWS::Lambda::Function', 'PollerFunction');
    const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const invokes = Object.values(full.findResources('AWS::IAM::Policy') as Record<string, Resource>).flatMap(
      (policy) =>
        (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement.filter(
          (statement) => statement.Action === 'lambda:InvokeFunction',
        ).map((statement) => ({ statement, roles: policy.Properties.Roles })),
    );
    expect(invokes).toEqual([
      {
        statement: { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: arnOf(fnId) },
        roles: [ref(roleId)],
      },
    ]);
  });

  it('uses no managed policies and no "*" resources but X-Ray\'s (the other wildcard is the quarantine/ key prefix)', () => {
    for (const role of Object.values(full.findResources('AWS::IAM::Role') as Record<string, Resource>)) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    const statements = Object.values(
      full.findResources('AWS::IAM::Policy') as Record<string, Resource>,
    ).flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
    const wildcards = statements.filter((s) => JSON.stringify(s.Resource).includes('*'));
    // X-Ray's two write actions take no resource-level permissions: "*" is their only form.
    const [xray, others] = [
      wildcards.filter((s) => s.Resource === '*'),
      wildcards.filter((s) => s.Resource !== '*'),
    ];
    expect(xray).toEqual([XRAY_WRITE, XRAY_WRITE]);
    expect(others.map((s) => JSON.stringify(s.Resource))).toEqual([
      expect.stringContaining('"/quarantine/*"'),
    ]);
    expect(allActions(statements).filter((a) => a.includes('*'))).toEqual([]);
  });

  it.each([['PollerFunctionRole'], ['ConsumerFunctionRole']])(
    'lets %s write trace segments and telemetry (X-Ray), and nothing else on "*"',
    (rolePrefix) => {
      const statements = statementsOfRole(full, rolePrefix);

      expect(statements.filter((s) => s.Resource === '*')).toEqual([XRAY_WRITE]);
    },
  );
});

describe('monitoring', () => {
  // Every EMF series is this instance's: the stack's name and the construct's path.
  const INSTANCE = 'OrderFeedIngester/Default';
  const emfAlarm = (metricName: string, service: string) => ({
    Namespace: 'OrderFeedTest',
    MetricName: metricName,
    Dimensions: [
      { Name: 'Ingester', Value: INSTANCE },
      { Name: 'service', Value: service },
    ],
  });

  it('creates one alarm per failure signal, plus two per downstream subscriber (dead letters, oldest message)', () => {
    full.resourceCountIs('AWS::CloudWatch::Alarm', 18);
    minimal.resourceCountIs('AWS::CloudWatch::Alarm', 14);
    const metricNames = Object.values(
      full.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>,
    )
      .map((alarm) => (alarm.Properties.MetricName as string | undefined) ?? 'metric math')
      .sort();
    expect(metricNames).toEqual(
      [
        'AuthFailures',
        'RecordsQuarantined',
        'OversizedRecords',
        'MissingNextPageId',
        'CursorRecoveries',
        'StuckCursor',
        'UnreadablePages',
        'OrderOverBodyCap',
        'SecondsSinceCaughtUp',
        'Errors',
        'Errors',
        'ApproximateNumberOfMessagesVisible',
        'ApproximateNumberOfMessagesVisible',
        'ApproximateNumberOfMessagesVisible',
        'ApproximateAgeOfOldestMessage',
        'ApproximateAgeOfOldestMessage',
        'ApproximateAgeOfOldestMessage',
        'metric math',
      ].sort(),
    );
  });

  it.each([
    'AuthFailures',
    'RecordsQuarantined',
    'OversizedRecords',
    'MissingNextPageId',
    'CursorRecoveries',
    'OrderOverBodyCap',
  ])('alarms on any %s', (metricName) => {
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...emfAlarm(metricName, 'order-feed-poller'),
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms on a stuck cursor (or a cursor cycle) in three runs in a row: periods no shorter than the schedule', () => {
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...emfAlarm('StuckCursor', 'order-feed-poller'),
      Threshold: 0,
      Period: 300,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
    });
    // A stuck run ends its chain, so only the schedule runs again: with a 15-minute schedule, three
    // 5-minute periods in a row could never all hold a run.
    synthStack({ ...REQUIRED_CONFIG, schedule: 15 }).template.hasResourceProperties(
      'AWS::CloudWatch::Alarm',
      {
        MetricName: 'StuckCursor',
        Period: 900,
      },
    );
  });

  it('alarms on unreadable pages only when they repeat: two periods running, each at least a schedule interval', () => {
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...emfAlarm('UnreadablePages', 'order-feed-poller'),
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 2,
      DatapointsToAlarm: 2,
      Period: 300,
      TreatMissingData: 'notBreaching',
    });
  });

  it("alarms on the feed's lag above the threshold, treating missing data as breaching", () => {
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'OrderFeedTest',
      MetricName: 'SecondsSinceCaughtUp',
      Dimensions: [
        { Name: 'FeedId', Value: 'partner-orders' },
        { Name: 'Ingester', Value: INSTANCE },
        { Name: 'service', Value: 'order-feed-poller' },
      ],
      Statistic: 'Maximum',
      Threshold: 30 * 60,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'breaching',
    });
  });

  it.each([
    'QueuesOrdersDeadLetterQueue',
    'QueuesDownstreamBillingDeadLetterQueue',
    'QueuesDownstreamAuditLogDeadLetterQueue',
  ])('alarms on any message in %s', (prefix) => {
    const [dlqId] = resource(full, 'AWS::SQS::Queue', prefix);
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms when the oldest orders-queue message is older than alarmQueueAgeMinutes', () => {
    const [queueId] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      Threshold: 15 * 60,
    });
  });

  it('alarms when the orders queue grows (sent - deleted > 0) in three consecutive periods', () => {
    const [queueId] = resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue');
    const queueName = [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }];
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'sent - deleted' }),
        Match.objectLike({
          Id: 'sent',
          MetricStat: Match.objectLike({
            Metric: { Namespace: 'AWS/SQS', MetricName: 'NumberOfMessagesSent', Dimensions: queueName },
            Stat: 'Sum',
          }),
        }),
        Match.objectLike({
          Id: 'deleted',
          MetricStat: Match.objectLike({
            Metric: { Namespace: 'AWS/SQS', MetricName: 'NumberOfMessagesDeleted', Dimensions: queueName },
            Stat: 'Sum',
          }),
        }),
      ]),
    });
  });

  it.each(['PollerFunction', 'ConsumerFunction'])('alarms on any %s error', (prefix) => {
    const [fnId] = resource(full, 'AWS::Lambda::Function', prefix);
    full.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: ref(fnId) }],
      Threshold: 0,
    });
  });

  it('notifies the configured topic on alarm and on recovery, and its own topic when none is configured', () => {
    for (const alarm of Object.values(
      full.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>,
    )) {
      expect(alarm.Properties.AlarmActions).toEqual([FULL_CONFIG.alarmTopicArn]);
      expect(alarm.Properties.OKActions).toEqual([FULL_CONFIG.alarmTopicArn]);
    }
    full.resourceCountIs('AWS::SNS::Topic', 0);
    const [topicId] = resource(minimal, 'AWS::SNS::Topic', 'MonitoringAlarmTopic');
    for (const alarm of Object.values(
      minimal.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>,
    )) {
      expect(alarm.Properties.AlarmActions).toEqual([ref(topicId)]);
      expect(alarm.Properties.OKActions).toEqual([ref(topicId)]);
    }
  });

  it('has a dashboard showing pages, versions, quarantine, apply outcomes, sales, queue depth and age, and lag', () => {
    const [, dashboard] = resource(full, 'AWS::CloudWatch::Dashboard', 'MonitoringDashboard');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);

    for (const metricName of [
      'PagesFetched',
      'VersionsPublished',
      'RecordsQuarantined',
      'VersionsApplied',
      'VersionsStale',
      'SalesCounted',
      'SalesReversed',
      'SalesAmountChanged',
      'ApproximateNumberOfMessagesVisible',
      'ApproximateAgeOfOldestMessage',
      'SecondsSinceCaughtUp',
    ]) {
      expect(body).toContain(`\\"${metricName}\\"`);
    }
  });
});

describe('stack', () => {
  it('names no physical resources (CloudFormation generates every name)', () => {
    const nameProperties = [
      'TableName',
      'QueueName',
      'BucketName',
      'FunctionName',
      'RoleName',
      'LogGroupName',
      'AlarmName',
      'DashboardName',
      'Name',
    ];
    for (const type of [
      'AWS::DynamoDB::Table',
      'AWS::SQS::Queue',
      'AWS::S3::Bucket',
      'AWS::Lambda::Function',
      'AWS::IAM::Role',
      'AWS::Logs::LogGroup',
      'AWS::CloudWatch::Alarm',
      'AWS::CloudWatch::Dashboard',
      'AWS::Events::Rule',
    ]) {
      for (const found of Object.values(full.findResources(type) as Record<string, Resource>)) {
        for (const property of nameProperties)
          expect(found.Properties?.[property], `${type}.${property}`).toBeUndefined();
      }
    }
  });

  it('outputs every name and URL operators and tools look up, one pair per downstream subscriber', () => {
    expect(Object.keys(full.toJSON().Outputs).sort()).toEqual(
      [
        'OrdersTableName',
        'HistoryTableName',
        'CursorTableName',
        'QuarantineBucketName',
        'OrdersQueueUrl',
        'OrdersDeadLetterQueueUrl',
        'DownstreamQueueUrlBilling',
        'DownstreamDeadLetterQueueUrlBilling',
        'DownstreamQueueUrlAuditLog',
        'DownstreamDeadLetterQueueUrlAuditLog',
        'PollerFunctionName',
        'ConsumerFunctionName',
        'PollScheduleRuleName',
        'FeedPollers',
        'DashboardName',
        'AlarmTopicArn',
      ].sort(),
    );
    expect(Object.keys(minimal.toJSON().Outputs)).not.toContain('DownstreamQueueUrlBilling');
    full.hasOutput('OrdersQueueUrl', {
      Value: ref(resource(full, 'AWS::SQS::Queue', 'QueuesOrdersQueue')[0]),
    });
  });

  it('can be made disposable: removalPolicy "destroy" drops retention and deletion protection', () => {
    const disposable = synthStack({ ...REQUIRED_CONFIG, removalPolicy: 'destroy' }).template;
    const [, table] = resource(disposable, 'AWS::DynamoDB::Table', 'OrdersTable');

    expect(table.DeletionPolicy).toBe('Delete');
    expect(table.Properties.DeletionProtectionEnabled).toBe(false);
  });
});
