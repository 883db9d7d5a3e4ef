// The order-feed-ingester stack: stateful resources first (their logical ids must never change, or
// CloudFormation would replace them and their data), then the stateless functions, schedule and monitoring.
import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { type OrderFeedConfig, pascalCase } from './config.js';
import { Consumer, ordersQueueVisibilityTimeout } from './constructs/consumer.js';
import { CursorTable } from './constructs/cursor-table.js';
import { Monitoring } from './constructs/monitoring.js';
import { OrderQueues } from './constructs/order-queues.js';
import { OrdersTable } from './constructs/orders-table.js';
import { Poller } from './constructs/poller.js';
import { QuarantineBucket } from './constructs/quarantine-bucket.js';
import { PollSchedule } from './constructs/schedule.js';

export interface OrderFeedIngesterStackProps extends StackProps {
  readonly config: OrderFeedConfig;
}

export class OrderFeedIngesterStack extends Stack {
  constructor(scope: Construct, id: string, props: OrderFeedIngesterStackProps) {
    super(scope, id, props);
    const { config } = props;
    const removalPolicy = config.removalPolicy === 'retain' ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logRetention = config.logRetentionDays as RetentionDays;

    // ---- Stateful: data that outlives deployments (retained, recoverable, encrypted at rest) ----------
    const ordersTable = new OrdersTable(this, 'OrdersTable', { removalPolicy });
    const cursorTable = new CursorTable(this, 'CursorTable', { removalPolicy });
    const quarantine = new QuarantineBucket(this, 'Quarantine', { removalPolicy });
    const queues = new OrderQueues(this, 'Queues', {
      subscribers: config.downstreamSubscribers,
      maxReceiveCount: config.maxReceiveCount,
      ordersVisibilityTimeout: ordersQueueVisibilityTimeout(config),
      subscriberVisibilityTimeout: ordersQueueVisibilityTimeout(config),
      removalPolicy,
    });

    // ---- Stateless: code, wiring and monitoring (safe to replace at any deployment) ------------------
    const poller = new Poller(this, 'Poller', {
      config,
      cursorTable,
      queues,
      quarantine,
      logRetention,
      removalPolicy,
    });
    const schedule = new PollSchedule(this, 'PollSchedule', {
      target: poller.function,
      interval: config.scheduleInterval,
    });
    const consumer = new Consumer(this, 'Consumer', {
      config,
      ordersTable,
      ordersQueue: queues.orders.queue,
      logRetention,
      removalPolicy,
    });
    const monitoring = new Monitoring(this, 'Monitoring', {
      config,
      poller: poller.function,
      consumer: consumer.function,
      queues,
    });

    // ---- Outputs: what operators, local tooling and tests look up -------------------------------------
    const output = (id: string, value: string, description: string) =>
      new CfnOutput(this, id, { value, description });
    output(
      'OrdersTableName',
      ordersTable.table.tableName,
      'Orders table (latest version per order + sales ledger)',
    );
    output('CursorTableName', cursorTable.table.tableName, 'Cursor and lease per feed');
    output('QuarantineBucketName', quarantine.bucket.bucketName, 'Quarantined partner records (quarantine/)');
    output('OrdersQueueUrl', queues.orders.queue.queueUrl, 'Orders queue read by the consumer');
    output(
      'OrdersDeadLetterQueueUrl',
      queues.orders.deadLetterQueue.queueUrl,
      'Dead-letter queue of the orders queue',
    );
    for (const [name, pair] of queues.subscribers) {
      const suffix = pascalCase(name);
      output(`DownstreamQueueUrl${suffix}`, pair.queue.queueUrl, `Queue of downstream subscriber "${name}"`);
      output(
        `DownstreamDeadLetterQueueUrl${suffix}`,
        pair.deadLetterQueue.queueUrl,
        `Dead-letter queue of downstream subscriber "${name}"`,
      );
    }
    output('PollerFunctionName', poller.function.functionName, 'Poller function');
    output('ConsumerFunctionName', consumer.function.functionName, 'Consumer function');
    output('PollScheduleRuleName', schedule.rule.ruleName, 'EventBridge rule that runs the poller');
    output('DashboardName', monitoring.dashboard.dashboardName, 'CloudWatch dashboard');
  }
}
