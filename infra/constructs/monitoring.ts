// Stateless: alarms, the dashboard and the saved Logs Insights query. Business metrics come from the functions'
// Powertools EMF output (namespace from config, dimensions `service` and `Ingester`, the instance, so two
// instances in one account never watch each other; no per-feed dimension); queue and function health from AWS's
// own metrics. Nothing here grows with the number of feeds: the fleet is watched through the dispatcher's
// gauges (how many feeds are stale, stopped, failing auth, …, one value each per dispatch), and one feed's
// detail is its log lines (the query `feed-detail`), its registry row (`npm run ops -- status FEED`).
import { ArnFormat, Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  LogQueryVisualizationType,
  LogQueryWidget,
  MathExpression,
  Metric,
  SingleValueWidget,
  Stats,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { type ILogGroup, QueryDefinition, QueryString } from 'aws-cdk-lib/aws-logs';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import {
  type ConsumerCountName,
  FLEET_GAUGES,
  INGESTER_DIMENSION,
  type PollerMetricName,
} from '../../functions/core/observability/metric-names.js';
import { type OrderFeedConfig, pascalCase } from '../config.js';
import { CONSUMER_SERVICE_NAME } from './consumer.js';
import { DISPATCHER_SERVICE_NAME } from './dispatcher.js';
import type { OrderQueues } from './order-queues.js';
import { POLLER_SERVICE_NAME } from './poller.js';

const PERIOD = Duration.minutes(5);

type FleetGaugeName = (typeof FLEET_GAUGES)[keyof typeof FLEET_GAUGES];

/** The saved Logs Insights query for one feed's log lines, under the instance's folder. */
export const FEED_DETAIL_QUERY = 'feed-detail';

export interface MonitoringProps {
  readonly config: OrderFeedConfig;
  readonly poller: IFunction;
  /** The poller's log group: the saved query for one feed reads it. */
  readonly pollerLogGroup: ILogGroup;
  readonly dispatcher: IFunction;
  /** The dispatcher's log group: the dashboard charts the fleet from its `dispatched` lines. */
  readonly dispatcherLogGroup: ILogGroup;
  readonly consumer: IFunction;
  readonly queues: OrderQueues;
  /** The instance's `Ingester` dimension, which every metric of its functions carries (so alarms see only its own). */
  readonly instanceId: string;
  /** Where alarms notify; unset: a topic of its own. */
  readonly alarmTopic?: ITopic | undefined;
  /** Of the alarm topic's key, when the construct creates its own topic. */
  readonly removalPolicy: RemovalPolicy;
}

export class Monitoring extends Construct {
  readonly alarms: Alarm[] = [];
  readonly dashboard: Dashboard;
  /** Where every alarm's ALARM and OK notifications go: `alarmTopicArn`, or a topic of its own. */
  readonly alarmTopic: ITopic;
  /** One feed's log lines in the poller's log group (replace the feed id in its filter). */
  readonly feedDetailQuery: QueryDefinition;
  private readonly namespace: string;
  private readonly instanceId: string;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { config, queues } = props;
    this.namespace = config.metricsNamespace;
    this.instanceId = props.instanceId;
    // Typed by the functions' list of names (metric-names.ts): a renamed metric fails the build, never an alarm.
    const poller = (name: PollerMetricName, statistic: string = Stats.SUM, period: Duration = PERIOD) =>
      this.metric(POLLER_SERVICE_NAME, name, statistic, period);
    const gauge = (name: FleetGaugeName, label?: string) =>
      this.metric(DISPATCHER_SERVICE_NAME, name, Stats.MAXIMUM, PERIOD, label);
    // A period that holds at least one run of each feed of the initial set, for alarms that need several runs
    // in a row (feeds added at runtime at a longer interval are slower to ring).
    const longestInterval = Math.max(...config.feeds.map((feed) => feed.schedule));
    const runPeriod = Duration.minutes(Math.max(5, longestInterval));
    const consumer = (name: ConsumerCountName) => this.metric(CONSUMER_SERVICE_NAME, name, Stats.SUM);

    // Something a person must look at: any occurrence alarms.
    // A refused token and an order over the body cap each alarm once, by the feeds they leave failing or
    // stopped (AuthFailingFeeds, StoppedFeeds, below): an alarm on the poller's count as well said it twice.
    this.anyAlarm(
      'RecordsQuarantined',
      poller('RecordsQuarantined'),
      'Partner records failed validation and were quarantined.',
    );
    this.anyAlarm(
      'OversizedRecords',
      poller('OversizedRecords'),
      'Partner records exceeded the SQS message size and were quarantined.',
    );
    this.anyAlarm(
      'MissingNextPageId',
      poller('MissingNextPageId'),
      'The partner answered hasMore without a nextPageId (pagination rule 1): the page was kept, the run ended; runs repeat the page until the partner sends a cursor.',
    );
    this.anyAlarm(
      'CursorRecoveries',
      poller('CursorRecoveries'),
      'The stored cursor expired (404 pageId not found) and the poller restarted the stream (pagination rule 5): versions are replayed.',
    );
    // One stuck answer can be a blip; the same in three periods running means a feed is not moving. A stuck
    // run (or a cursor cycle) does not ask for another turn, so its next is at its interval: a period per
    // interval at least.
    this.track(
      new Alarm(this, 'StuckCursorAlarm', {
        alarmDescription:
          'The partner keeps answering hasMore with a cursor it was already sent (the same one, or a cycle A → B → A) in three runs in a row: no progress.',
        metric: poller('StuckCursor', Stats.SUM, runPeriod),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    // A run that gave up on an unreadable answer (a 3xx, a maintenance or WAF page, not a Page) is a passing
    // hiccup the next tick gets past; the same in two periods running, each at least a schedule interval
    // (so two runs at least), means the partner's answer changed.
    this.track(
      new Alarm(this, 'UnreadablePagesAlarm', {
        alarmDescription:
          'A run failed every attempt at a page, the last answering no readable page (a 3xx, or a 200 that is not JSON or not a Page), in two periods running: the feed is not moving (RUNBOOK: unreadable pages).',
        metric: poller('UnreadablePages', Stats.SUM, runPeriod),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        datapointsToAlarm: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    // One long 429 hold is the partner's word (a quota reset, maintenance); long holds in two of three periods
    // (each at least a schedule interval) mean the feeds on a token barely move: one request per hold.
    this.track(
      new Alarm(this, 'LongRateLimitHoldsAlarm', {
        alarmDescription:
          'The partner asked every feed on a token to wait over a minute (a 429 Retry-After; a hold is clamped at 5 minutes) in two of three periods: those feeds barely move. `npm run ops -- budget` shows the hold (RUNBOOK: long 429 holds).',
        metric: poller('LongRateLimitHolds', Stats.SUM, runPeriod),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    this.anyAlarm(
      'PollerErrors',
      props.poller.metricErrors({ period: PERIOD }),
      'A poller run failed (its batch of feeds is dispatched again at their next turn); the error line in its log names the feed (query feed-detail).',
    );
    this.anyAlarm(
      'DispatcherErrors',
      props.dispatcher.metricErrors({ period: PERIOD }),
      'A dispatch failed (the registry could not be read, or a batch could not be started); the next tick dispatches again. Every tick failing stops every feed: FeedsStale follows.',
    );
    this.anyAlarm(
      'ConsumerErrors',
      props.consumer.metricErrors({ period: PERIOD }),
      'The consumer function failed an invocation.',
    );
    this.anyAlarm(
      'OrdersDeadLetterMessages',
      queues.orders.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: PERIOD,
        statistic: Stats.MAXIMUM,
      }),
      'Order versions the consumer could not apply reached the orders dead-letter queue.',
    );
    for (const [name, pair] of queues.subscribers) {
      this.anyAlarm(
        `Downstream${pascalCase(name)}DeadLetterMessages`,
        pair.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: PERIOD,
          statistic: Stats.MAXIMUM,
        }),
        `Messages for downstream subscriber "${name}" reached its dead-letter queue.`,
      );
      // A subscriber that stops reading never dead-letters anything: SQS deletes its messages at the end of
      // the queue's retention, unseen. Its oldest message's age rings first (SQS keeps publishing the metric of
      // a queue that holds messages, however long nobody reads it).
      this.track(
        new Alarm(this, `Downstream${pascalCase(name)}QueueAgeAlarm`, {
          alarmDescription: `The oldest message for downstream subscriber "${name}" is older than ${config.subscriberMaxAgeHours} hours; SQS deletes it after ${config.subscriberRetentionDays} days. Fix the subscriber, or backfill it (RUNBOOK).`,
          metric: pair.queue.metricApproximateAgeOfOldestMessage({
            period: PERIOD,
            statistic: Stats.MAXIMUM,
          }),
          threshold: config.subscriberMaxAgeHours * 3600,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 2,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }

    // The fleet, by count, from the dispatcher's gauges (one value per dispatch, every minute). Stale: an enabled
    // feed not caught up for alarmLagMinutes; missing data means the dispatcher is not running at all, which
    // stops every feed: 2 bad periods out of 3 alarm (one late tick does not).
    this.track(
      new Alarm(this, 'FeedsStaleAlarm', {
        alarmDescription: `Enabled feeds have not caught up for more than ${config.alarmLagMinutes} minutes, or the dispatcher stopped reporting. Which: npm run ops -- feeds list --stalest (RUNBOOK).`,
        metric: gauge(FLEET_GAUGES.stale),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: TreatMissingData.BREACHING,
      }),
    );
    this.anyAlarm(
      'StoppedFeeds',
      gauge(FLEET_GAUGES.stopped),
      'Feeds stopped at a documented stop (e.g. an order over the page body cap); each row holds its reason. npm run ops -- feeds list (RUNBOOK).',
    );
    this.anyAlarm(
      'AuthFailingFeeds',
      gauge(FLEET_GAUGES.authFailing),
      'Feeds wait out a 401 backoff: the partner refused their token. Rotate the token parameter (RUNBOOK).',
    );
    this.anyAlarm(
      'UnregisteredFeeds',
      gauge(FLEET_GAUGES.unregistered),
      'Cursor items that no feed row describes (a feed of an earlier deployment missing from the initial set): not polled. Register each with npm run ops -- feeds add (its cursor is kept; RUNBOOK).',
    );
    this.track(
      new Alarm(this, 'OrdersQueueAgeAlarm', {
        alarmDescription: `The oldest message on the orders queue is older than ${config.alarmQueueAgeMinutes} minutes: the consumer is falling behind.`,
        metric: queues.orders.queue.metricApproximateAgeOfOldestMessage({
          period: PERIOD,
          statistic: Stats.MAXIMUM,
        }),
        threshold: config.alarmQueueAgeMinutes * 60,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );

    // The consumer falling behind before the age alarm fires: more messages arrived on the orders queue than
    // were deleted (applied or dead-lettered) in each of three consecutive periods. A burst the consumer
    // absorbs within 15 minutes does not ring; a backlog that keeps growing does.
    const ordersQueue = queues.orders.queue;
    this.track(
      new Alarm(this, 'OrdersQueueGrowingAlarm', {
        alarmDescription:
          'The orders queue grew in each of the last three periods: the consumer drains slower than the poller publishes. Raise consumerMaxConcurrency (README: consumer ceiling).',
        metric: new MathExpression({
          label: 'Orders queue growth (sent - deleted)',
          expression: 'sent - deleted',
          usingMetrics: {
            sent: ordersQueue.metricNumberOfMessagesSent({ period: PERIOD, statistic: Stats.SUM }),
            deleted: ordersQueue.metricNumberOfMessagesDeleted({ period: PERIOD, statistic: Stats.SUM }),
          },
          period: PERIOD,
        }),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );

    // A given topic is referred to by its ARN under the id `AlarmTopic`, as the stack always did, so the e-mail
    // subscription below keeps its logical id.
    this.alarmTopic =
      props.alarmTopic === undefined
        ? this.ownAlarmTopic(props.removalPolicy)
        : Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopic.topicArn);
    if (config.alarmEmail !== undefined) {
      this.alarmTopic.addSubscription(new EmailSubscription(config.alarmEmail));
    }
    const action = new SnsAction(this.alarmTopic);
    for (const alarm of this.alarms) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }

    this.feedDetailQuery = new QueryDefinition(this, 'FeedDetailQuery', {
      queryDefinitionName: `order-feed-ingester/${props.instanceId}/${FEED_DETAIL_QUERY}`,
      queryString: new QueryString({
        fields: [
          '@timestamp',
          'level',
          'message',
          'kind',
          'pages',
          'versionsPublished',
          'quarantined',
          'secondsSinceCaughtUp',
          'paceDelayMs',
          'correlationId',
          'error.message',
        ],
        filterStatements: ['feedId = "FEED_ID"'],
        sort: '@timestamp desc',
        limit: 200,
      }),
      logGroups: [props.pollerLogGroup],
    });

    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(6) });
    // The fleet: how many feeds in each state, how many need a look, how busy the pollers are. From the
    // dispatch's log line (every gauge, each minute), not metrics: 12 more metrics would be $3.60 a month, a
    // third of the deployment's fixed cost, for charts nobody alarms on (the alarmed gauges are metrics).
    const fleetChart = (title: string, stats: Record<string, string>, width = 6) =>
      new LogQueryWidget({
        title,
        logGroupNames: [props.dispatcherLogGroup.logGroupName],
        view: LogQueryVisualizationType.LINE,
        queryLines: [
          'filter message = "dispatched"',
          `stats ${Object.entries(stats)
            .map(([label, gauge]) => `max(gauges.${gauge}) as ${label}`)
            .join(', ')} by bin(5m)`,
        ],
        width,
        height: 6,
      });
    this.dashboard.addWidgets(
      fleetChart('Feeds by state', {
        enabled: 'enabled',
        paused: 'paused',
        stopped: 'stopped',
        removed: 'removed',
        unregistered: 'unregistered',
      }),
      fleetChart('Feeds to look at: stale, failing auth, failing, behind', {
        stale: 'stale',
        failingAuth: 'authFailing',
        failing: 'failing',
        behind: 'behind',
      }),
      fleetChart(`Pollers running and feeds waiting for a slot (budget ${config.maxConcurrentPollers})`, {
        pollersRunning: 'runningPollers',
        pollersStarted: 'dispatchedPollers',
        feedsWaiting: 'dueWaiting',
      }),
      fleetChart(`Stalest enabled feed: seconds since caught up (stale at ${config.alarmLagMinutes * 60})`, {
        stalestFeed: 'maxLagSeconds',
      }),
    );
    this.dashboard.addWidgets(
      graph('Pages fetched', [poller('PagesFetched')]),
      graph('Order versions published', [poller('VersionsPublished')]),
      graph('Records quarantined / oversized', [poller('RecordsQuarantined'), poller('OversizedRecords')]),
      graph('Partner retries, rate-limit waits, auth failures', [
        poller('PartnerRetries'),
        poller('RateLimitWaits'),
        poller('AuthFailures'),
        poller('CursorRecoveries'),
        poller('LeaseContended'),
        poller('MissingNextPageId'),
        poller('StuckCursor'),
        poller('UnreadablePages'),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Page size reduced, records beyond the page size, order over the body cap', [
        poller('PageSizeReduced'),
        poller('RecordsBeyondPageSize'),
        poller('OrderOverBodyCap'),
      ]),
      graph('Versions applied / stale / failed', [
        consumer('VersionsApplied'),
        consumer('VersionsStale'),
        consumer('MessagesFailed'),
      ]),
      graph('Sales counted / reversed / amount changed', [
        consumer('SalesCounted'),
        consumer('SalesReversed'),
        consumer('SalesAmountChanged'),
      ]),
      graph('Orders queue depth', [
        queues.orders.queue.metricApproximateNumberOfMessagesVisible({
          period: PERIOD,
          statistic: Stats.MAXIMUM,
        }),
        queues.orders.queue.metricApproximateNumberOfMessagesNotVisible({
          period: PERIOD,
          statistic: Stats.MAXIMUM,
        }),
        ...queues.deadLetterQueues.map((dlq) =>
          dlq.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: Stats.MAXIMUM }),
        ),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Orders queue: age of oldest message (s)', [
        queues.orders.queue.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: Stats.MAXIMUM }),
      ]),
      graph('Function errors', [
        props.poller.metricErrors({ period: PERIOD }),
        props.dispatcher.metricErrors({ period: PERIOD }),
        props.consumer.metricErrors({ period: PERIOD }),
      ]),
      // A run's duration is Lambda's own Duration metric (free): the poller publishes none of its own.
      graph('Poller and dispatcher run duration (Lambda Duration, ms, max)', [
        props.poller.metricDuration({ period: PERIOD, statistic: Stats.MAXIMUM }),
        props.dispatcher.metricDuration({ period: PERIOD, statistic: Stats.MAXIMUM }),
      ]),
      new SingleValueWidget({
        title: 'Versions published vs applied (whole range)',
        metrics: [poller('VersionsPublished'), consumer('VersionsApplied')],
        setPeriodToTimeRange: true,
        width: 6,
        height: 6,
      }),
    );
    if (queues.subscribers.size > 0) {
      this.dashboard.addWidgets(
        new GraphWidget({
          title: `Subscriber queues: age of oldest message (s); alarm above ${config.subscriberMaxAgeHours} h, deleted at ${config.subscriberRetentionDays} days`,
          left: [...queues.subscribers].map(([name, pair]) =>
            pair.queue.metricApproximateAgeOfOldestMessage({
              period: PERIOD,
              statistic: Stats.MAXIMUM,
              label: name,
            }),
          ),
          leftAnnotations: [{ value: config.subscriberMaxAgeHours * 3600, label: 'alarm' }],
          width: 12,
          height: 6,
        }),
      );
    }
    this.dashboard.addWidgets(
      // Each feed's pace (the delay between its page requests after 429s) and lag are on its outcome line,
      // every run: charted from there, not from metrics ($0.30 a month each for what the line already says).
      new LogQueryWidget({
        title:
          'Feeds: slowest pace between page requests (ms) and most seconds since caught up, from each run’s line',
        logGroupNames: [props.pollerLogGroup.logGroupName],
        view: LogQueryVisualizationType.LINE,
        queryLines: [
          'filter message = "poll run finished"',
          'stats max(paceDelayMs) as slowestPaceMs, max(secondsSinceCaughtUp) as mostSecondsSinceCaughtUp by bin(5m)',
        ],
        width: 24,
        height: 6,
      }),
    );
    // Which feeds: the poller's warnings and errors by feed (one feed's whole story: the query feed-detail).
    this.dashboard.addWidgets(
      new LogQueryWidget({
        title: `Poller warnings and errors by feed (one feed's lines: saved query ${FEED_DETAIL_QUERY})`,
        logGroupNames: [props.pollerLogGroup.logGroupName],
        queryLines: [
          'fields feedId, level, message',
          'filter level = "WARN" or level = "ERROR"',
          'stats count(*) as lines, latest(@timestamp) as last by feedId, level, message',
          'sort lines desc',
          'limit 20',
        ],
        width: 24,
        height: 6,
      }),
    );
  }

  /**
   * The deployment's own alarm topic, so alarms reach someone without `alarmTopicArn`: TLS-only (a topic policy
   * denies publishing without aws:SecureTransport) and encrypted at rest with a customer-managed KMS key. Not
   * the AWS-managed `alias/aws/sns`: its key policy cannot be changed, and CloudWatch alarms cannot publish to a
   * topic encrypted with it (they need kms:Decrypt and kms:GenerateDataKey* on the key).
   */
  private ownAlarmTopic(removalPolicy: RemovalPolicy): Topic {
    const stack = Stack.of(this);
    const key = new Key(this, 'AlarmTopicKey', {
      description: 'Encrypts the order-feed-ingester alarm topic',
      enableKeyRotation: true,
      removalPolicy,
    });
    const topic = new Topic(this, 'AlarmTopic', {
      displayName: 'order-feed-ingester alarms',
      masterKey: key,
      enforceSSL: true,
    });
    // CloudWatch alarms of this account publish; no one else.
    const cloudWatch = new ServicePrincipal('cloudwatch.amazonaws.com');
    const fromThisAccount = {
      StringEquals: { 'aws:SourceAccount': stack.account },
      ArnLike: {
        'aws:SourceArn': stack.formatArn({
          service: 'cloudwatch',
          resource: 'alarm',
          resourceName: '*',
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      },
    };
    topic.addToResourcePolicy(
      new PolicyStatement({
        actions: ['sns:Publish'],
        principals: [cloudWatch],
        resources: [topic.topicArn],
        conditions: fromThisAccount,
      }),
    );
    key.addToResourcePolicy(
      new PolicyStatement({
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        principals: [cloudWatch],
        resources: ['*'],
        conditions: fromThisAccount,
      }),
    );
    return topic;
  }

  private metric(
    service: string,
    metricName: string,
    statistic: string,
    period: Duration = PERIOD,
    label?: string,
  ): Metric {
    return new Metric({
      namespace: this.namespace,
      metricName,
      dimensionsMap: { service, [INGESTER_DIMENSION]: this.instanceId },
      statistic,
      period,
      ...(label === undefined ? {} : { label }),
    });
  }

  /** Alarms on any non-zero value within one period; no data means nothing happened. */
  private anyAlarm(name: string, metric: IMetric, description: string): void {
    this.track(
      new Alarm(this, `${name}Alarm`, {
        alarmDescription: description,
        metric,
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
  }

  private track(alarm: Alarm): void {
    this.alarms.push(alarm);
  }
}

function graph(title: string, metrics: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left: metrics, width: 6, height: 6 });
}
