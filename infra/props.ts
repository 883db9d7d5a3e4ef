// The props of the OrderFeedIngester construct: the deployment configuration contract, typed. They are the
// keys of the `orderFeed` CDK context (infra/config.ts, the README table in infra/README.md), so cdk.json and
// a platform team's own app say the same thing the same way; the construct checks them with the same rules
// (an error names `orderFeed.<key>`). `test/infra/construct.test.ts` keeps these keys equal to the checked ones.

/** One feed of `feeds`: a cursor chain of its own, with its own poller, schedule, lease and lag alarm. */
export interface FeedProps {
  /** 1–64 of `A-Za-z0-9._-`, letter or digit first; unique (also ignoring case and punctuation). */
  readonly id: string;
  /** Defaults to the top-level `partnerBaseUrl`. */
  readonly partnerBaseUrl?: string;
  /** Defaults to the top-level `tokenParameterName` (several partner accounts: one parameter each). */
  readonly tokenParameterName?: string;
  readonly tokenKmsKeyArn?: string;
  /** This feed's vendors (the API `vendorIds` filter); disjoint lists shard one partner account. */
  readonly vendorIds?: readonly string[];
  readonly minAgeMinutes?: number;
  /** false: the feed's schedule is disabled and its runs (even an in-flight continuation) do nothing. */
  readonly enabled?: boolean;
}

export interface OrderFeedIngesterProps {
  /** Partner API base URL: https (http only for loopback hosts), no credentials, query or fragment. */
  readonly partnerBaseUrl?: string;
  /** Name (not ARN, never the value) of the SSM SecureString parameter holding the partner token. */
  readonly tokenParameterName?: string;
  /** Customer-managed KMS key of the token parameter; unset: the AWS-managed `alias/aws/ssm` key. */
  readonly tokenKmsKeyArn?: string;
  /** The single feed's id when `feeds` is unset (default `orders`). */
  readonly feedId?: string;
  /** How often each poller runs: `rate(1 minute)` (default) or a number of minutes, 1 to 60. */
  readonly schedule?: string | number;
  /** Order versions per page, 1–100 (default 100). */
  readonly pageSize?: number;
  /** Pages one run fetches at most, 1–100000; unset: no cap (runs end when caught up or out of time). */
  readonly maxPagesPerRun?: number;
  /** Runs that follow one another at once while a backlog lasts, 0–100000 (default 1000; 0: none). */
  readonly maxContinuations?: number;
  /** Hide updates younger than this, 1–1440 minutes (the API `minAgeMinutes`). */
  readonly minAgeMinutes?: number;
  /** Only these vendors (the API `vendorIds` filter). */
  readonly vendorIds?: readonly string[];
  /** false: the (single) feed is switched off. */
  readonly enabled?: boolean;
  /** How list filters go in the query: `repeat` (default) or `comma`. */
  readonly arrayQueryEncoding?: 'repeat' | 'comma';
  /** After an expired cursor, restart this long before the last progress, 1–1581120 minutes. */
  readonly cursorRecoveryLookbackMinutes?: number;
  /** The partner's published limit per token, 1–10000 requests/s: caps the token's shared request budget. */
  readonly partnerRequestsPerSecond?: number;
  /** One SQS queue (plus DLQ) each; every order version goes to all of them. */
  readonly downstreamSubscribers?: readonly string[];
  /** Days a subscriber queue keeps an unread message, 1–14 (default 14, SQS's maximum). */
  readonly subscriberRetentionDays?: number;
  /** Alarm when a subscriber queue's oldest message is older than this, 1–335 hours, below the retention (default half of it). */
  readonly subscriberMaxAgeHours?: number;
  /** Receives before a message is dead-lettered, 1–1000 (default 5). */
  readonly maxReceiveCount?: number;
  /** Messages per consumer invocation, 1–10000 (default 10; above 10 needs a batching window). */
  readonly consumerBatchSize?: number;
  /** 0–300 seconds (default 0). */
  readonly consumerMaxBatchingWindowSeconds?: number;
  /** Concurrent consumer invocations at most, 2–1000 (default 5 per feed). */
  readonly consumerMaxConcurrency?: number;
  /** Alarm when a feed has not caught up for this long, 2–1440 minutes (default 30). */
  readonly alarmLagMinutes?: number;
  /** Alarm when the oldest orders-queue message is older than this, 1–20160 minutes (default 15). */
  readonly alarmQueueAgeMinutes?: number;
  /** SNS topic for ALARM and OK notifications; unset: the construct creates its own (output `AlarmTopicArn`). */
  readonly alarmTopicArn?: string;
  /** E-mail address subscribed to the alarm topic. */
  readonly alarmEmail?: string;
  /** CloudWatch namespace of the functions' metrics (default `OrderFeedIngester`). */
  readonly metricsNamespace?: string;
  /** Retention of the functions' log groups, a CloudWatch Logs value (default 30). */
  readonly logRetentionDays?: number;
  /** `retain` (default) or `destroy` (throwaway stacks) for tables, bucket, queues and log groups. */
  readonly removalPolicy?: 'retain' | 'destroy';
  /** Days a quarantined record is kept, 1–3650 (default 90). */
  readonly quarantineRetentionDays?: number;
  /** Keep every order version once per (orderId, version) in a history table (default true). */
  readonly history?: boolean;
  /** Days a history entry is kept through DynamoDB TTL, 0–3650 (default 400; 0: forever). */
  readonly historyRetentionDays?: number;
  /** Several feeds in one deployment; the top-level feed keys are their defaults. */
  readonly feeds?: readonly FeedProps[];
}
