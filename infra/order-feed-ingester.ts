// The whole ingester as one construct: stateful resources first (their logical ids must never change, or
// CloudFormation would replace them and their data), then the one poller, the dispatcher that runs it for
// every due feed, the consumer and monitoring, and the outputs operators and tools look up. Feeds are rows of
// the cursor table, not resources: the same resources serve 1 feed or 10,000 (`feeds` is only the initial
// set, in the dispatcher's environment). This repository's stack (stack.ts) is one user; a platform team adds
// it to its own CDK app the same way (README "Use it in your own CDK app").
//
// Logical ids: this repository's stack creates it with the id `Default`, which CDK leaves out of logical ids,
// so the resources keep the ids they had before the construct existed and an existing deployment updates in
// place. The poller keeps the single feed's id (`Poller`), so a single-feed stack updates its function in place;
// a stack of listed feeds loses its `Poller<Id>` functions and `PollSchedule<Id>` rules, and every feed's cursor
// item becomes its registry row (infra/README.md, "A fleet of feeds").
import { CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { Grant, IGrantable } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type OrderFeedConfig, pascalCase } from './config.js';
import { configFromProps } from './config-props.js';
import { Consumer, ordersQueueVisibilityTimeout } from './constructs/consumer.js';
import { CursorTable } from './constructs/cursor-table.js';
import { Dispatcher } from './constructs/dispatcher.js';
import { HistoryTable } from './constructs/history-table.js';
import { Monitoring } from './constructs/monitoring.js';
import { OrderQueues } from './constructs/order-queues.js';
import { OrdersTable } from './constructs/orders-table.js';
import { Poller } from './constructs/poller.js';
import { QuarantineBucket } from './constructs/quarantine-bucket.js';
import { TokenParameters } from './constructs/token-parameters.js';
import type { OrderFeedIngesterProps } from './props.js';

export type { FeedProps, OrderFeedIngesterProps } from './props.js';

export class OrderFeedIngester extends Construct {
  /** The validated configuration (props with defaults applied). */
  readonly config: OrderFeedConfig;
  readonly ordersTable: OrdersTable;
  /** Every order version once per (orderId, version); absent when `history` is off. */
  readonly historyTable: HistoryTable | undefined;
  /** Every feed's cursor, lease and registry row; the token budgets and the dispatch lock. */
  readonly cursorTable: CursorTable;
  readonly quarantine: QuarantineBucket;
  readonly queues: OrderQueues;
  /** The one poller function of every feed. */
  readonly poller: Poller;
  /** Runs the poller for due feeds every minute (and when a poller asks). */
  readonly dispatcher: Dispatcher;
  readonly consumer: Consumer;
  readonly monitoring: Monitoring;

  /**
   * What this instance's functions publish as the `Ingester` dimension of every metric, and its alarms and
   * dashboard select: the stack's name and the construct's path in it, so two instances in one account and region
   * never watch each other's metrics.
   */
  readonly instanceId: string;

  /** Throws a PropsError naming every invalid prop. */
  constructor(scope: Construct, id: string, props: OrderFeedIngesterProps) {
    super(scope, id);
    const config = configFromProps(props);
    this.config = config;
    const stack = Stack.of(this);
    this.instanceId = [
      stack.stackName,
      ...this.node.scopes.slice(stack.node.scopes.length).map((c) => c.node.id),
    ].join('/');
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;

    // ---- Stateful: data that outlives deployments (retained, recoverable, encrypted at rest) ----------
    this.ordersTable = new OrdersTable(this, 'OrdersTable', { removalPolicy });
    this.historyTable = config.history
      ? new HistoryTable(this, 'HistoryTable', { removalPolicy, retentionDays: config.historyRetentionDays })
      : undefined;
    this.cursorTable = new CursorTable(this, 'CursorTable', { removalPolicy });
    this.quarantine = new QuarantineBucket(this, 'Quarantine', {
      removalPolicy,
      retention: Duration.days(config.quarantineRetentionDays),
    });
    this.queues = new OrderQueues(this, 'Queues', {
      subscribers: config.downstreamSubscribers,
      maxReceiveCount: config.maxReceiveCount,
      ordersVisibilityTimeout: ordersQueueVisibilityTimeout(config),
      subscriberVisibilityTimeout: ordersQueueVisibilityTimeout(config),
      subscriberRetention: Duration.days(config.subscriberRetentionDays),
      removalPolicy,
    });

    // ---- Stateless: code, wiring and monitoring (safe to replace at any deployment) ------------------
    const tokenParameters = new TokenParameters(this, config);
    this.poller = new Poller(this, 'Poller', {
      config,
      cursorTable: this.cursorTable,
      queues: this.queues,
      quarantine: this.quarantine,
      tokenParameters,
      instanceId: this.instanceId,
      logRetention,
      removalPolicy,
    });
    this.dispatcher = new Dispatcher(this, 'Dispatcher', {
      config,
      cursorTable: this.cursorTable,
      poller: this.poller.function,
      tokenParameters,
      instanceId: this.instanceId,
      logRetention,
      removalPolicy,
    });
    this.poller.allowDispatchRequests(this.dispatcher.function);
    this.consumer = new Consumer(this, 'Consumer', {
      config,
      ordersTable: this.ordersTable,
      ...(this.historyTable ? { historyTable: this.historyTable } : {}),
      ordersQueue: this.queues.orders.queue,
      instanceId: this.instanceId,
      logRetention,
      removalPolicy,
    });
    this.monitoring = new Monitoring(this, 'Monitoring', {
      config,
      poller: this.poller.function,
      pollerLogGroup: this.poller.function.logGroup,
      dispatcher: this.dispatcher.function,
      dispatcherLogGroup: this.dispatcher.function.logGroup,
      consumer: this.consumer.function,
      queues: this.queues,
      instanceId: this.instanceId,
      alarmTopic: props.alarmTopic,
      removalPolicy,
    });
    this.addOutputs();
  }

  /** The queue of a downstream subscriber (`downstreamSubscribers`), for its consumer's event source. */
  subscriberQueue(name: string): IQueue {
    const pair = this.queues.subscribers.get(name);
    if (pair === undefined) {
      const known = [...this.queues.subscribers.keys()].join(', ') || 'none';
      throw new Error(`${this.node.path}: no downstream subscriber "${name}" (subscribers: ${known})`);
    }
    return pair.queue;
  }

  /** Receive, delete and change visibility on a subscriber's queue: what a consumer function of it needs. */
  grantConsumeMessages(subscriber: string, grantee: IGrantable): Grant {
    return this.subscriberQueue(subscriber).grantConsumeMessages(grantee);
  }

  /** Read access (get, query, scan) to the orders table and its indexes, for a service that reads orders. */
  grantReadOrders(grantee: IGrantable): Grant {
    return this.ordersTable.table.grantReadData(grantee);
  }

  /** Read access to the order history table; throws when `history` is off. */
  grantReadHistory(grantee: IGrantable): Grant {
    if (this.historyTable === undefined)
      throw new Error(`${this.node.path}: history is off, there is no history table`);
    return this.historyTable.table.grantReadData(grantee);
  }

  /** What operators, local tooling, `npm run ops` and the tests look up. */
  private addOutputs(): void {
    const { config, queues } = this;
    const output = (id: string, value: string, description: string) =>
      new CfnOutput(this, id, { value, description });
    output(
      'OrdersTableName',
      this.ordersTable.table.tableName,
      'Orders table (latest version per order + sales ledger)',
    );
    if (this.historyTable) {
      output(
        'HistoryTableName',
        this.historyTable.table.tableName,
        'Order history (every version once per order id and version)',
      );
    }
    output(
      'CursorTableName',
      this.cursorTable.table.tableName,
      'Feed registry: cursor, lease, configuration and state per feed',
    );
    output(
      'QuarantineBucketName',
      this.quarantine.bucket.bucketName,
      'Quarantined partner records (quarantine/)',
    );
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
    output('PollerFunctionName', this.poller.function.functionName, 'Poller function (every feed)');
    output(
      'DispatcherFunctionName',
      this.dispatcher.function.functionName,
      'Dispatcher function: invoke it (asynchronously) to dispatch due feeds now',
    );
    output(
      'DispatchScheduleRuleName',
      this.dispatcher.schedule.ruleName,
      'EventBridge rule that runs the dispatcher every minute',
    );
    output(
      'TokenParameterPath',
      config.tokenParameterPath,
      'SSM path the poller may read token parameters under (feeds added at runtime)',
    );
    output('ConsumerFunctionName', this.consumer.function.functionName, 'Consumer function');
    output('DashboardName', this.monitoring.dashboard.dashboardName, 'CloudWatch dashboard');
    output(
      'AlarmTopicArn',
      this.monitoring.alarmTopic.topicArn,
      'SNS topic of every alarm (ALARM and OK notifications): alarmTopicArn, or the stack’s own',
    );
  }
}
