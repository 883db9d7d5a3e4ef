// The partner API client on undici's public API. Per call: check the input → build the URL once → per
// attempt: read the token, send GET through the dispatcher (cut off at its own total timeout and at the
// call's deadline, AbortSignals) and read the body up to a limit → interpret the answer as a Page, an Order
// or a typed error → 429 / 5xx / network / 3xx / an unreadable 200: wait and repeat the same URL unless the
// wait would cross the deadline or the attempts run out (then RetryLaterError).
//
// The token lives only in the Authorization header of the outgoing request: errors are built from the
// method, the path and the server's message (with the token redacted, redact.ts), and undici errors are
// copied into plain causes so no request object, header or socket is reachable from an error.

import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import { backoffWithFullJitter } from '../backoff.js';
import { type Int64, isInt64, parseJsonExact } from '../model/int64.js';
import {
  AuthenticationError,
  BadRequestError,
  CursorExpiredError,
  InvalidArgumentError,
  OrderNotFoundError,
  ResponseFormatError,
  RetryLaterError,
  UnexpectedStatusError,
} from './errors.js';
import { redactToken as redact } from './redact.js';
import type { CallOptions, OrderUpdatesQuery, PartnerApi, RawPage, RetryEvent } from './types.js';
import { parsePartnerBaseUrl } from './url-policy.js';

/**
 * Connect (TCP + TLS; the default Agent only), headers (request sent → last header), body (longest silence),
 * request (the whole attempt, headers and body: a body trickling a byte a second never stays silent long
 * enough for bodyTimeout). undici's defaults (300 s) exceed a Lambda's whole budget. An attempt that runs out
 * of requestTimeoutMs is a network failure, retried; each attempt is also cut off at the call's deadline.
 */
export const DEFAULT_TIMEOUTS = Object.freeze({
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 15_000,
  requestTimeoutMs: 30_000,
});

export const DEFAULT_RETRY_POLICY = Object.freeze({
  maxAttempts: 5, // for 5xx, network failures, 3xx and unreadable 200s, the first request included
  baseBackoffMs: 200, // full jitter: retry n draws below min(maxBackoffMs, baseBackoffMs * 2^(n-1))
  maxBackoffMs: 5_000,
  defaultRetryAfterMs: 1_000, // the 429 wait when Retry-After is missing or unparseable
  maxRetryAfterMs: 60_000, // longest 429 wait; a server asking for more gets RetryLaterError with its value
  rateLimitBackoffFactor: 2, // growth per consecutive 429 (the spec: "backs off on repeats")
  maxRateLimitRetries: 5, // consecutive 429s waited through before RetryLaterError
  minAttemptBudgetMs: 250, // a wait starts only if this much time is left after it for the request
});
type RetryPolicy = Record<keyof typeof DEFAULT_RETRY_POLICY, number>;
type Timeouts = Record<keyof typeof DEFAULT_TIMEOUTS, number>;

/** Orders of 150 KB exist, so 100 of them pass this: the poller asks again with a smaller pageSize (maxPageBodyBytes). */
const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;
const DEFAULT_USER_AGENT = 'order-feed-ingester/0.1 (undici)';
/** Error bodies (4xx/5xx) are read only to find `message`. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Largest delay a Node timer honours (~24.8 days); a farther deadline is clamped to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Server text quoted in an error message is cut to this length. */
const MAX_QUOTED_CHARS = 200;
/**
 * Longest nextPageId accepted, in UTF-8 bytes; a longer one is a format error (an unreadable page). The
 * cursor goes to three places: the cursor item in DynamoDB (400 KB per item: far off), the next request's
 * query string (percent-encoding at most triples it, 6 KiB, inside the 8 KiB request line that common
 * servers and proxies accept), and every message's `source.pageId` (2 KiB of the 1 MiB SQS message, per
 * version). Opaque cursors are tens to hundreds of bytes in practice.
 */
export const MAX_PAGE_ID_BYTES = 2_048;

/** Query arrays on the wire (the spec does not say): `a=1&a=2` (OpenAPI's default) or `a=1,2` (no commas in values). */
type ArrayEncoding = 'repeat' | 'comma';

export interface PartnerClientOptions {
  /** `https://host[:port][/prefix]` (the prefix may name a test scenario); `http:` only for loopback hosts. */
  baseUrl: string;
  /** Called before every attempt, so a rotated (re-cached) token is picked up without a rebuild. */
  token: () => Promise<string>;
  /** Default: one module-level Agent with DEFAULT_TIMEOUTS (one of its own for another connect timeout). */
  dispatcher?: Dispatcher;
  /** Headers, body and request timeouts apply per request, with any dispatcher. */
  timeouts?: Partial<Timeouts>;
  /** A larger 200 body → ResponseFormatError (body-too-large). */
  maxBodyBytes?: number;
  arrayEncoding?: ArrayEncoding;
  retryPolicy?: Partial<RetryPolicy>;
  /** Full-jitter draws (default Math.random). */
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Compared with `CallOptions.deadline` and used for Retry-After dates. */
  now?: () => number;
}

/** A timer that rejects with `signal.reason` when the signal aborts. */
const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  delay(ms, undefined, signal ? { signal } : undefined).catch((err: unknown) => {
    throw signal?.aborted ? signal.reason : err;
  });

// The three HTTP-date forms (RFC 9110 §5.6.7) as far as Date.parse needs telling: a weekday, a time, and
// GMT or (asctime) a year. Date.parse alone would read "1" or "2030-01-01" as dates.
const HTTP_DATE = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? .*\d\d:\d\d:\d\d (?:GMT|\d{4})$/;

/**
 * Retry-After → milliseconds from `nowMs`: delta-seconds or an HTTP-date (a past date is 0). Anything else
 * is undefined (the caller waits its default); so is a date whose weekday is not its own (31 Feb).
 */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  const value = header?.trim() ?? '';
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  if (!HTTP_DATE.test(value)) return undefined;
  const at = Date.parse(value.endsWith('GMT') ? value : `${value} GMT`);
  if (Number.isNaN(at) || new Date(at).toUTCString().slice(0, 3) !== value.slice(0, 3)) return undefined;
  return Math.max(0, at - nowMs);
}

/**
 * The wait before repeating a request after its `consecutive429s`-th 429 in a row: Retry-After (or the
 * default), grown by the factor on repeats up to the cap, never below the server's value ("retrying too
 * soon returns 429 again"). A Retry-After over the cap → give up with it.
 */
export function rateLimitWaitMs(
  retryAfterMs: number | undefined,
  consecutive429s: number,
  policy: Pick<RetryPolicy, 'defaultRetryAfterMs' | 'maxRetryAfterMs' | 'rateLimitBackoffFactor'>,
): { action: 'wait'; waitMs: number } | { action: 'give-up'; retryAfterMs: number } {
  const valid = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0;
  const base = valid ? retryAfterMs : Math.min(policy.defaultRetryAfterMs, policy.maxRetryAfterMs);
  if (base > policy.maxRetryAfterMs) return { action: 'give-up', retryAfterMs: base };
  const repeats = Math.max(0, Math.floor(consecutive429s) - 1);
  // Growth starts from at least the default, so a `Retry-After: 0` repeated 429 still backs off.
  const grown = Math.max(base, policy.defaultRetryAfterMs) * policy.rateLimitBackoffFactor ** repeats;
  const waitMs = repeats === 0 ? base : Math.max(base, Math.min(grown, policy.maxRetryAfterMs));
  return { action: 'wait', waitMs: Math.ceil(waitMs) };
}

/** Visible ASCII only: anything else undici would refuse, or could smuggle a second header. */
export function isBearerTokenShape(value: unknown): value is string {
  return typeof value === 'string' && /^[\x21-\x7e]+$/.test(value);
}

/** A new Agent with the client's timeouts; whoever creates one closes it (`agent.close()`). */
export function createPartnerAgent(connectTimeoutMs: number = DEFAULT_TIMEOUTS.connectTimeoutMs): Agent {
  return new Agent({
    connect: { timeout: connectTimeoutMs },
    headersTimeout: DEFAULT_TIMEOUTS.headersTimeoutMs,
    bodyTimeout: DEFAULT_TIMEOUTS.bodyTimeoutMs,
  });
}

let sharedAgent: Agent | undefined;

/** One Agent per process, so keep-alive sockets survive across warm invocations (another connect timeout: its own). */
function defaultAgent(connectTimeoutMs: number): Agent {
  if (connectTimeoutMs !== DEFAULT_TIMEOUTS.connectTimeoutMs) return createPartnerAgent(connectTimeoutMs);
  sharedAgent ??= createPartnerAgent();
  return sharedAgent;
}

// ---- what may go into an error: the token redacted, server text cut short, foreign errors copied ----

const truncate = (text: string, max = MAX_QUOTED_CHARS) =>
  text.length > max ? `${text.slice(0, max)}…` : text;

function errorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** A detached copy (name, code, message) to use as a `cause`: undici errors can reference sockets. */
function safeCause(err: unknown, token: string): Error {
  const source = err instanceof Error ? err : new Error(String(err));
  const copy = new Error(truncate(redact(source.message, token)));
  copy.name = source.name;
  const code = errorCode(source);
  if (code !== undefined) Object.assign(copy, { code });
  return copy;
}

/** Failures worth repeating the same request for: resets, refusals, timeouts, truncated bodies. */
const RETRYABLE_NETWORK_CODES = new Set(
  'UND_ERR_SOCKET UND_ERR_CONNECT_TIMEOUT UND_ERR_HEADERS_TIMEOUT UND_ERR_BODY_TIMEOUT UND_ERR_RES_CONTENT_LENGTH_MISMATCH ECONNRESET ECONNREFUSED ECONNABORTED ETIMEDOUT EPIPE EAI_AGAIN ENOTFOUND ENETUNREACH EHOSTUNREACH ENETDOWN EHOSTDOWN'.split(
    ' ',
  ),
);

function isRetryableNetworkError(err: unknown): boolean {
  // Happy-eyeballs connects (autoSelectFamily) fail with an AggregateError of per-address errors.
  const candidates = [err, err instanceof Error ? err.cause : undefined];
  if (err instanceof AggregateError) candidates.push(...err.errors);
  return candidates.some((c) => RETRYABLE_NETWORK_CODES.has(errorCode(c) ?? ''));
}

// ---- one attempt over undici ----

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The body was larger than `limit` bytes and was abandoned unread. */
  overflow: boolean;
  limit: number;
}

function headerValue(headers: HttpAnswer['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Abandons a body; the no-op listener keeps undici's AbortError on destroy from going uncaught. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** Reads at most `limit` bytes (by Content-Length first, then while streaming); beyond that, discards. */
async function readBounded(res: Dispatcher.ResponseData, limit: number) {
  if (Number(headerValue(res.headers, 'content-length')) > limit) {
    discard(res.body);
    return { body: Buffer.alloc(0), overflow: true };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      discard(res.body); // before leaving the loop, which would destroy the body with an error event
      return { body: Buffer.concat(chunks), overflow: true };
    }
    chunks.push(chunk);
  }
  return { body: Buffer.concat(chunks), overflow: false };
}

// ---- the final answer → a value or a typed error ----

/** What was asked for, as far as the meaning of the answer depends on it. */
export type Resource =
  | { kind: 'orderUpdates'; label: string; sentPageId: boolean }
  | { kind: 'order'; label: string; orderId: Int64 };

/** The `message` of a JSON Error body, cut and with the token redacted. */
function serverMessage(body: Buffer, token: string): string | undefined {
  try {
    const message: unknown = JSON.parse(body.toString('utf8'))?.message;
    return typeof message === 'string' ? truncate(redact(message, token)) : undefined;
  } catch {
    return undefined; // a foreign body (proxy page) carries no usable message
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A redirect's target as origin and path only: its query string, fragment and userinfo may carry secrets.
 * Relative targets are resolved against the request's URL.
 */
export function describeLocation(location: string | undefined, requestUrl: string, token: string): string {
  if (location === undefined) return 'no Location';
  if (!URL.canParse(location, requestUrl)) return 'an unparseable Location';
  const url = new URL(location, requestUrl);
  return truncate(redact(`${url.origin}${url.pathname}`, token));
}

/**
 * Any status but 429, 5xx and 3xx → a Page, a raw Order or its typed error. A 200 body is customer data:
 * when it is not JSON the error describes it (size, content type, hash) and quotes none of it, with no cause
 * (V8's SyntaxError quotes the text).
 */
export function interpret(resource: Resource, answer: HttpAnswer, token: string): unknown {
  const { status } = answer;
  const { label } = resource;
  if (status === 200) {
    const fail = (message: string) => new ResponseFormatError(`${label}: ${message}`, { statusCode: status });
    if (answer.overflow) {
      throw new ResponseFormatError(`${label}: response body exceeds the ${answer.limit}-byte limit`, {
        statusCode: status,
        problem: 'body-too-large',
      });
    }
    let value: unknown;
    try {
      value = parseJsonExact(answer.body.toString('utf8')); // int64 beyond 2^53 → bigint
    } catch {
      const contentType = headerValue(answer.headers, 'content-type');
      const body = {
        bytes: answer.body.length,
        contentType: contentType === undefined ? undefined : truncate(redact(contentType, token), 100),
        sha256: createHash('sha256').update(answer.body).digest('hex').slice(0, 16),
      };
      const type = body.contentType === undefined ? 'none' : JSON.stringify(body.contentType);
      throw new ResponseFormatError(
        `${label}: ${status} body is not valid JSON (${body.bytes} bytes, content-type ${type}, sha256 ${body.sha256}…)`,
        { statusCode: status, problem: 'not-json', body },
      );
    }
    const order = resource.kind === 'order';
    if (!isObject(value))
      throw fail(order ? 'response is not an Order object' : 'response is not a Page: not a JSON object');
    if (order) return value;
    if (typeof value.hasMore !== 'boolean') throw fail('response is not a Page: hasMore is not a boolean');
    if (!Array.isArray(value.data)) throw fail('response is not a Page: data is not an array');
    if (value.nextPageId !== undefined && typeof value.nextPageId !== 'string')
      throw fail('response is not a Page: nextPageId is not a string');
    const cursorBytes = value.nextPageId === undefined ? 0 : Buffer.byteLength(value.nextPageId, 'utf8');
    if (cursorBytes > MAX_PAGE_ID_BYTES)
      throw fail(`nextPageId of ${cursorBytes} bytes exceeds the ${MAX_PAGE_ID_BYTES}-byte limit`);
    // hasMore without nextPageId breaks pagination rule 1, but the data is good: poll-feed.ts keeps it.
    const page: RawPage = { hasMore: value.hasMore, data: value.data };
    if (value.nextPageId !== undefined) page.nextPageId = value.nextPageId;
    return page;
  }
  const message = serverMessage(answer.body, token);
  if (status === 401) throw new AuthenticationError();
  if (status === 400) throw new BadRequestError(message);
  if (status === 404) {
    if (resource.kind === 'order') throw new OrderNotFoundError(resource.orderId, message);
    // Pagination rule 4, matched loosely (case, spaces), only when a cursor was sent.
    if (resource.sentPageId && message?.trim().toLowerCase() === 'pageid not found')
      throw new CursorExpiredError();
  }
  throw new UnexpectedStatusError(status, message);
}

// ---- request inputs, checked before any request (and any token) leaves the process ----

function argument(ok: boolean, message: string): asserts ok {
  if (!ok) throw new InvalidArgumentError(message);
}

function integerIn(name: string, value: unknown, min: number, max: number): string {
  const ok = typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
  argument(ok, `${name} must be an integer from ${min} to ${max} (got ${String(value)})`);
  return String(value);
}

/** int64 ids: a bigint beyond 2^53 - 1 (model/int64.ts); a number that large is already rounded, so refused. */
function checkOrderId(name: string, value: unknown): Int64 {
  if (typeof value === 'bigint') {
    argument(value >= 0n && isInt64(value), `${name} must be a non-negative int64 (got ${String(value)})`);
    return value;
  }
  const ok = typeof value === 'number' && Number.isInteger(value) && value >= 0;
  argument(ok, `${name} must be a non-negative integer (got ${String(value)})`);
  argument(
    Number.isSafeInteger(value),
    `${name} ${String(value)} exceeds Number.MAX_SAFE_INTEGER (2^53 - 1) as a number, so it is not exact: pass an int64 id beyond that as a bigint`,
  );
  return value;
}

// A date, or a date-time with an explicit zone (a zone-less one would be read in the machine's zone).
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/i;

function checkTimestamp(value: unknown): string {
  if (value instanceof Date) {
    argument(!Number.isNaN(value.getTime()), 'fromTimestamp is an invalid Date');
    return value.toISOString();
  }
  const ms = typeof value === 'string' && ISO_DATE_TIME.test(value) ? Date.parse(value) : Number.NaN;
  argument(
    !Number.isNaN(ms),
    'fromTimestamp must be a valid Date or an ISO 8601 string with a time zone (e.g. 2024-05-01T00:00:00Z)',
  );
  return new Date(ms).toISOString();
}

/** Refused when empty rather than dropped: omitting the parameter means "all", a wider query. */
function checkArray(name: string, value: unknown, check: (item: unknown, index: number) => string) {
  argument(
    Array.isArray(value) && value.length > 0,
    `${name} must be a non-empty array when given (omit it to mean all)`,
  );
  return value.map(check);
}

/** `name=value` escaped as application/x-www-form-urlencoded; pageId arrives at the server byte for byte. */
const formPair = (name: string, value: string) => new URLSearchParams([[name, value]]).toString();

/** The query string for GET /v1/orderUpdates ('' or '?...'). */
function buildOrderUpdatesQuery(query: OrderUpdatesQuery, encoding: ArrayEncoding): string {
  argument(query !== null && typeof query === 'object', 'query must be an object');
  const pairs: string[] = [];
  const add = (name: string, values: string[]) => {
    if (encoding === 'repeat') for (const v of values) pairs.push(formPair(name, v));
    else pairs.push(`${name}=${values.map((v) => formPair('', v).slice(1)).join(',')}`);
  };
  const { pageId, pageSize, vendorIds, orderIds, fromTimestamp, minAgeMinutes } = query;
  if (pageId !== undefined) {
    argument(
      typeof pageId === 'string' && pageId !== '',
      'pageId must be a non-empty string (the nextPageId of a previous page)',
    );
    add('pageId', [pageId]);
  }
  if (pageSize !== undefined) add('pageSize', [integerIn('pageSize', pageSize, 1, 100)]);
  if (vendorIds !== undefined) {
    const ids = checkArray('vendorIds', vendorIds, (id, i) => {
      argument(typeof id === 'string' && id !== '', `vendorIds[${i}] must be a non-empty string`);
      argument(
        encoding === 'repeat' || !id.includes(','),
        `vendorIds[${i}] contains a comma, which the 'comma' array encoding cannot carry`,
      );
      return id;
    });
    add('vendorIds', ids);
  }
  if (orderIds !== undefined) {
    add(
      'orderIds',
      checkArray('orderIds', orderIds, (id, i) => String(checkOrderId(`orderIds[${i}]`, id))),
    );
  }
  if (fromTimestamp !== undefined) add('fromTimestamp', [checkTimestamp(fromTimestamp)]);
  if (minAgeMinutes !== undefined) add('minAgeMinutes', [integerIn('minAgeMinutes', minAgeMinutes, 1, 1440)]);
  return pairs.length === 0 ? '' : `?${pairs.join('&')}`;
}

function positiveInteger(name: string, value: number): number {
  argument(Number.isInteger(value) && value > 0, `${name} must be a positive integer (got ${String(value)})`);
  return value;
}

/**
 * Builds a PartnerApi for one base URL. Configuration is checked here (a bad URL or limit fails at
 * construction, i.e. the cold start); call inputs are checked per call, before any request.
 */
export function createPartnerClient(options: PartnerClientOptions): PartnerApi {
  const { origin, basePath } = parsePartnerBaseUrl(options.baseUrl);
  argument(typeof options.token === 'function', 'token must be a function returning the bearer token');
  const timeouts: Timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  for (const [name, value] of Object.entries(timeouts)) positiveInteger(`timeouts.${name}`, value);
  const arrayEncoding = options.arrayEncoding ?? 'repeat';
  argument(
    arrayEncoding === 'repeat' || arrayEncoding === 'comma',
    `arrayEncoding must be 'repeat' or 'comma'`,
  );
  const maxBodyBytes = positiveInteger('maxBodyBytes', options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retryPolicy };
  positiveInteger('retryPolicy.maxAttempts', policy.maxAttempts);
  const { random = Math.random, now = Date.now } = options;
  const wait = options.sleep ?? sleep;
  const dispatcher = options.dispatcher ?? defaultAgent(timeouts.connectTimeoutMs);

  /**
   * One GET, cut off at its own total timeout (a network failure, so retried), at the call's deadline and at
   * the caller's signal; the body read up to its limit.
   */
  async function attempt(path: string, token: string, remainingMs: number, callerSignal?: AbortSignal) {
    const ownTimeout = timeouts.requestTimeoutMs < remainingMs;
    // AbortSignal.timeout takes whole milliseconds only (the poller's deadline may end in .5).
    const timer = AbortSignal.timeout(
      Math.ceil(Math.min(remainingMs, timeouts.requestTimeoutMs, MAX_TIMER_MS)),
    );
    const signal = callerSignal ? AbortSignal.any([timer, callerSignal]) : timer;
    try {
      const res = await dispatcher.request({
        origin,
        path,
        method: 'GET',
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${token}`,
          'user-agent': DEFAULT_USER_AGENT,
        },
        signal,
        // 0 would disable undici's timers, hence the floor of 1 ms.
        headersTimeout: Math.max(1, Math.min(timeouts.headersTimeoutMs, remainingMs)),
        bodyTimeout: Math.max(1, Math.min(timeouts.bodyTimeoutMs, remainingMs)),
      });
      const limit = res.statusCode === 200 ? maxBodyBytes : Math.min(maxBodyBytes, MAX_ERROR_BODY_BYTES);
      const read = await readBounded(res, limit).catch((err: unknown) => {
        discard(res.body);
        // A failed read of an error body does not change what the status means.
        if (res.statusCode === 200 || signal.aborted) throw err;
        return { body: Buffer.alloc(0), overflow: false };
      });
      return {
        kind: 'answer',
        answer: { status: res.statusCode, headers: res.headers, limit, ...read },
      } as const;
    } catch (err) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (timer.aborted && ownTimeout) {
        const message = `no complete response within the ${timeouts.requestTimeoutMs} ms request timeout`;
        return {
          kind: 'network',
          error: Object.assign(new Error(message), { code: 'ERR_REQUEST_TIMEOUT' }),
        } as const;
      }
      if (timer.aborted) return { kind: 'deadline', error: err } as const;
      if (isRetryableNetworkError(err)) return { kind: 'network', error: err } as const;
      throw err;
    }
  }

  /**
   * The retry loop: the interpreted answer, or the typed error of an answer not worth repeating. Repeated:
   * 429 (its own waits), and with backoff 5xx, network failures, 3xx and 200s that are not a readable page.
   */
  async function send(path: string, resource: Resource, callOptions: CallOptions): Promise<unknown> {
    const ok = typeof callOptions?.deadline === 'number' && Number.isFinite(callOptions.deadline);
    argument(ok, 'options.deadline must be an epoch-milliseconds number');
    const { deadline, signal } = callOptions;
    const { label } = resource;
    let [attempts, failures, consecutive429s] = [0, 0, 0];
    // The last failed attempt, which a RetryLaterError reports (none yet: a network-kind error).
    let last: { kind: RetryEvent['kind']; statusCode?: number | undefined; cause?: Error } = {
      kind: 'network',
    };
    const later = (message: string, more: { retryAfterMs?: number; deadlinePassed?: boolean }) =>
      new RetryLaterError(last.kind, `${label}: ${message}`, {
        statusCode: last.statusCode,
        cause: last.cause,
        ...more,
      });
    for (;;) {
      signal?.throwIfAborted();
      const token = await options.token();
      argument(
        isBearerTokenShape(token),
        'token() must resolve to a non-empty string of visible ASCII characters',
      );
      signal?.throwIfAborted();
      const remainingMs = deadline - now();
      if (remainingMs <= 0)
        throw later('the call deadline passed before a response', { deadlinePassed: true });
      attempts += 1;
      const outcome = await attempt(path, token, remainingMs, signal);
      if (outcome.kind === 'deadline') {
        last = { kind: 'network', cause: safeCause(outcome.error, token) };
        throw later('no complete response before the call deadline', { deadlinePassed: true });
      }
      const status = outcome.kind === 'answer' ? outcome.answer.status : undefined;
      // What makes this attempt worth repeating with backoff (none: a 429, or a final answer).
      let failed: { describe: string; location?: string } | undefined;
      if (outcome.kind === 'network') {
        const cause = safeCause(outcome.error, token);
        last = { kind: 'network', cause };
        failed = { describe: `network failure (${errorCode(cause) ?? cause.name})` };
      } else if (status !== undefined && status >= 500 && status <= 599) {
        last = { kind: 'server-error', statusCode: status };
        failed = { describe: `server error (${status})` };
      } else if (status !== undefined && status >= 300 && status <= 399) {
        // Never followed (undici's dispatcher.request follows redirects only through its redirect
        // interceptor, not used here): the token goes nowhere else. A partner's detour is retried like a 5xx.
        const target = headerValue(outcome.answer.headers, 'location');
        const location = describeLocation(target, `${origin}${path}`, token);
        last = { kind: 'unreadable', statusCode: status };
        failed = { describe: `redirect (${status} to ${location}), not followed`, location };
      } else if (outcome.kind === 'answer' && status !== 429) {
        try {
          return interpret(resource, outcome.answer, token);
        } catch (err) {
          // A maintenance or WAF page, or a body that is not a Page, passes: ask again. A body over the cap
          // does not, and the caller can ask for a smaller page: thrown at once.
          if (!(err instanceof ResponseFormatError) || err.problem === 'body-too-large') throw err;
          last = { kind: 'unreadable', statusCode: status, cause: err };
          const problem = err.message.startsWith(`${label}: `) ? err.message.slice(label.length + 2) : '';
          failed = { describe: `unreadable answer (${problem || err.problem})` };
        }
      }
      let waitMs: number;
      if (failed === undefined) {
        last = { kind: 'rate-limited', statusCode: 429 };
        consecutive429s += 1;
        const headers = outcome.kind === 'answer' ? outcome.answer.headers : {};
        const retryAfter = parseRetryAfter(headerValue(headers, 'retry-after'), now());
        const decision = rateLimitWaitMs(retryAfter, consecutive429s, policy);
        if (decision.action === 'give-up') {
          const { retryAfterMs } = decision;
          const message = `rate limited (429); Retry-After ${retryAfterMs} ms exceeds the ${policy.maxRetryAfterMs} ms the client waits`;
          throw later(message, { retryAfterMs });
        }
        if (consecutive429s > policy.maxRateLimitRetries) {
          throw later(`still rate limited after ${consecutive429s} 429s`, { retryAfterMs: decision.waitMs });
        }
        failed = { describe: 'rate limited (429)' };
        waitMs = decision.waitMs;
      } else {
        consecutive429s = 0;
        failures += 1;
        waitMs = backoffWithFullJitter(failures, policy.baseBackoffMs, policy.maxBackoffMs, random);
        if (failures >= policy.maxAttempts) {
          throw later(`${failed.describe}; gave up after ${failures} attempts`, { retryAfterMs: waitMs });
        }
      }
      // Never start a wait that ends past the deadline (or leaves no time for the request after it).
      if (now() + waitMs + policy.minAttemptBudgetMs > deadline) {
        const message = `${failed.describe}; the ${waitMs} ms wait does not fit before the call deadline`;
        throw later(message, { retryAfterMs: waitMs });
      }
      try {
        const { location } = failed;
        callOptions.onRetry?.({
          kind: last.kind,
          attempt: attempts,
          waitMs,
          status,
          ...(location && { location }),
        });
      } catch {
        // A metrics hook must not change the outcome of the call.
      }
      await wait(waitMs, signal);
    }
  }

  const updatesPath = `${basePath}/v1/orderUpdates`;
  const ordersPath = `${basePath}/v1/orders`;
  return {
    async getOrderUpdates(query, callOptions) {
      const search = buildOrderUpdatesQuery(query, arrayEncoding);
      const label = `GET ${updatesPath}`;
      const resource = { kind: 'orderUpdates', label, sentPageId: query.pageId !== undefined } as const;
      return (await send(`${updatesPath}${search}`, resource, callOptions)) as RawPage;
    },
    async getOrder(id, callOptions) {
      const orderId = checkOrderId('order id', id);
      const label = `GET ${ordersPath}/${orderId}`;
      return send(`${ordersPath}/${orderId}`, { kind: 'order', label, orderId }, callOptions);
    },
  };
}
