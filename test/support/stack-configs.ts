// The infrastructure tests' configurations (the `orderFeed` context), apart from the synth helper so that a
// test of the configuration alone does not load the stack, its constructs and cdk-nag.

/** The smallest valid configuration (the two keys without defaults). */
export const REQUIRED_CONFIG = {
  partnerBaseUrl: 'https://partner.example.com',
  tokenParameterName: '/order-feed-ingester/partner-token',
} as const;

/** A configuration using most keys, with two downstream subscribers and a given alarm topic. */
export const FULL_CONFIG = {
  ...REQUIRED_CONFIG,
  tokenKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555',
  feedId: 'partner-orders',
  schedule: 'rate(5 minutes)',
  pageSize: 50,
  maxPagesPerRun: 30,
  minAgeMinutes: 60,
  vendorIds: ['vendor-1', 'vendor-2'],
  arrayQueryEncoding: 'comma',
  cursorRecoveryLookbackMinutes: 120,
  downstreamSubscribers: ['billing', 'audit-log'],
  maxReceiveCount: 4,
  consumerBatchSize: 10,
  consumerMaxBatchingWindowSeconds: 5,
  consumerMaxConcurrency: 3,
  alarmLagMinutes: 30,
  alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:ops-alarms',
  alarmEmail: 'oncall@example.com',
  metricsNamespace: 'OrderFeedTest',
} as const;

/**
 * Three feeds sharing the defaults: two shard one partner account by vendor, the third is another partner
 * account (its own URL, token parameter and KMS key) and is switched off.
 */
export const FEEDS_CONFIG = {
  ...REQUIRED_CONFIG,
  downstreamSubscribers: ['billing'],
  minAgeMinutes: 30,
  feeds: [
    { id: 'eu', vendorIds: ['vendor-eu-1', 'vendor-eu-2'] },
    { id: 'uk', vendorIds: ['vendor-uk-1'], minAgeMinutes: 5 },
    {
      id: 'us.second-account',
      partnerBaseUrl: 'https://us.partner.example.com',
      tokenParameterName: '/order-feed-ingester/us-token',
      tokenKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555',
      enabled: false,
    },
  ],
} as const;

/**
 * A throwaway stack: removalPolicy destroy (the bucket's auto-delete custom resource), the stack's own alarm
 * topic with an e-mail subscription, and a subscriber queue kept 3 days with a 24-hour age alarm.
 */
export const THROWAWAY_CONFIG = {
  ...REQUIRED_CONFIG,
  removalPolicy: 'destroy',
  alarmEmail: 'oncall@example.com',
  downstreamSubscribers: ['billing'],
  subscriberRetentionDays: 3,
  subscriberMaxAgeHours: 24,
} as const;
