// The one list of business metric names and dimensions: the functions count them, the monitoring construct
// alarms and graphs them, the tests import them. A name not in this list cannot be counted, so renaming one
// breaks the build rather than silently emptying an alarm.

import type { FleetGauges } from '../fleet/dispatch.js';

/** @deprecated No metric carries it any more (issue 32); infra/constructs/monitoring.ts drops its use. */
export const FEED_ID_DIMENSION = 'FeedId';
/**
 * Every metric is published under `service` alone (no per-feed dimension: a feed's state is on its registry
 * row), and its ingester instance, so two instances in one account never watch each other.
 */
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
  'DispatchRequests',
] as const;

/**
 * The fleet's gauges the alarms watch, one value each per dispatch (one EMF document): FleetGauges
 * (core/fleet/dispatch.ts) by metric name. They replace the per-feed alarms (tools/RUNBOOK.md, "Where each
 * per-feed alarm went). Every gauge (by state, behind, pollers, waiting, the stalest lag) is also on the
 * dispatch's log line, which the dashboard charts: a metric costs $0.30 a month, a log line nothing more.
 */
export const FLEET_GAUGES = {
  stale: 'StaleFeeds',
  stopped: 'StoppedFeeds',
  authFailing: 'AuthFailingFeeds',
  unregistered: 'UnregisteredFeeds',
} as const satisfies Partial<Record<keyof FleetGauges, string>>;
type FleetGaugeName = (typeof FLEET_GAUGES)[keyof typeof FLEET_GAUGES];

export const DISPATCHER_COUNTS = ['FeedsSeeded', 'PollerInvokeFailures'] as const;

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

export type CountName =
  | (typeof POLLER_COUNTS)[number]
  | (typeof CONSUMER_COUNTS)[number]
  | (typeof DISPATCHER_COUNTS)[number]
  | FleetGaugeName
  | FindingMetricName;
export type PollerMetricName = (typeof POLLER_COUNTS)[number];
export type ConsumerCountName = (typeof CONSUMER_COUNTS)[number];

/** What the functions need of a metrics sink: Powertools Metrics on Lambda, NO_METRICS or a recorder elsewhere. */
export interface FunctionMetrics {
  count(name: CountName, value?: number): void;
  /** Flushes what the invocation recorded (one EMF document). */
  publish(): void;
}
