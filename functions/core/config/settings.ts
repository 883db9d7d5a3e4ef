// The settings, declared once (functions/README.md, core/config): RULES and DEFAULTS, which infra/config.ts
// checks at synth too, and ENVIRONMENT, parsed at cold start. The constructs write each environment typed by
// the schema's input, so a renamed or missing variable fails `tsc`. zod/mini: see model/parse-order.ts.
import * as z from 'zod/mini';
import { parsePartnerBaseUrl, partnerBaseUrlProblem } from '../partner/url-policy.js';

export function integer(min: number, max: number) {
  const error = `must be an integer from ${min} to ${max}`;
  return z.int({ error }).check(z.minimum(min, { error }), z.maximum(max, { error }));
}

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

function checkedText(check: (text: string) => string) {
  return z.pipe(z.string(STRING).check(z.trim()), checked(check));
}

const STRING = { error: 'must be a string' };

/** The rule of each setting on its value (each side spells values its own way); infra/README.md lists them. */
export const RULES = {
  feedId: matching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-" (1 to 64)'),
  partnerBaseUrl: checkedText(checkPartnerBaseUrl),
  tokenParameterName: checkedText(checkParameterName),
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
  minAgeMinutes: integer(1, 1440),
  enabled: z.pipe(
    z.union([z.boolean(), z.enum(['true', 'false'])], { error: 'must be one of "true", "false"' }),
    z.transform((value: boolean | 'true' | 'false') => value === true || value === 'true'),
  ),
  pageSize: integer(1, 100),
  maxPagesPerRun: integer(1, 100_000),
  // At least 2 MiB, so a page of one order the pipeline can carry (a 1 MiB message) fits; at most 64 MiB, the
  // poller's memory growing with it (infra/constructs/poller.ts).
  maxPageBodyBytes: integer(2 * 1024 * 1024, 64 * 1024 * 1024),
  // A feed's interval (its registry row, the deployment's `schedule`); the dispatcher runs every minute.
  scheduleMinutes: integer(1, 60),
  // Poller invocations the dispatcher keeps running at once: the ingester's own share of the account's
  // concurrency (1,000 by default), and never more than 30 % of what the account leaves unreserved.
  maxConcurrentPollers: integer(1, 1000),
  // A feed not caught up for this long is stale (the fleet gauge and its alarm); above any interval.
  alarmLagMinutes: integer(2, 1440),
  arrayQueryEncoding: oneOf(['repeat', 'comma']),
  // At least 1 (`fromTimestamp` is exclusive); at most 3 × 366 days, the partner keeping data 36 months.
  cursorRecoveryLookbackMinutes: integer(1, 1_581_120),
  partnerRequestsPerSecond: integer(1, 10_000),
  metricsNamespace: checkedText(checkNamespace),
  historyRetentionDays: integer(0, 3650),
};

export const DEFAULTS = {
  feedId: 'orders',
  enabled: true,
  pageSize: 100,
  // A body of empty objects parses to ~22 × its size: 8 MiB is what 512 MB holds (infra/constructs/poller.ts).
  maxPageBodyBytes: 8 * 1024 * 1024,
  scheduleMinutes: 1,
  // 1 % of the default account limit: 10,000 idle feeds fit in a tick (infra/FLEET.md, "Defaults").
  maxConcurrentPollers: 10,
  alarmLagMinutes: 30,
  arrayQueryEncoding: 'repeat',
  metricsNamespace: 'OrderFeedIngester',
  history: true,
  // About 13 months: a year-over-year comparison still finds last year's versions.
  historyRetentionDays: 400,
  // Poller timings: constants, not settings (no variable reads them; tests pass their own in the config).
  safetyMarginSeconds: 20,
  leaseGraceSeconds: 60,
  authBackoffInitialSeconds: 300,
  authBackoffMaxSeconds: 3600,
} as const;

// How a variable's text becomes the value its rule checks.
const digits = z.string().check(z.regex(/^-?\d+$/, { error: 'must be an integer' }));
const int = (rule: z.ZodMiniType<number, number>) => z.pipe(z.pipe(digits, z.transform(Number)), rule);
const withDefault = <T extends z.ZodMiniType<unknown, string>>(schema: T, value: string | number) =>
  z.prefault(schema, String(value) as z.input<T>);
const resourceName = matching(/^\S+$/, 'a resource name or URL without spaces');

export const ENVIRONMENT = z.object({
  /** The partner's base URL for every feed whose row names none. */
  PARTNER_BASE_URL: RULES.partnerBaseUrl,
  MAX_PAGES_PER_RUN: z.optional(int(RULES.maxPagesPerRun)),
  MAX_PAGE_BODY_BYTES: withDefault(int(RULES.maxPageBodyBytes), DEFAULTS.maxPageBodyBytes),
  ARRAY_QUERY_ENCODING: z.prefault(RULES.arrayQueryEncoding, DEFAULTS.arrayQueryEncoding),
  CURSOR_RECOVERY_LOOKBACK_MINUTES: z.optional(int(RULES.cursorRecoveryLookbackMinutes)),
  PARTNER_REQUESTS_PER_SECOND: z.optional(int(RULES.partnerRequestsPerSecond)),
  /** The cursor table: every feed's row (cursor, lease, configuration, state), the budgets, the dispatch lock. */
  CURSOR_TABLE_NAME: resourceName,
  ORDERS_QUEUE_URL: resourceName,
  /** Downstream subscriber name → its queue URL, as JSON. */
  DOWNSTREAM_QUEUE_URLS: z.prefault(checked(parseQueueUrls), '{}'),
  QUARANTINE_BUCKET_NAME: resourceName,
  /** The one poller function the dispatcher invokes with each batch of feeds. */
  POLLER_FUNCTION_NAME: resourceName,
  MAX_CONCURRENT_POLLERS: withDefault(int(RULES.maxConcurrentPollers), DEFAULTS.maxConcurrentPollers),
  STALE_AFTER_MINUTES: withDefault(int(RULES.alarmLagMinutes), DEFAULTS.alarmLagMinutes),
  /**
   * Where the deployment's initial set of feeds lies (`s3://bucket/key`, a CDK asset: Lambda's 4 KB environment
   * holds no thousand feeds): its text (`initialFeedsText`, fleet/feed-config.ts) is read at cold start, the
   * dispatcher creates the rows it lacks. Unset: none. Its feeds are checked key by key by parseInitialFeeds
   * (the registry's rules, which are built from RULES, so the dispatcher's config.ts applies it).
   */
  INITIAL_FEEDS_OBJECT: z.optional(
    matching(/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\/.+$/, 'an s3://bucket/key URL'),
  ),
  ORDERS_TABLE_NAME: resourceName,
  /** Unset: history is off. */
  HISTORY_TABLE_NAME: z.optional(resourceName),
  HISTORY_RETENTION_DAYS: withDefault(int(RULES.historyRetentionDays), DEFAULTS.historyRetentionDays),
  POWERTOOLS_METRICS_NAMESPACE: z.prefault(RULES.metricsNamespace, DEFAULTS.metricsNamespace),
  /** The `Ingester` dimension of every metric (unset in local runs and tests). */
  INGESTER_INSTANCE: z.optional(
    matching(/^[^\s].{0,1023}$/, 'a CloudWatch dimension value (1 to 1024 characters)'),
  ),
});

/** The poller's: the deployment-wide settings only; a feed's own are on its registry row. */
export const POLLER_ENVIRONMENT = z.pick(ENVIRONMENT, {
  PARTNER_BASE_URL: true,
  MAX_PAGES_PER_RUN: true,
  MAX_PAGE_BODY_BYTES: true,
  ARRAY_QUERY_ENCODING: true,
  CURSOR_RECOVERY_LOOKBACK_MINUTES: true,
  PARTNER_REQUESTS_PER_SECOND: true,
  CURSOR_TABLE_NAME: true,
  ORDERS_QUEUE_URL: true,
  DOWNSTREAM_QUEUE_URLS: true,
  QUARANTINE_BUCKET_NAME: true,
  POWERTOOLS_METRICS_NAMESPACE: true,
  INGESTER_INSTANCE: true,
});
export const DISPATCHER_ENVIRONMENT = z.pick(ENVIRONMENT, {
  CURSOR_TABLE_NAME: true,
  POLLER_FUNCTION_NAME: true,
  MAX_CONCURRENT_POLLERS: true,
  STALE_AFTER_MINUTES: true,
  INITIAL_FEEDS_OBJECT: true,
  POWERTOOLS_METRICS_NAMESPACE: true,
  INGESTER_INSTANCE: true,
});
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
export type DispatcherEnvironment = z.input<typeof DISPATCHER_ENVIRONMENT>;

export type Env = Readonly<Record<string, string | undefined>>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'ERR_CONFIG';
}

/** Never echoed in an error: they may hold a secret (credentials in a URL, a pasted token). */
const REDACTED: readonly string[] = ['PARTNER_BASE_URL'];

/** Blank counts as unset; a ConfigError names the first variable at fault. */
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
  if (plain && (text.startsWith('eyJ') || text.length >= 40))
    throw new Error('looks like a secret value; give the name of the SSM parameter that holds the token');
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

function parseQueueUrls(text: string): Record<string, string> {
  let map: unknown;
  try {
    map = JSON.parse(text);
  } catch {} // not JSON: the check below refuses it
  if (typeof map !== 'object' || map === null || Array.isArray(map))
    throw new Error('must be a JSON object of strings');
  for (const [key, value] of Object.entries(map)) {
    if (typeof value !== 'string' || value === '')
      throw new Error(`entry "${key}" must be a non-empty string`);
  }
  return map as Record<string, string>;
}

export function readMetricsNamespace(env: Env): string {
  return readMetricsSettings(env).POWERTOOLS_METRICS_NAMESPACE;
}

export function readMetricsSettings(env: Env) {
  const schema = z.pick(ENVIRONMENT, { POWERTOOLS_METRICS_NAMESPACE: true, INGESTER_INSTANCE: true });
  return readEnvironment(schema, env);
}
