// The two directions between the construct's typed props (infra/props.ts) and the `orderFeed` configuration
// (infra/config.ts): the construct turns its props into the configuration's plain values and checks them by the
// same rules (configFromProps); this repository's app turns a checked CDK context into props (propsFromConfig).
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { CONTEXT_KEY, ConfigError, type ConfigKey, type OrderFeedConfig, parseConfig } from './config.js';
import type { FeedProps, OrderFeedIngesterProps } from './props.js';

/** Each prop's `orderFeed` key (a Duration prop's key names its unit). */
export const PROP_KEYS = {
  partnerBaseUrl: 'partnerBaseUrl',
  tokenParameterName: 'tokenParameterName',
  tokenKmsKey: 'tokenKmsKeyArn',
  tokenParameterPath: 'tokenParameterPath',
  feedId: 'feedId',
  schedule: 'schedule',
  pageSize: 'pageSize',
  maxPagesPerRun: 'maxPagesPerRun',
  maxPageBodyBytes: 'maxPageBodyBytes',
  partnerRequestsPerSecond: 'partnerRequestsPerSecond',
  maxConcurrentPollers: 'maxConcurrentPollers',
  minAge: 'minAgeMinutes',
  vendorIds: 'vendorIds',
  enabled: 'enabled',
  arrayQueryEncoding: 'arrayQueryEncoding',
  cursorRecoveryLookback: 'cursorRecoveryLookbackMinutes',
  downstreamSubscribers: 'downstreamSubscribers',
  subscriberRetention: 'subscriberRetentionDays',
  subscriberMaxAge: 'subscriberMaxAgeHours',
  maxReceiveCount: 'maxReceiveCount',
  consumerBatchSize: 'consumerBatchSize',
  consumerMaxBatchingWindow: 'consumerMaxBatchingWindowSeconds',
  consumerMaxConcurrency: 'consumerMaxConcurrency',
  alarmLag: 'alarmLagMinutes',
  alarmQueueAge: 'alarmQueueAgeMinutes',
  alarmTopic: 'alarmTopicArn',
  alarmEmail: 'alarmEmail',
  metricsNamespace: 'metricsNamespace',
  logRetention: 'logRetentionDays',
  removalPolicy: 'removalPolicy',
  quarantineRetention: 'quarantineRetentionDays',
  history: 'history',
  historyRetention: 'historyRetentionDays',
  feeds: 'feeds',
} as const satisfies Record<keyof OrderFeedIngesterProps, ConfigKey>;

type Unit = 'seconds' | 'minutes' | 'hours' | 'days';
/** The Duration props, with the unit of their key. */
const DURATIONS = {
  schedule: 'minutes',
  minAge: 'minutes',
  cursorRecoveryLookback: 'minutes',
  subscriberRetention: 'days',
  subscriberMaxAge: 'hours',
  consumerMaxBatchingWindow: 'seconds',
  alarmLag: 'minutes',
  alarmQueueAge: 'minutes',
  quarantineRetention: 'days',
  historyRetention: 'days',
} as const satisfies Partial<Record<keyof OrderFeedIngesterProps, Unit>>;

/** A Duration as its key's number; a fraction is left for the key's rule to refuse, naming the prop. */
function inUnit(duration: Duration | undefined, unit: Unit): number | undefined {
  if (duration === undefined) return undefined;
  const options = { integral: false };
  switch (unit) {
    case 'seconds':
      return duration.toSeconds(options);
    case 'minutes':
      return duration.toMinutes(options);
    case 'hours':
      return duration.toHours(options);
    case 'days':
      return duration.toDays(options);
  }
}

/** `orderFeed.feeds[1].minAgeMinutes` → `feeds[1].minAge (in minutes)`: issues named as the props name them. */
function propIssueKey(contextKey: string): string {
  const path = contextKey.startsWith(`${CONTEXT_KEY}.`)
    ? contextKey.slice(CONTEXT_KEY.length + 1)
    : contextKey;
  return path.replace(/[A-Za-z]+$/, (key) => {
    const entry = Object.entries(PROP_KEYS).find(([, configKey]) => configKey === key);
    if (entry === undefined) return key;
    const unit = (DURATIONS as Record<string, Unit>)[entry[0]];
    return unit === undefined ? entry[0] : `${entry[0]} (in ${unit})`;
  });
}

/** Invalid OrderFeedIngester props: every issue names its prop. */
export class PropsError extends ConfigError {
  constructor(issues: ConstructorParameters<typeof ConfigError>[0]) {
    super(issues);
    this.message = `Invalid OrderFeedIngester props:\n${issues.map((issue) => `  - ${issue.key}: ${issue.message}`).join('\n')}`;
  }
}

/**
 * The construct's props as a checked configuration. The KMS key and the alarm topic are CDK objects whose ARNs may
 * be tokens: they are not checked as text, and the key's ARN is put on the feeds after the check.
 * Throws a ConfigError naming every invalid prop.
 */
export function configFromProps(props: OrderFeedIngesterProps): OrderFeedConfig {
  const { tokenKmsKey, alarmTopic: _topic, removalPolicy, logRetention, feeds, ...plain } = props;
  const raw: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [prop, value] of Object.entries(plain)) {
    const key = (PROP_KEYS as Record<string, string>)[prop];
    // From JavaScript: a context key such as `alarmTopicArn` given as a prop would be checked, then unused.
    if (key === undefined) unknown.push(prop);
    const unit = (DURATIONS as Record<string, Unit>)[prop];
    raw[key ?? prop] = unit === undefined ? value : inUnit(value as Duration | undefined, unit);
  }
  if (unknown.length > 0) {
    const accepted = Object.keys(PROP_KEYS).join(', ');
    throw new PropsError(unknown.map((key) => ({ key, message: `unknown prop (accepted: ${accepted})` })));
  }
  if (logRetention !== undefined) raw.logRetentionDays = logRetention;
  if (removalPolicy !== undefined) {
    raw.removalPolicy =
      removalPolicy === RemovalPolicy.DESTROY
        ? 'destroy'
        : removalPolicy === RemovalPolicy.RETAIN
          ? 'retain'
          : removalPolicy;
  }
  if (feeds !== undefined) {
    raw.feeds = feeds.map(({ tokenKmsKey: _key, minAge, schedule, ...feed }: FeedProps) => ({
      ...feed,
      ...(minAge === undefined ? {} : { minAgeMinutes: inUnit(minAge, 'minutes') }),
      ...(schedule === undefined ? {} : { schedule: inUnit(schedule, 'minutes') }),
    }));
  }
  let config: OrderFeedConfig;
  try {
    config = parseConfig(raw);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new PropsError(error.issues.map((issue) => ({ ...issue, key: propIssueKey(issue.key) })));
  }
  const keyArn = (index: number) => (feeds?.[index]?.tokenKmsKey ?? tokenKmsKey)?.keyArn;
  return {
    ...config,
    feeds: config.feeds.map((feed, index) => ({ ...feed, tokenKmsKeyArn: keyArn(index) })),
  };
}

/**
 * A checked `orderFeed` context as the construct's props: numbers with a unit as Durations, ARNs as imported
 * topic and keys (created in `scope`; they add no resources). The single feed's keys stay top-level keys, so the
 * resources keep their logical ids.
 */
export function propsFromConfig(scope: Construct, config: OrderFeedConfig): OrderFeedIngesterProps {
  const minutes = (value: number | undefined) => (value === undefined ? undefined : Duration.minutes(value));
  const keys = new Map<string, Key | ReturnType<typeof Key.fromKeyArn>>();
  const key = (arn: string | undefined) => {
    if (arn === undefined) return undefined;
    if (!keys.has(arn)) keys.set(arn, Key.fromKeyArn(scope, `TokenKey${keys.size + 1}`, arn));
    return keys.get(arn);
  };
  const feedProps = (feed: OrderFeedConfig['feeds'][number]) => ({
    partnerBaseUrl: feed.partnerBaseUrl,
    tokenParameterName: feed.tokenParameterName,
    tokenKmsKey: key(feed.tokenKmsKeyArn),
    vendorIds: feed.vendorIds,
    minAge: minutes(feed.minAgeMinutes),
    pageSize: feed.pageSize,
    schedule: minutes(feed.schedule),
    enabled: feed.enabled,
  });
  const [first] = config.feeds;
  if (first === undefined) throw new Error('a checked configuration has at least one feed');
  return {
    // With feeds, each feed carries all its values; the top level only the two props the type requires, which no
    // feed then inherits (a top-level default from one feed would leak into feeds that leave the key unset).
    ...(config.feedsListed
      ? {
          partnerBaseUrl: config.partnerBaseUrl,
          tokenParameterName: first.tokenParameterName,
          feeds: config.feeds.map((feed) => ({ id: feed.id, ...feedProps(feed) })),
        }
      : { ...feedProps(first), feedId: first.id }),
    tokenParameterPath: config.tokenParameterPath,
    maxConcurrentPollers: config.maxConcurrentPollers,
    arrayQueryEncoding: config.arrayQueryEncoding,
    downstreamSubscribers: config.downstreamSubscribers,
    subscriberRetention: Duration.days(config.subscriberRetentionDays),
    subscriberMaxAge: Duration.hours(config.subscriberMaxAgeHours),
    maxReceiveCount: config.maxReceiveCount,
    consumerBatchSize: config.consumerBatchSize,
    consumerMaxBatchingWindow: Duration.seconds(config.consumerMaxBatchingWindowSeconds),
    consumerMaxConcurrency: config.consumerMaxConcurrency,
    alarmLag: Duration.minutes(config.alarmLagMinutes),
    alarmQueueAge: Duration.minutes(config.alarmQueueAgeMinutes),
    metricsNamespace: config.metricsNamespace,
    logRetention: config.logRetentionDays as RetentionDays,
    removalPolicy: config.removalPolicy === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    quarantineRetention: Duration.days(config.quarantineRetentionDays),
    history: config.history,
    historyRetention: Duration.days(config.historyRetentionDays),
    maxPagesPerRun: config.maxPagesPerRun,
    maxPageBodyBytes: config.maxPageBodyBytes,
    partnerRequestsPerSecond: config.partnerRequestsPerSecond,
    cursorRecoveryLookback: minutes(config.cursorRecoveryLookbackMinutes),
    alarmTopic:
      config.alarmTopicArn === undefined
        ? undefined
        : Topic.fromTopicArn(scope, 'AlarmTopicImport', config.alarmTopicArn),
    alarmEmail: config.alarmEmail,
  };
}
