// Stateless: alarms and the dashboard. Business metrics come from the functions' Powertools EMF output
// (namespace from config, dimensions `service` and `Ingester`, the instance, so two instances in one account never
// watch each other; the pollers publish each metric twice, under those for the whole deployment and with `FeedId`
// added per feed); queue and function health from AWS's own metrics.
// Alarms on anything a person must look at use the deployment-wide series (one alarm, whatever the number of
// feeds); lag is per feed (one alarm each), since one stalled feed hides behind others that keep up.
import { ArnFormat, Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
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
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import {
  type ConsumerCountName,
  FEED_ID_DIMENSION,
  INGESTER_DIMENSION,
  type PollerMetricName,
} from '../../functions/core/observability/metric-names.js';
import { feedIdSuffix, type OrderFeedConfig, pascalCase } from '../config.js';
import { CONSUMER_SERVICE_NAME } from './consumer.js';
import type { OrderQueues } from './order-queues.js';
import { POLLER_SERVICE_NAME } from './poller.js';

const PERIOD = Duration.minutes(5);

export interface MonitoredPoller {
  readonly feedId: string;
  /** A switched-off feed reports nothing by design: no lag alarm. */
  readonly enabled: boolean;
  readonly function: IFunction;
}

export interface MonitoringProps {
  readonly config: OrderFeedConfig;
  /** One per feed. */
  readonly pollers: readonly MonitoredPoller[];
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
    // A period that holds at least one scheduled run, for alarms that need several runs in a row.
    const runPeriod = Duration.minutes(Math.max(5, config.scheduleInterval.toMinutes()));
    const consumer = (name: ConsumerCountName) => this.metric(CONSUMER_SERVICE_NAME, name, Stats.SUM);

    // Something a person must look at: any occurrence alarms.
    this.anyAlarm(
      'AuthFailures',
      poller('AuthFailures'),
      'The partner API rejected the token (401); the poller stopped.',
    );
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
    this.anyAlarm(
      'OrderOverBodyCap',
      poller('OrderOverBodyCap'),
      'A single order is over the page body cap (maxPageBodyBytes) at page size 1: the feed stops at it until the cap is raised (RUNBOOK).',
    );
    // One stuck answer can be a blip; the same in three periods running means the feed is not moving. A
    // stuck run (or a cursor cycle) ends its chain, so the next is the schedule's: a period per tick at least.
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
          'The partner answered no readable page (a 3xx, or a 200 that is not JSON or not a Page) on every attempt of a run, in two periods running: the feed is not moving (RUNBOOK: unreadable pages).',
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
    // One alarm per group of pollers (the first keeps the single-feed logical id).
    const errorGroups = pollerErrors(props.pollers);
    for (const [index, group] of errorGroups.entries()) {
      const feeds = errorGroups.length > 1 ? ` (feeds ${group.feedIds.join(', ')})` : '';
      this.anyAlarm(
        index === 0 ? 'PollerErrors' : `PollerErrors${index + 1}`,
        group.metric,
        `A poller function failed a run${feeds}.`,
      );
    }
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

    // Lag, per feed: each poller reports how long since its feed was last caught up. Missing data means the
    // poller is not running at all, which is the same failure: 2 bad periods out of 3 alarm (one late tick
    // does not). A disabled feed reports nothing by design, so it gets no lag alarm.
    const lagPeriod = runPeriod;
    for (const { feedId, enabled } of props.pollers) {
      if (!enabled) continue;
      const suffix = config.feedsListed ? feedIdSuffix(feedId) : '';
      this.track(
        new Alarm(this, `FeedLagAlarm${suffix}`, {
          alarmDescription: `Feed "${feedId}" has not caught up for more than ${config.alarmLagMinutes} minutes, or its poller stopped reporting.`,
          metric: this.feedMetric(feedId, 'SecondsSinceCaughtUp', Stats.MAXIMUM, lagPeriod),
          threshold: config.alarmLagMinutes * 60,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 3,
          datapointsToAlarm: 2,
          treatMissingData: TreatMissingData.BREACHING,
        }),
      );
    }
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

    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(6) });
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
      graph('Page size reduced, records beyond the page size, order over the body cap', [
        poller('PageSizeReduced'),
        poller('RecordsBeyondPageSize'),
        poller('OrderOverBodyCap'),
      ]),
    );
    this.dashboard.addWidgets(
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
      graph('Orders queue: age of oldest message (s)', [
        queues.orders.queue.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: Stats.MAXIMUM }),
      ]),
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
      graph('Function errors', [
        ...props.pollers.map(({ function: fn }) => fn.metricErrors({ period: PERIOD })),
        props.consumer.metricErrors({ period: PERIOD }),
      ]),
      new SingleValueWidget({
        title: 'Versions published vs applied (whole range)',
        metrics: [poller('VersionsPublished'), consumer('VersionsApplied')],
        setPeriodToTimeRange: true,
        width: 6,
        height: 6,
      }),
    );
    // One row per feed: is it moving, is it caught up, is the partner slowing it down.
    for (const { feedId } of props.pollers) {
      const feedMetric = (name: PollerMetricName, statistic: string = Stats.SUM) =>
        this.feedMetric(feedId, name, statistic);
      this.dashboard.addWidgets(
        graph(`Feed ${feedId}: pages fetched / versions published`, [
          feedMetric('PagesFetched'),
          feedMetric('VersionsPublished'),
        ]),
        graph(`Feed ${feedId}: seconds since caught up`, [feedMetric('SecondsSinceCaughtUp', Stats.MAXIMUM)]),
        graph(`Feed ${feedId}: pace between page requests (ms), rate-limit waits`, [
          feedMetric('PaceDelayMs', Stats.MAXIMUM),
          feedMetric('RateLimitWaits'),
        ]),
        graph(`Feed ${feedId}: run duration (ms)`, [
          feedMetric('RunDurationMs', Stats.MAXIMUM),
          feedMetric('RunDurationMs', Stats.AVERAGE),
        ]),
      );
    }
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

  /** A poller metric of one feed (dimensions `service`, `Ingester` and `FeedId`). */
  private feedMetric(
    feedId: string,
    metricName: PollerMetricName,
    statistic: string,
    period: Duration = PERIOD,
  ): Metric {
    return new Metric({
      namespace: this.namespace,
      metricName,
      dimensionsMap: {
        service: POLLER_SERVICE_NAME,
        [INGESTER_DIMENSION]: this.instanceId,
        [FEED_ID_DIMENSION]: feedId,
      },
      statistic,
      period,
    });
  }

  private metric(service: string, metricName: string, statistic: string, period: Duration = PERIOD): Metric {
    return new Metric({
      namespace: this.namespace,
      metricName,
      dimensionsMap: { service, [INGESTER_DIMENSION]: this.instanceId },
      statistic,
      period,
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

/** CloudWatch's hard limit on the metrics one metric-math alarm may reference. */
const METRICS_PER_MATH_ALARM = 10;

/**
 * Errors of every poller, in groups of at most METRICS_PER_MATH_ALARM feeds: the function's own metric for a
 * group of one, the sum of the group's otherwise. One alarm watches each group.
 */
function pollerErrors(pollers: readonly MonitoredPoller[]): Array<{ feedIds: string[]; metric: IMetric }> {
  const groups = [];
  for (let start = 0; start < pollers.length; start += METRICS_PER_MATH_ALARM) {
    const group = pollers.slice(start, start + METRICS_PER_MATH_ALARM);
    const metrics = group.map(({ function: fn }) => fn.metricErrors({ period: PERIOD }));
    const usingMetrics = Object.fromEntries(metrics.map((metric, index) => [`e${index}`, metric]));
    groups.push({
      feedIds: group.map((poller) => poller.feedId),
      metric:
        metrics.length === 1
          ? (metrics[0] as IMetric)
          : new MathExpression({
              label: `Poller errors (feeds ${group.map((poller) => poller.feedId).join(', ')})`,
              expression: Object.keys(usingMetrics)
                .map((name) => `FILL(${name}, 0)`)
                .join(' + '),
              usingMetrics,
              period: PERIOD,
            }),
    });
  }
  return groups;
}

function graph(title: string, metrics: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left: metrics, width: 6, height: 6 });
}
