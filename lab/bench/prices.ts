// AWS list prices the cost model uses: the one place to update them. us-east-1, on-demand, no free tier.
// Checked 2025-06 against the public pricing pages named beside each value (DynamoDB's on-demand prices
// are those after the November 2024 reduction of 50 %).
export const PRICES = {
  region: 'us-east-1',
  checked: '2025-06',
  /** https://aws.amazon.com/lambda/pricing/ (Arm, first 7.5 billion GB-s tier). */
  lambdaArmPerGbSecond: 0.000_013_333_4,
  /** https://aws.amazon.com/lambda/pricing/ */
  lambdaPerRequest: 0.2 / 1e6,
  /** https://aws.amazon.com/sqs/pricing/ (standard queue, after the free tier; each 64 KB chunk of a payload is one request). */
  sqsPerRequest: 0.4 / 1e6,
  sqsChunkBytes: 64 * 1024,
  /** https://aws.amazon.com/dynamodb/pricing/on-demand/ (write request unit: 1 KB; read: 4 KB strongly consistent). */
  dynamoPerWriteRequestUnit: 0.625 / 1e6,
  dynamoPerReadRequestUnit: 0.125 / 1e6,
  /** https://aws.amazon.com/dynamodb/pricing/on-demand/ (Standard table class, after the first 25 GB). */
  dynamoStoragePerGbMonth: 0.25,
  /** https://aws.amazon.com/cloudwatch/pricing/ (Logs, standard class ingestion). */
  logsPerGbIngested: 0.5,
  /** https://aws.amazon.com/xray/pricing/ (traces recorded, after the free 100,000 a month). */
  xrayPerTraceRecorded: 5 / 1e6,
  /** SSM GetParameter on a standard parameter with standard throughput: no charge. */
  ssmPerGetParameter: 0,
} as const;

/** Memory sizes of the deployed functions (infra/constructs/poller.ts and consumer.ts). */
export const LAMBDA_MEMORY_MB = { poller: 512, consumer: 512 } as const;

/**
 * The fleet's other prices (us-east-1, standard resolution, first tiers). Consulted 2026-11-27:
 * https://aws.amazon.com/cloudwatch/pricing/ (metrics, alarms, dashboards; free tier 10 metrics, 10 alarms, 3
 * dashboards) and https://aws.amazon.com/eventbridge/pricing/ (Scheduler: 14 million invocations a month free,
 * then $1.00 per million; scheduled rules on the default bus cost nothing), paid rates as the issue states them
 * and as the 2026-03 guide at cloudburn.io/blog/amazon-eventbridge-pricing lists them.
 */
export const FLEET_PRICES = {
  metricPerMonth: 0.3,
  alarmPerMonth: 0.1,
  dashboardPerMonth: 3,
  schedulerPerInvocation: 1 / 1e6,
  schedulerFreeInvocations: 14e6,
  xrayFreeTraces: 100_000,
  /** CloudWatch Logs counts 26 bytes per log event besides its message. */
  logEventOverheadBytes: 26,
} as const;
