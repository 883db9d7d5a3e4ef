import { DEFAULTS, type Env, POLLER_ENVIRONMENT, readEnvironment } from '../core/config/settings.js';

/**
 * The deployment's settings of the poller and the adapters' names; a feed's own settings are on its registry
 * row (core/fleet/feed-config.ts), combined with these by pollSettingsOf (core/ingest/poll-feed.ts).
 */
export type PollerConfig = ReturnType<typeof loadPollerConfig>;

export function loadPollerConfig(env: Env) {
  const read = readEnvironment(POLLER_ENVIRONMENT, env);
  return {
    cursorTableName: read.CURSOR_TABLE_NAME,
    /** The base URL of every feed whose row names none. */
    partnerBaseUrl: read.PARTNER_BASE_URL,
    ordersQueueUrl: read.ORDERS_QUEUE_URL,
    downstreamQueueUrls: read.DOWNSTREAM_QUEUE_URLS,
    quarantineBucketName: read.QUARANTINE_BUCKET_NAME,
    maxPagesPerRun: read.MAX_PAGES_PER_RUN,
    maxPageBodyBytes: read.MAX_PAGE_BODY_BYTES,
    arrayQueryEncoding: read.ARRAY_QUERY_ENCODING,
    recoveryLookbackMinutes: read.CURSOR_RECOVERY_LOOKBACK_MINUTES,
    /** The cap of each token's shared request budget; undefined: none (the budget learns from 429s). */
    partnerRequestsPerSecond: read.PARTNER_REQUESTS_PER_SECOND,
    /** Time kept free at the end of an invocation to publish and commit the last page. */
    safetyMarginMs: DEFAULTS.safetyMarginSeconds * 1000,
    leaseGraceMs: DEFAULTS.leaseGraceSeconds * 1000,
    authBackoff: {
      initialMs: DEFAULTS.authBackoffInitialSeconds * 1000,
      maxMs: DEFAULTS.authBackoffMaxSeconds * 1000,
    },
  };
}
