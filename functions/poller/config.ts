// The poller's configuration, validated at cold start (see infra/constructs for where each is set).
import {
  ConfigError,
  type Env,
  integer,
  jsonStringMap,
  oneOf,
  optionalInteger,
  optionalList,
  requiredString,
} from '../core/config/env.js';
import { parsePartnerBaseUrl } from '../core/partner/url-policy.js';

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
  maxPagesPerRun: number;
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
  const partnerBaseUrl = requiredString(env, 'PARTNER_BASE_URL');
  try {
    parsePartnerBaseUrl(partnerBaseUrl);
  } catch (error) {
    throw new ConfigError(
      'PARTNER_BASE_URL',
      error instanceof Error ? `is invalid: ${error.message}` : 'is invalid',
    );
  }
  const orderIds = optionalList(env, 'ORDER_IDS')?.map((raw) => {
    const id = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(id)) {
      throw new ConfigError('ORDER_IDS', `has a value that is not an integer order id: "${raw}"`);
    }
    return id;
  });
  return {
    feedId: requiredString(env, 'FEED_ID'),
    cursorTableName: requiredString(env, 'CURSOR_TABLE_NAME'),
    partnerBaseUrl,
    tokenParameterName: requiredString(env, 'PARTNER_TOKEN_PARAMETER'),
    ordersQueueUrl: requiredString(env, 'ORDERS_QUEUE_URL'),
    downstreamQueueUrls: jsonStringMap(env, 'DOWNSTREAM_QUEUE_URLS'),
    quarantineBucketName: requiredString(env, 'QUARANTINE_BUCKET_NAME'),
    pageSize: integer(env, 'PAGE_SIZE', { min: 1, max: 100, default: 100 }),
    maxPagesPerRun: integer(env, 'MAX_PAGES_PER_RUN', { min: 1, max: 100_000, default: 50 }),
    minAgeMinutes: optionalInteger(env, 'MIN_AGE_MINUTES', { min: 1, max: 1440 }),
    vendorIds: optionalList(env, 'VENDOR_IDS'),
    orderIds,
    arrayQueryEncoding: oneOf(env, 'ARRAY_QUERY_ENCODING', ['repeat', 'comma'] as const, 'repeat'),
    recoveryLookbackMinutes: optionalInteger(env, 'CURSOR_RECOVERY_LOOKBACK_MINUTES', {
      min: 0,
      max: 60 * 24 * 400,
    }),
    safetyMarginMs: integer(env, 'SAFETY_MARGIN_SECONDS', { min: 1, max: 600, default: 20 }) * 1000,
    leaseGraceMs: integer(env, 'LEASE_GRACE_SECONDS', { min: 1, max: 3600, default: 60 }) * 1000,
    authBackoff: {
      initialMs: integer(env, 'AUTH_BACKOFF_INITIAL_SECONDS', { min: 1, max: 86_400, default: 300 }) * 1000,
      maxMs: integer(env, 'AUTH_BACKOFF_MAX_SECONDS', { min: 1, max: 86_400, default: 3600 }) * 1000,
    },
  };
}
