// The props of the OrderFeedIngester construct, typed as a CDK user expects: the two settings without a default
// are required, and CDK things are CDK types (Duration, ITopic, IKey, RemovalPolicy, RetentionDays). Each prop is
// one key of the `orderFeed` CDK context (infra/config.ts, the README table in infra/README.md), named in
// PROP_KEYS; the construct checks the props by the same rules as the context (an error names the prop), and
// this repository's app maps the context's plain values to these types (propsFromConfig in infra/config-props.ts).
// `test/infra/stack.test.ts` keeps PROP_KEYS covering every checked key.
import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';

/**
 * One feed of the initial set `feeds`: a registry row (cursor, lease, configuration and state in the cursor
 * table), created when missing and never changed by a later deploy (change it with `npm run ops -- feeds set`).
 */
export interface FeedProps {
  /** 1–64 of `A-Za-z0-9._-`, letter or digit first; unique. */
  readonly id: string;
  /** Defaults to the top-level `partnerBaseUrl`. */
  readonly partnerBaseUrl?: string;
  /** Defaults to the top-level `tokenParameterName` (several partner accounts: one parameter each). */
  readonly tokenParameterName?: string;
  /** Customer-managed KMS key of this feed's token parameter; defaults to the top-level `tokenKmsKey`. */
  readonly tokenKmsKey?: IKey;
  /** This feed's vendors (the API `vendorIds` filter); disjoint lists shard one partner account. */
  readonly vendorIds?: readonly string[];
  /** Hide updates younger than this, whole minutes from 1 to 1440 (the API `minAgeMinutes`). */
  readonly minAge?: Duration;
  /** Order versions per page, 1–100; defaults to the top-level `pageSize`. */
  readonly pageSize?: number;
  /** How often the feed is polled, whole minutes from 1 to 60; defaults to the top-level `schedule`. */
  readonly schedule?: Duration;
  /** false: the feed is registered paused (not polled, its cursor kept). */
  readonly enabled?: boolean;
}

export interface OrderFeedIngesterProps {
  /** Partner API base URL: https (http only for loopback hosts), no credentials, query or fragment. */
  readonly partnerBaseUrl: string;
  /** Name (not ARN, never the value) of the SSM SecureString parameter holding the partner token. */
  readonly tokenParameterName: string;
  /** Customer-managed KMS key of the token parameter; unset: the AWS-managed `alias/aws/ssm` key. */
  readonly tokenKmsKey?: IKey;
  /**
   * The SSM path of the token parameters of feeds added at runtime (default `/order-feed-ingester/`): the
   * poller may read any parameter under it, and besides only the initial set's own parameters.
   */
  readonly tokenParameterPath?: string;
  /** The single feed's id when `feeds` is unset (default `orders`). */
  readonly feedId?: string;
  /** How often each feed is polled, whole minutes from 1 to 60 (default 1 minute). */
  readonly schedule?: Duration;
  /** Order versions per page, 1–100 (default 100). */
  readonly pageSize?: number;
  /** Pages one run fetches at most, 1–100000; unset: no cap (runs end when caught up or out of time). */
  readonly maxPagesPerRun?: number;
  /**
   * The largest page body the poller reads, 2–64 MiB in bytes (default 8 MiB); a larger page is asked again
   * with a smaller page size. Above 8 MiB the poller gets more memory.
   */
  readonly maxPageBodyBytes?: number;
  /**
   * Poller invocations running at once, 1–1000 (default 10): the ingester's own share of the account's
   * concurrency; the dispatcher also stays below 30 % of what the account leaves unreserved.
   */
  readonly maxConcurrentPollers?: number;
  /** Hide updates younger than this, whole minutes from 1 to 1440 (the API `minAgeMinutes`). */
  readonly minAge?: Duration;
  /** Only these vendors (the API `vendorIds` filter). */
  readonly vendorIds?: readonly string[];
  /** false: the (single) feed is registered paused. */
  readonly enabled?: boolean;
  /** How list filters go in the query: `repeat` (default) or `comma`. */
  readonly arrayQueryEncoding?: 'repeat' | 'comma';
  /** After an expired cursor, restart this long before the last progress, whole minutes up to 1098 days. */
  readonly cursorRecoveryLookback?: Duration;
  /** The partner's published limit per token, 1–10000 requests/s: caps the token's shared request budget. */
  readonly partnerRequestsPerSecond?: number;
  /** One SQS queue (plus DLQ) each; every order version goes to all of them. */
  readonly downstreamSubscribers?: readonly string[];
  /** How long a subscriber queue keeps an unread message, whole days from 1 to 14 (default 14, SQS's maximum). */
  readonly subscriberRetention?: Duration;
  /** Alarm when a subscriber queue's oldest message is older than this, whole hours below the retention (default half of it). */
  readonly subscriberMaxAge?: Duration;
  /** Receives before a message is dead-lettered, 1–1000 (default 5). */
  readonly maxReceiveCount?: number;
  /** Messages per consumer invocation, 1–10000 (default 10; above 10 needs a batching window). */
  readonly consumerBatchSize?: number;
  /** Whole seconds from 0 to 300 (default 0). */
  readonly consumerMaxBatchingWindow?: Duration;
  /** Concurrent consumer invocations at most, 2–1000 (default 20). */
  readonly consumerMaxConcurrency?: number;
  /** A feed not caught up for this long is stale and alarms, whole minutes from 2 to 1440 (default 30 minutes). */
  readonly alarmLag?: Duration;
  /** Alarm when the oldest orders-queue message is older than this, whole minutes up to 14 days (default 15 minutes). */
  readonly alarmQueueAge?: Duration;
  /** SNS topic for ALARM and OK notifications; unset: the construct creates its own (output `AlarmTopicArn`). */
  readonly alarmTopic?: ITopic;
  /** E-mail address subscribed to the alarm topic. */
  readonly alarmEmail?: string;
  /** CloudWatch namespace of the functions' metrics (default `OrderFeedIngester`); each instance's metrics carry its own `Ingester` dimension. */
  readonly metricsNamespace?: string;
  /** Retention of the functions' log groups (default one month). */
  readonly logRetention?: RetentionDays;
  /** Of tables, bucket, queues, log groups and the alarm topic's key: RETAIN (default) or DESTROY (throwaway stacks). */
  readonly removalPolicy?: RemovalPolicy.RETAIN | RemovalPolicy.DESTROY;
  /** How long a quarantined record is kept, whole days from 1 to 3650 (default 90). */
  readonly quarantineRetention?: Duration;
  /** Keep every order version once per (orderId, version) in a history table (default true). */
  readonly history?: boolean;
  /** How long a history entry is kept through DynamoDB TTL, whole days up to 3650 (default 400; 0 days: forever). */
  readonly historyRetention?: Duration;
  /**
   * The initial set of feeds (any number: it travels as a file asset the dispatcher reads, and the stack's
   * resources stay the same; add more at runtime with `npm run ops -- feeds add`); the top-level feed keys
   * are their defaults. Unset: one feed, `feedId`.
   */
  readonly feeds?: readonly FeedProps[];
}
