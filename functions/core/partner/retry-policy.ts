// Pure timing math of the partner client: how long to wait after a 429 or a transient failure.
// No I/O and no clock of its own (callers pass `nowMs` and `random`), so every rule is unit-testable.

export interface RetryPolicy {
  /** Attempts in total for 5xx and network failures (the first request included). */
  maxAttempts: number;
  /** Full-jitter backoff: the ceiling of retry n is min(maxBackoffMs, baseBackoffMs * 2^(n-1)). */
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** Wait after a 429 whose Retry-After is missing or unparseable. */
  defaultRetryAfterMs: number;
  /**
   * Longest 429 wait the client will sleep through. A server asking for more cannot be satisfied
   * within one poll, so the client reports RetryLaterError (with the server's value) instead of
   * sleeping a shorter, capped time and being refused again.
   */
  maxRetryAfterMs: number;
  /** Growth of the wait per consecutive 429 (the spec: "backs off on repeats"). */
  rateLimitBackoffFactor: number;
  /** Consecutive 429s the client waits through before giving up with RetryLaterError. */
  maxRateLimitRetries: number;
  /** A wait is only started if at least this much time remains afterwards for the request itself. */
  minAttemptBudgetMs: number;
}

/** One place for every timing constant; a caller overrides single fields via `{ ...DEFAULT_RETRY_POLICY, x }`. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  baseBackoffMs: 200,
  maxBackoffMs: 5_000,
  defaultRetryAfterMs: 1_000,
  maxRetryAfterMs: 60_000,
  rateLimitBackoffFactor: 2,
  maxRateLimitRetries: 5,
  minAttemptBudgetMs: 250,
});

const WEEKDAYS = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_WEEKDAYS = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

// The three HTTP-date forms of RFC 9110 §5.6.7; recipients must accept all of them. Date.parse is not
// used on its own because it accepts almost anything ("1", "2024") and would turn garbage into a date.
const IMF_FIXDATE = new RegExp(`^${WEEKDAYS}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_WEEKDAYS}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${WEEKDAYS} ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

function utcMs(
  year: number,
  month: string,
  day: number,
  h: number,
  m: number,
  s: number,
): number | undefined {
  const monthIndex = MONTHS.indexOf(month);
  if (monthIndex < 0 || h > 23 || m > 59 || s > 60) return undefined;
  const ms = Date.UTC(year, monthIndex, day, h, m, Math.min(s, 59));
  // Date.UTC rolls 31 Feb over into March; a date that does not round-trip is not a real date.
  const d = new Date(ms);
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== monthIndex || d.getUTCDate() !== day)
    return undefined;
  return ms;
}

function parseHttpDate(value: string, nowMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m) return utcMs(Number(m[3]), m[2] ?? '', Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = RFC850_DATE.exec(value);
  if (m) {
    // Two-digit years: RFC 9110 says a year that looks more than 50 years ahead is in the past century.
    let year = 2000 + Number(m[3]);
    if (year > new Date(nowMs).getUTCFullYear() + 50) year -= 100;
    return utcMs(year, m[2] ?? '', Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  }
  m = ASCTIME_DATE.exec(value);
  if (m) {
    return utcMs(Number(m[6]), m[1] ?? '', Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
  }
  return undefined;
}

/**
 * Retry-After → milliseconds to wait from `nowMs`. Accepts delta-seconds (`120`) and HTTP-date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`). A date in the past means "now" (0). Anything else (negative,
 * fractional, empty, unknown format) is undefined, so the caller falls back to its default wait.
 */
export function parseRetryAfter(headerValue: string | undefined, nowMs: number): number | undefined {
  if (headerValue === undefined) return undefined;
  const value = headerValue.trim();
  if (value === '') return undefined;
  if (/^\d+$/.test(value)) {
    const ms = Number(value) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  const at = parseHttpDate(value, nowMs);
  if (at === undefined) return undefined;
  return Math.max(0, at - nowMs);
}

export type RateLimitDecision =
  | { action: 'wait'; waitMs: number }
  /** The server asks for longer than the policy allows: report RetryLaterError with this value. */
  | { action: 'give-up'; retryAfterMs: number };

/**
 * How long to wait before repeating a request that got its `consecutive429s`-th 429 in a row.
 * The base is the server's Retry-After (or the default when missing); repeats grow it by
 * `rateLimitBackoffFactor` up to `maxRetryAfterMs`, but the wait is never shorter than the server's
 * value: waiting less is known to earn another 429 ("retrying too soon returns 429 again").
 */
export function rateLimitWaitMs(
  retryAfterMs: number | undefined,
  consecutive429s: number,
  policy: Pick<RetryPolicy, 'defaultRetryAfterMs' | 'maxRetryAfterMs' | 'rateLimitBackoffFactor'>,
): RateLimitDecision {
  const valid = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0;
  const base = valid ? retryAfterMs : Math.min(policy.defaultRetryAfterMs, policy.maxRetryAfterMs);
  if (base > policy.maxRetryAfterMs) return { action: 'give-up', retryAfterMs: base };
  const repeats = Math.max(0, Math.floor(consecutive429s) - 1);
  // Growth starts from at least the default, so a `Retry-After: 0` repeated 429 still backs off.
  const grown = Math.max(base, policy.defaultRetryAfterMs) * policy.rateLimitBackoffFactor ** repeats;
  const waitMs = repeats === 0 ? base : Math.max(base, Math.min(grown, policy.maxRetryAfterMs));
  return { action: 'wait', waitMs: Math.ceil(waitMs) };
}

/**
 * "Full jitter" exponential backoff (AWS Architecture Blog, "Exponential Backoff And Jitter"): a
 * uniform draw in [0, min(maxMs, baseMs * 2^(attempt-1))). `attempt` is 1 for the first retry.
 * Spreading retries over the whole interval keeps many clients from retrying in lock-step.
 */
export function backoffWithFullJitter(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  // 2^exponent overflows to Infinity for large attempts; min() with maxMs keeps the ceiling finite.
  const ceiling = Math.min(maxMs, baseMs * 2 ** exponent);
  const r = random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1 - Number.EPSILON) : 0;
  return Math.floor(unit * ceiling);
}
