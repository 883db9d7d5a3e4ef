// The functions' settings, declared once: RULES (a zod schema per value; messages read after the setting's
// name), DEFAULTS, and ENVIRONMENT, the one schema of every Lambda environment variable, which each function
// parses once at cold start (readEnvironment: a bad variable fails the cold start naming it). infra/config.ts
// checks `orderFeed.<key>` with the same RULES and DEFAULTS; the constructs write each environment as an
// object typed by the schema's input, so a renamed or missing variable fails `tsc`. zod/mini, not 'zod':
// the same validation core with a functional API esbuild can tree-shake (see model/parse-order.ts).
import * as z from 'zod/mini';
import { parsePartnerBaseUrl, partnerBaseUrlProblem } from '../partner/url-policy.js';

/** An integer from `min` to `max`. */
export function integer(min: number, max: number) {
  const error = `must be an integer from ${min} to ${max}`;
  return z.int({ error }).check(z.minimum(min, { error }), z.maximum(max, { error }));
}

/** One of a few fixed strings. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `must be one of ${values.map((value) => `"${value}"`).join(', ')}` });
}

/** A trimmed string matching `pattern`; `expected` completes "must be …". */
export function matching(pattern: RegExp, expected: string) {
  return z.string(STRING).check(z.trim(), z.regex(pattern, { error: `must be ${expected}` }));
}

/** A zod step running `check`: what it returns is the value, what it throws is the error message. */
export function checked<I, O>(check: (value: I) => O): z.ZodMiniTransform<O, I> {
  return z.transform((value: I, context) => {
    try {
      return check(value);
    } catch (error) {
      context.issues.push({ code: 'custom', message: (error as Error).message, input: value });
      return z.NEVER;
    }
  });
}

/** A trimmed string checked (and possibly normalised) by `check`. */
function checkedText(check: (text: string) => string) {
  return z.pipe(z.string(STRING).check(z.trim()), checked(check));
}

const STRING = { error: 'must be a string' };

/** The rule of every setting the functions read, on its value (the deployment spells values its own way). */
export const RULES = {
  /** Names the feed: the key of its cursor item and `source.feedId` of its messages. */
  feedId: matching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-" (1 to 64)'),
  /** https; http only for loopback hosts; no credentials, query or fragment. Never echoed (may hold a secret). */
  partnerBaseUrl: checkedText(checkPartnerBaseUrl),
  /** Name of the SSM SecureString parameter holding the partner token (never the token; never echoed). */
  tokenParameterName: checkedText(checkParameterName),
  /** Only these vendors (the API `vendorIds` filter); unset: all vendors. */
  vendorIds: z
    .array(
      z.string(STRING).check(
        z.trim(),
        z.regex(/^[A-Za-z0-9._:-]{1,128}$/, {
          error: (issue) =>
            `has an invalid vendor id "${String(issue.input)}" (letters, digits, ".", "_", ":" or "-")`,
        }),
      ),
    )
    .check(
      z.minLength(1, { error: 'must list at least one vendor id when set' }),
      z.refine((ids: string[]) => new Set(ids).size === ids.length, { error: 'must not repeat a vendor id' }),
    ),
  /** Hide updates younger than this (the API `minAgeMinutes`); unset: none hidden. */
  minAgeMinutes: integer(1, 1440),
  /** false: the feed is switched off (schedule disabled, every run does nothing); its cursor is kept. */
  enabled: z.pipe(
    z.union([z.boolean(), z.enum(['true', 'false'])], { error: 'must be one of "true", "false"' }),
    z.transform((value: boolean | 'true' | 'false') => value === true || value === 'true'),
  ),
  /** Order versions per page (the API allows 1 to 100). */
  pageSize: integer(1, 100),
  /** Pages one run fetches at most; unset: no cap (a run goes on until caught up or out of time). */
  maxPagesPerRun: integer(1, 100_000),
  /**
   * The largest page body (bytes) the poller reads; a larger one is asked again with a smaller page size. At
   * least 2 MiB, so a page of one order the pipeline can carry (a 1 MiB message) fits; at most 64 MiB, the
   * poller's memory growing with it (infra/constructs/poller.ts, pollerMemoryMb).
   */
  maxPageBodyBytes: integer(2 * 1024 * 1024, 64 * 1024 * 1024),
  /** Runs that may follow one another at once while a backlog lasts; 0: every run waits for the schedule. */
  maxContinuations: integer(0, 100_000),
  /** How list filters go in the query string: `repeat` (a=1&a=2) or `comma` (a=1,2). */
  arrayQueryEncoding: oneOf(['repeat', 'comma']),
  /**
   * After an expired cursor, restart this long before the last progress instead of from the earliest entry.
   * At least 1 (`fromTimestamp` is exclusive); at most 3 × 366 days, the partner keeping data 36 months.
   */
  cursorRecoveryLookbackMinutes: integer(1, 1_581_120),
  /**
   * The partner's published limit for one token, requests per second: the token's shared request budget
   * (ingest/request-budget.ts) never goes above it; unset: the budget finds the limit from 429s.
   */
  partnerRequestsPerSecond: integer(1, 10_000),
  /** CloudWatch namespace of the functions' metrics (read by Powertools). */
  metricsNamespace: checkedText(checkNamespace),
  /** Days an order version stays in the history table (DynamoDB TTL on `expiresAt`); 0: kept forever. */
  historyRetentionDays: integer(0, 3650),
};

/** The defaults, the same at synth and at cold start. */
export const DEFAULTS = {
  feedId: 'orders',
  enabled: true,
  pageSize: 100,
  // A body of empty objects parses to ~22 × its size: 8 MiB is what 512 MB holds (infra/constructs/poller.ts).
  maxPageBodyBytes: 8 * 1024 * 1024,
  maxContinuations: 1000,
  arrayQueryEncoding: 'repeat',
  metricsNamespace: 'OrderFeedIngester',
  history: true,
  // About 13 months: a year-over-year comparison still finds last year's versions.
  historyRetentionDays: 400,
  // Poller timings: constants, not settings (no variable reads them; tests pass their own in the config).
  /** Time kept free at the end of an invocation to publish and commit the last page. */
  safetyMarginSeconds: 20,
  /** How long the lease outlives the invocation's deadline. */
  leaseGraceSeconds: 60,
  /** First wait after a 401, doubled per consecutive 401, up to the maximum. */
  authBackoffInitialSeconds: 300,
  authBackoffMaxSeconds: 3600,
} as const;

// How a variable's text becomes the value its rule checks.
const digits = z.string().check(z.regex(/^-?\d+$/, { error: 'must be an integer' }));
const int = (rule: z.ZodMiniType<number, number>) => z.pipe(z.pipe(digits, z.transform(Number)), rule);
const withDefault = <T extends z.ZodMiniType<unknown, string>>(schema: T, value: string | number) =>
  z.prefault(schema, String(value) as z.input<T>);
const entries = checked((text: string) => {
  const values = text.split(',').map((entry) => entry.trim());
  if (values.includes('')) throw new Error('has an empty entry');
  return values;
});
const resourceName = matching(/^\S+$/, 'a resource name or URL without spaces');

/** Every variable of the functions' environments. */
export const ENVIRONMENT = z.object({
  // A feed's settings.
  FEED_ID: RULES.feedId, // required at cold start: a function never guesses its feed
  PARTNER_BASE_URL: RULES.partnerBaseUrl,
  PARTNER_TOKEN_PARAMETER: RULES.tokenParameterName,
  VENDOR_IDS: z.optional(z.pipe(entries, RULES.vendorIds)),
  MIN_AGE_MINUTES: z.optional(int(RULES.minAgeMinutes)),
  FEED_ENABLED: z.prefault(
    z.pipe(
      oneOf(['true', 'false']),
      z.transform((text) => text === 'true'),
    ),
    'true',
  ),
  // The poller's settings, the same for every feed of a deployment.
  PAGE_SIZE: withDefault(int(RULES.pageSize), DEFAULTS.pageSize),
  MAX_PAGES_PER_RUN: z.optional(int(RULES.maxPagesPerRun)),
  MAX_PAGE_BODY_BYTES: withDefault(int(RULES.maxPageBodyBytes), DEFAULTS.maxPageBodyBytes),
  MAX_CONTINUATIONS: withDefault(int(RULES.maxContinuations), DEFAULTS.maxContinuations),
  ARRAY_QUERY_ENCODING: z.prefault(RULES.arrayQueryEncoding, DEFAULTS.arrayQueryEncoding),
  CURSOR_RECOVERY_LOOKBACK_MINUTES: z.optional(int(RULES.cursorRecoveryLookbackMinutes)),
  PARTNER_REQUESTS_PER_SECOND: z.optional(int(RULES.partnerRequestsPerSecond)),
  // The stack's resources, written from CloudFormation references.
  CURSOR_TABLE_NAME: resourceName,
  ORDERS_QUEUE_URL: resourceName,
  /** Downstream subscriber name → its queue URL, as JSON. */
  DOWNSTREAM_QUEUE_URLS: z.prefault(checked(parseQueueUrls), '{}'),
  QUARANTINE_BUCKET_NAME: resourceName,
  ORDERS_TABLE_NAME: resourceName,
  /** The history table (every version once per order id and version); unset: history is off. */
  HISTORY_TABLE_NAME: z.optional(resourceName),
  HISTORY_RETENTION_DAYS: withDefault(int(RULES.historyRetentionDays), DEFAULTS.historyRetentionDays),
  // Read by Powertools in both functions (observability/powertools.ts).
  POWERTOOLS_METRICS_NAMESPACE: z.prefault(RULES.metricsNamespace, DEFAULTS.metricsNamespace),
  /** The ingester instance: the `Ingester` dimension of every metric (unset in local runs and tests). */
  INGESTER_INSTANCE: z.optional(
    matching(/^[^\s].{0,1023}$/, 'a CloudWatch dimension value (1 to 1024 characters)'),
  ),
});

/** The poller's variables: all but the consumer's tables. */
export const POLLER_ENVIRONMENT = z.omit(ENVIRONMENT, {
  ORDERS_TABLE_NAME: true,
  HISTORY_TABLE_NAME: true,
  HISTORY_RETENTION_DAYS: true,
});
/** The consumer's variables. */
export const CONSUMER_ENVIRONMENT = z.pick(ENVIRONMENT, {
  ORDERS_TABLE_NAME: true,
  HISTORY_TABLE_NAME: true,
  HISTORY_RETENTION_DAYS: true,
  POWERTOOLS_METRICS_NAMESPACE: true,
  INGESTER_INSTANCE: true,
});
/** What the stack writes into each function's environment (unset optional variables are left out). */
export type PollerEnvironment = z.input<typeof POLLER_ENVIRONMENT>;
export type ConsumerEnvironment = z.input<typeof CONSUMER_ENVIRONMENT>;

export type Env = Readonly<Record<string, string | undefined>>;

class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'ERR_CONFIG';
}

/** Never echoed in an error: they may hold a secret (credentials in a URL, a pasted token). */
const REDACTED: readonly string[] = ['PARTNER_BASE_URL', 'PARTNER_TOKEN_PARAMETER'];

/**
 * Reads `schema`'s variables from `env` (blank counts as unset), with defaults; throws a ConfigError naming
 * the first variable at fault.
 */
export function readEnvironment<S extends z.ZodMiniObject>(schema: S, env: Env): z.output<S> {
  const given: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = env[name]?.trim();
    if (value) given[name] = value;
  }
  const result = z.safeParse(schema, given);
  if (result.success) return result.data;
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const name = String(issue.path[0]);
  const value = given[name];
  const problem = value === undefined ? 'is required but not set' : issue.message;
  const got = value === undefined || REDACTED.includes(name) ? '' : ` (got "${value}")`;
  throw new ConfigError(`configuration error: ${name} ${problem}${got}`);
}

/** The partner client's own policy (url-policy.ts); normalised without a trailing slash. */
function checkPartnerBaseUrl(text: string): string {
  const problem = partnerBaseUrlProblem(text);
  if (problem !== undefined) throw new Error(problem);
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

/** A JSON object of non-empty strings (subscriber name → queue URL). */
function parseQueueUrls(text: string): Record<string, string> {
  let map: unknown;
  try {
    map = JSON.parse(text);
  } catch {
    throw new Error('must be a JSON object of strings');
  }
  if (typeof map !== 'object' || map === null || Array.isArray(map)) {
    throw new Error('must be a JSON object of strings');
  }
  for (const [key, value] of Object.entries(map)) {
    if (typeof value !== 'string' || value === '')
      throw new Error(`entry "${key}" must be a non-empty string`);
  }
  return map as Record<string, string>;
}

/** The metrics namespace Powertools uses in both functions, read and checked like the rest. */
export function readMetricsNamespace(env: Env): string {
  return readMetricsSettings(env).POWERTOOLS_METRICS_NAMESPACE;
}

/** The metrics namespace and the instance dimension of both functions. */
export function readMetricsSettings(env: Env) {
  const schema = z.pick(ENVIRONMENT, { POWERTOOLS_METRICS_NAMESPACE: true, INGESTER_INSTANCE: true });
  return readEnvironment(schema, env);
}
