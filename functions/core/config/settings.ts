// Every setting the Lambda functions read, declared once (rule, default, variable, meaning). The CDK
// configuration (infra/config.ts, key `orderFeed.<key>`), the constructs that write each function's
// environment (infra/constructs/poller.ts, consumer.ts) and the functions' cold-start loaders
// (poller/config.ts, consumer/config.ts) all derive from these; test/infra/settings-contract.test.ts
// synthesizes the stack at the edges of every rule and loads the functions' configuration from it.
//
// Grouped by who sets them: a feed's own settings (a later list of feeds overrides these per feed, the
// top-level keys being the defaults), the poller's deployment-wide settings, tuning the deployment does
// not expose, and the names of the stack's resources (written from CloudFormation references).
import { isLoopbackHost, parsePartnerBaseUrl } from '../partner/url-policy.js';
import { checkedText, choice, flag, integer, integerList, jsonMap, list, text } from './setting.js';

/** Settings of one feed: one cursor chain over the partner API. */
export const FEED_SETTINGS = {
  feedId: /* @__PURE__ */ text({
    doc: 'Names the feed: the key of its cursor item and `source.feedId` of its messages',
    env: 'FEED_ID',
    envRequired: true,
    default: 'orders',
    pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    expected: 'letters, digits, ".", "_" or "-" (1 to 64)',
    extremes: ['f', /* @__PURE__ */ padded('F', 'x', 64)],
  }),
  partnerBaseUrl: /* @__PURE__ */ checkedText({
    doc: 'Partner API base URL: https; http only for loopback hosts; no credentials, query or fragment',
    env: 'PARTNER_BASE_URL',
    required: true,
    redact: true,
    check: checkPartnerBaseUrl,
    extremes: ['http://127.0.0.1:1', 'https://partner.example.com/test-pagination'],
  }),
  tokenParameterName: /* @__PURE__ */ checkedText({
    doc: 'Name of the SSM SecureString parameter holding the partner token (never the token)',
    env: 'PARTNER_TOKEN_PARAMETER',
    required: true,
    redact: true,
    check: checkParameterName,
    extremes: ['p', /* @__PURE__ */ padded('/', 'p', 1011)],
  }),
  vendorIds: /* @__PURE__ */ list({
    doc: 'Only these vendors (the API `vendorIds` filter); unset: all vendors',
    env: 'VENDOR_IDS',
    item: /^[A-Za-z0-9._:-]{1,128}$/,
    invalid: (id) => `has an invalid vendor id "${id}" (letters, digits, ".", "_", ":" or "-")`,
    empty: 'must list at least one vendor id when set',
    repeated: 'must not repeat a vendor id',
    extremes: [['v'], ['v-1', /* @__PURE__ */ padded('V', 'v', 128)]],
  }),
  minAgeMinutes: /* @__PURE__ */ integer({
    doc: 'Hide updates younger than this (the API `minAgeMinutes`); unset: none hidden',
    env: 'MIN_AGE_MINUTES',
    min: 1,
    max: 1440,
  }),
  enabled: /* @__PURE__ */ flag({
    doc:
      'false: the feed is switched off (its schedule is disabled; a run, even one a continuation already ' +
      'requested, does nothing); its cursor is kept for when it is switched on again',
    env: 'FEED_ENABLED',
    default: true,
  }),
} as const;

/** The poller's settings, the same for every feed of a deployment. */
export const POLLER_SETTINGS = {
  pageSize: /* @__PURE__ */ integer({
    doc: 'Order versions per page (the API allows 1 to 100)',
    env: 'PAGE_SIZE',
    min: 1,
    max: 100,
    default: 100,
  }),
  maxPagesPerRun: /* @__PURE__ */ integer({
    doc:
      'Pages one run fetches at most; unset: no cap, a run goes on until caught up or out of time (then the ' +
      'next run starts at once, see maxContinuations)',
    env: 'MAX_PAGES_PER_RUN',
    min: 1,
    max: 100_000,
  }),
  maxContinuations: /* @__PURE__ */ integer({
    doc:
      'Runs that may follow one another at once while a backlog lasts (self-continuation, a chain started by ' +
      'the schedule); 0: every run waits for the schedule',
    env: 'MAX_CONTINUATIONS',
    min: 0,
    max: 100_000,
    default: 1000,
  }),
  arrayQueryEncoding: /* @__PURE__ */ choice({
    doc: 'How list filters go in the query string: `repeat` (a=1&a=2) or `comma` (a=1,2)',
    env: 'ARRAY_QUERY_ENCODING',
    values: ['repeat', 'comma'],
    default: 'repeat',
  }),
  cursorRecoveryLookbackMinutes: /* @__PURE__ */ integer({
    doc:
      'After an expired cursor, restart this long before the last progress instead of from the earliest ' +
      'entry; at most 3 × 366 days, the partner keeping data up to 36 months',
    env: 'CURSOR_RECOVERY_LOOKBACK_MINUTES',
    // At least 1: `fromTimestamp` is exclusive, so 0 could skip versions stamped at the last progress.
    min: 1,
    max: 1_581_120, // 3 × 366 days in minutes (a literal: esbuild drops unused pure declarations only then)
  }),
} as const;

/** Read by Powertools in both functions (observability/powertools.ts). */
export const OBSERVABILITY_SETTINGS = {
  metricsNamespace: /* @__PURE__ */ checkedText({
    doc: "CloudWatch namespace of the functions' metrics",
    env: 'POWERTOOLS_METRICS_NAMESPACE',
    default: 'OrderFeedIngester',
    check: checkNamespace,
    extremes: ['N', /* @__PURE__ */ padded('N', 'n', 255)],
  }),
} as const;

/** Poller tuning the deployment configuration does not expose: the defaults apply on AWS. */
export const POLLER_TUNING = {
  orderIds: /* @__PURE__ */ integerList({
    doc: 'Only these orders (the API `orderIds` filter), for replays by hand',
    env: 'ORDER_IDS',
    itemName: 'order id',
  }),
  safetyMarginSeconds: /* @__PURE__ */ integer({
    doc: 'Time kept free at the end of an invocation to publish and commit the last page',
    env: 'SAFETY_MARGIN_SECONDS',
    min: 1,
    max: 600,
    default: 20,
  }),
  leaseGraceSeconds: /* @__PURE__ */ integer({
    doc: "How long the lease outlives the invocation's deadline",
    env: 'LEASE_GRACE_SECONDS',
    min: 1,
    max: 3600,
    default: 60,
  }),
  authBackoffInitialSeconds: /* @__PURE__ */ integer({
    doc: 'First wait after a 401, doubled per consecutive 401',
    env: 'AUTH_BACKOFF_INITIAL_SECONDS',
    min: 1,
    max: 86_400,
    default: 300,
  }),
  authBackoffMaxSeconds: /* @__PURE__ */ integer({
    doc: 'Longest wait after repeated 401s',
    env: 'AUTH_BACKOFF_MAX_SECONDS',
    min: 1,
    max: 86_400,
    default: 3600,
  }),
} as const;

/** The poller's resources, written by the stack from CloudFormation references. */
export const POLLER_RESOURCES = {
  cursorTableName: /* @__PURE__ */ text({
    pattern: /^\S+$/,
    expected: 'a resource name or URL without spaces',
    doc: 'Cursor table',
    env: 'CURSOR_TABLE_NAME',
    required: true,
  }),
  ordersQueueUrl: /* @__PURE__ */ text({
    pattern: /^\S+$/,
    expected: 'a resource name or URL without spaces',
    doc: 'Orders queue',
    env: 'ORDERS_QUEUE_URL',
    required: true,
  }),
  downstreamQueueUrls: /* @__PURE__ */ jsonMap({
    doc: 'Downstream subscriber name → its queue URL',
    env: 'DOWNSTREAM_QUEUE_URLS',
    default: {},
  }),
  quarantineBucketName: /* @__PURE__ */ text({
    pattern: /^\S+$/,
    expected: 'a resource name or URL without spaces',
    doc: 'Quarantine bucket',
    env: 'QUARANTINE_BUCKET_NAME',
    required: true,
  }),
} as const;

/** The consumer's resources, written by the stack from CloudFormation references. */
export const CONSUMER_RESOURCES = {
  ordersTableName: /* @__PURE__ */ text({
    pattern: /^\S+$/,
    expected: 'a resource name or URL without spaces',
    doc: 'Orders table',
    env: 'ORDERS_TABLE_NAME',
    required: true,
  }),
} as const;

/** `first` filled up to `length` characters, for the longest valid values in `extremes`. */
function padded(first: string, fill: string, length: number): string {
  return first + fill.repeat(length - first.length);
}

/**
 * The same policy as the partner client's own guard (url-policy.ts, which has the last word below), worded
 * as a configuration rule; normalised without a trailing slash. Messages never echo the URL.
 */
function checkPartnerBaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('must be an absolute URL such as https://partner.example.com');
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new Error('must use https (http is accepted only for loopback hosts such as localhost)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('must be an https URL');
  if (url.username !== '' || url.password !== '') {
    throw new Error('must not carry credentials; the token comes from its SSM parameter');
  }
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(text)) {
    throw new Error('must not have a query string or fragment');
  }
  const { origin, basePath } = parsePartnerBaseUrl(text);
  return `${origin}${basePath}`;
}

function checkParameterName(text: string): string {
  if (text.startsWith('arn:')) throw new Error('must be the parameter name, not its ARN');
  const hierarchical = /^(\/[A-Za-z0-9_.-]+)+$/.test(text);
  const plain = /^[A-Za-z0-9_.-]+$/.test(text);
  if (!hierarchical && !plain) {
    throw new Error(
      'must be an SSM parameter name: "/path/name" or a plain name (letters, digits, "_", ".", "-")',
    );
  }
  // A plain "name" that is long or shaped like a JWT is most likely the token pasted by mistake.
  if (plain && (text.startsWith('eyJ') || text.length >= 40)) {
    throw new Error('looks like a secret value; give the name of the SSM parameter that holds the token');
  }
  if (/^\/?(aws|ssm)/i.test(text))
    throw new Error('must not start with the reserved prefixes "aws" or "ssm"');
  if (text.length > 1011) throw new Error('must be at most 1011 characters');
  return text;
}

function checkNamespace(text: string): string {
  if (!/^[A-Za-z0-9._#:/ -]{1,255}$/.test(text)) {
    throw new Error(
      'must be a CloudWatch namespace (letters, digits, ".", "_", "-", "/", "#", ":" or space)',
    );
  }
  if (text.startsWith('AWS/')) throw new Error('must not start with the reserved "AWS/"');
  return text;
}
