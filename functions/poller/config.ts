// The poller's configuration, read from its environment and checked at cold start. Every variable is
// declared once in core/config/settings.ts (ENVIRONMENT), from which the stack also writes it.
import { DEFAULTS, type Env, POLLER_ENVIRONMENT, readEnvironment } from '../core/config/settings.js';

export type PollerConfig = ReturnType<typeof loadPollerConfig>;

export function loadPollerConfig(env: Env) {
  const read = readEnvironment(POLLER_ENVIRONMENT, env);
  return {
    feedId: read.FEED_ID,
    cursorTableName: read.CURSOR_TABLE_NAME,
    partnerBaseUrl: read.PARTNER_BASE_URL,
    tokenParameterName: read.PARTNER_TOKEN_PARAMETER,
    ordersQueueUrl: read.ORDERS_QUEUE_URL,
    /** Downstream subscriber name → its queue URL. */
    downstreamQueueUrls: read.DOWNSTREAM_QUEUE_URLS,
    quarantineBucketName: read.QUARANTINE_BUCKET_NAME,
    pageSize: read.PAGE_SIZE,
    /** Undefined: no page cap; the run ends when caught up or out of time. */
    maxPagesPerRun: read.MAX_PAGES_PER_RUN,
    /** The partner client's cap on a 200 body; a larger page is asked again smaller (ingest/page-size.ts). */
    maxPageBodyBytes: read.MAX_PAGE_BODY_BYTES,
    /** False: the feed is switched off and every run does nothing. */
    enabled: read.FEED_ENABLED,
    /** Runs that may follow one another at once while a backlog lasts (0: every run waits for the schedule). */
    maxContinuations: read.MAX_CONTINUATIONS,
    minAgeMinutes: read.MIN_AGE_MINUTES,
    vendorIds: read.VENDOR_IDS,
    arrayQueryEncoding: read.ARRAY_QUERY_ENCODING,
    recoveryLookbackMinutes: read.CURSOR_RECOVERY_LOOKBACK_MINUTES,
    /** The cap of the token's shared request budget; undefined: none (the budget learns from 429s). */
    partnerRequestsPerSecond: read.PARTNER_REQUESTS_PER_SECOND,
    /** Time kept free at the end of an invocation to publish and commit the last page. */
    safetyMarginMs: DEFAULTS.safetyMarginSeconds * 1000,
    /** How long the lease outlives the invocation's deadline: what a crashed run blocks the feed beyond it. */
    leaseGraceMs: DEFAULTS.leaseGraceSeconds * 1000,
    authBackoff: {
      initialMs: DEFAULTS.authBackoffInitialSeconds * 1000,
      maxMs: DEFAULTS.authBackoffMaxSeconds * 1000,
    },
  };
}
