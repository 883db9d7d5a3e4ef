import { DEFAULTS, type Env, POLLER_ENVIRONMENT, readEnvironment } from '../core/config/settings.js';

/** pollFeed's PollSettings (core/ingest/ports.ts, where its fields are described) and the adapters' names. */
export type PollerConfig = ReturnType<typeof loadPollerConfig>;

export function loadPollerConfig(env: Env) {
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
    maxPageBodyBytes: read.MAX_PAGE_BODY_BYTES,
    enabled: read.FEED_ENABLED,
    maxContinuations: read.MAX_CONTINUATIONS,
    minAgeMinutes: read.MIN_AGE_MINUTES,
    vendorIds: read.VENDOR_IDS,
    arrayQueryEncoding: read.ARRAY_QUERY_ENCODING,
    recoveryLookbackMinutes: read.CURSOR_RECOVERY_LOOKBACK_MINUTES,
    /** The cap of the token's shared request budget; undefined: none (the budget learns from 429s). */
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
