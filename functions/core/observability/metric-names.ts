// The one list of business metric names and dimensions: the functions count them, the monitoring construct
// alarms and graphs them, the tests import them. A name not in this list cannot be counted, so renaming one
// breaks the build rather than silently emptying an alarm.

/** Each poller metric is published twice: under `service` (the deployment) and `service` + FeedId (its feed). */
export const FEED_ID_DIMENSION = 'FeedId';
/** Every metric also carries its ingester instance, so two instances in one account never watch each other. */
export const INGESTER_DIMENSION = 'Ingester';

export const POLLER_COUNTS = [
  'PagesFetched',
  'VersionsPublished',
  'RecordsQuarantined',
  'OversizedRecords',
  'PartnerRetries',
  'RateLimitWaits',
  'CursorRecoveries',
  'AuthFailures',
  'LeaseContended',
  'MissingNextPageId',
  'StuckCursor',
  'UnreadablePages',
  'PageSizeReduced',
  'OrderOverBodyCap',
  'RecordsBeyondPageSize',
  'LongRateLimitHolds',
] as const;

export const POLLER_MILLISECONDS = ['RunDurationMs', 'PaceDelayMs'] as const;
export const POLLER_SECONDS = ['SecondsSinceCaughtUp'] as const;

export const CONSUMER_COUNTS = [
  'VersionsApplied',
  'VersionsStale',
  'MessagesFailed',
  'SalesCounted',
  'SalesReversed',
  'SalesAmountChanged',
] as const;

/** One count per finding kind, e.g. `FindingUnknownField` (the kinds are a fixed set: bounded metrics). */
export type FindingMetricName = `Finding${string}`;

export type CountName = (typeof POLLER_COUNTS)[number] | (typeof CONSUMER_COUNTS)[number] | FindingMetricName;
export type MillisecondsName = (typeof POLLER_MILLISECONDS)[number];
export type SecondsName = (typeof POLLER_SECONDS)[number];
export type MetricName = CountName | MillisecondsName | SecondsName;
export type PollerMetricName = (typeof POLLER_COUNTS)[number] | MillisecondsName | SecondsName;
export type ConsumerCountName = (typeof CONSUMER_COUNTS)[number];

/** What the functions need of a metrics sink: Powertools Metrics on Lambda, NO_METRICS or a recorder elsewhere. */
export interface FunctionMetrics {
  count(name: CountName, value?: number): void;
  milliseconds(name: MillisecondsName, value: number): void;
  seconds(name: SecondsName, value: number): void;
  /** Flushes what the invocation recorded (one EMF document). */
  publish(): void;
}
