// The poller's configuration, read from its environment and checked at cold start. Every variable is
// declared once in core/config/settings.ts (ENVIRONMENT), from which the stack also writes it.
import { type Env, POLLER_ENVIRONMENT, readEnvironment } from '../core/config/settings.js';

export interface PollerConfig {
  feedId: string;
  cursorTableName: string;
  partnerBaseUrl: string;
  tokenParameterName: string;
  ordersQueueUrl: string;
  /** Downstream subscriber name → its queue URL. */
  downstreamQueueUrls: Record<string, string>;
  quarantineBucketName: string;
  pageSize: number;
  /** Undefined: no page cap; the run ends when caught up or out of time. */
  maxPagesPerRun: number | undefined;
  /** False: the feed is switched off and every run does nothing. */
  enabled: boolean;
  /** Runs that may follow one another at once while a backlog lasts (0: every run waits for the schedule). */
  maxContinuations: number;
  minAgeMinutes: number | undefined;
  vendorIds: string[] | undefined;
  orderIds: number[] | undefined;
  arrayQueryEncoding: 'repeat' | 'comma';
  recoveryLookbackMinutes: number | undefined;
  /** Time kept free at the end of an invocation to publish and commit the last page. */
  safetyMarginMs: number;
  /**
   * How long the lease outlives the invocation's own deadline, so only a crashed invocation's lease ever
   * lapses. The time a crashed run blocks the feed is its remaining time plus this.
   */
  leaseGraceMs: number;
  authBackoff: { initialMs: number; maxMs: number };
}

export function loadPollerConfig(env: Env): PollerConfig {
  const read = readEnvironment(POLLER_ENVIRONMENT, env);
  return {
    feedId: read.FEED_ID,
    cursorTableName: read.CURSOR_TABLE_NAME,
    partnerBaseUrl: read.PARTNER_BASE_URL,
    tokenParameterName: read.PARTNER_TOKEN_PARAMETER,
    ordersQueueUrl: read.ORDERS_QUEUE_URL,
    downstreamQueueUrls: read.DOWNSTREAM_QUEUE_URLS,
    quarantineBucketName: read.QUARANTINE_BUCKET_NAME,
    pageSize: read.PAGE_SIZE,
    maxPagesPerRun: read.MAX_PAGES_PER_RUN,
    enabled: read.FEED_ENABLED,
    maxContinuations: read.MAX_CONTINUATIONS,
    minAgeMinutes: read.MIN_AGE_MINUTES,
    vendorIds: read.VENDOR_IDS,
    orderIds: read.ORDER_IDS,
    arrayQueryEncoding: read.ARRAY_QUERY_ENCODING,
    recoveryLookbackMinutes: read.CURSOR_RECOVERY_LOOKBACK_MINUTES,
    safetyMarginMs: read.SAFETY_MARGIN_SECONDS * 1000,
    leaseGraceMs: read.LEASE_GRACE_SECONDS * 1000,
    authBackoff: {
      initialMs: read.AUTH_BACKOFF_INITIAL_SECONDS * 1000,
      maxMs: read.AUTH_BACKOFF_MAX_SECONDS * 1000,
    },
  };
}
