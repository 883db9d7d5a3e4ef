// Checks only what it alone sees (the base URL the token goes to, the token); no error carries the token.
import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, type Dispatcher, interceptors } from 'undici';
import { backoffWithFullJitter } from '../backoff.js';
import { type Int64, parseJsonExact } from '../model/int64.js';
import { PartnerError, type PartnerErrorDetails, type RetryReason } from './errors.js';
import { redactToken as redact } from './redact.js';
import type { CallOptions, OrderUpdatesQuery, PartnerApi, RawPage, RetryEvent } from './types.js';
import { parsePartnerBaseUrl } from './url-policy.js';

/**
 * undici's defaults (300 s) exceed a Lambda's whole budget. A request ends only at its total timeout (a slow
 * first byte may take all of it; a trickling body is cut at it) or after bodyTimeoutMs of silence in the body.
 */
export const DEFAULT_TIMEOUTS = Object.freeze({
  connectTimeoutMs: 5_000,
  bodyTimeoutMs: 15_000,
  requestTimeoutMs: 30_000,
});

export const DEFAULT_RETRY_POLICY = Object.freeze({
  maxAttempts: 5, // for 5xx, network failures, 3xx and unreadable 200s, the first request included
  baseBackoffMs: 200, // full jitter: retry n draws below min(maxBackoffMs, baseBackoffMs * 2^(n-1))
  maxBackoffMs: 5_000,
  defaultRetryAfterMs: 1_000, // the 429 wait when Retry-After is missing or unparseable
  maxRetryAfterMs: 60_000, // longest 429 wait; a server asking for more gets a retry-later with its value
  rateLimitBackoffFactor: 2, // growth per consecutive 429 (the spec: "backs off on repeats")
  maxRateLimitRetries: 5, // consecutive 429s waited through before a retry-later
  minAttemptBudgetMs: 250, // a wait starts only if this much time is left after it for the request
});
type RetryPolicy = Record<keyof typeof DEFAULT_RETRY_POLICY, number>;
type Timeouts = Omit<Record<keyof typeof DEFAULT_TIMEOUTS, number>, 'connectTimeoutMs'>;

const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;
const USER_AGENT = 'order-feed-ingester/0.1 (undici)';
/** What undici's decompress interceptor decodes on every Node version the client runs on. */
const ACCEPT_ENCODING = 'gzip, deflate, br';
/** Error bodies (4xx/5xx) are read only to find `message`. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Largest delay a Node timer honours (~24.8 days); a farther deadline is clamped to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Longest nextPageId accepted, in UTF-8 bytes (why: functions/README.md, "Cursor length"). */
export const MAX_PAGE_ID_BYTES = 2_048;

export interface PartnerClientOptions {
  /** `https://host[:port][/prefix]`; `http:` only for loopback hosts (url-policy.ts). */
  baseUrl: string;
  /** Called before every attempt, so a rotated (re-cached) token is picked up without a rebuild. */
  token: () => Promise<string>;
  /** Default: one module-level Agent (createPartnerAgent). */
  dispatcher?: Dispatcher;
  timeouts?: Partial<Timeouts>;
  /** A larger 200 body is a `body-too-large` error. */
  maxBodyBytes?: number;
  /** Query arrays on the wire (the spec does not say): `a=1&a=2` or `a=1,2`. */
  arrayEncoding?: 'repeat' | 'comma';
  retryPolicy?: Partial<RetryPolicy>;
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
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

/** Retry-After → ms from `nowMs` (a past date is 0); undefined for anything else, a 31 Feb included. */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  const value = header?.trim() ?? '';
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  if (!HTTP_DATE.test(value)) return undefined;
  const at = Date.parse(value.endsWith('GMT') ? value : `${value} GMT`);
  if (Number.isNaN(at) || new Date(at).toUTCString().slice(0, 3) !== value.slice(0, 3)) return undefined;
  return Math.max(0, at - nowMs);
}

export type ResponseHeaders = Record<string, string | string[] | undefined>;

/**
 * A 429's Retry-After in ms. An HTTP-date is a time on the partner's clock, so it is measured from the
 * partner's `Date` where it sends one (a partner clock ahead of ours does not stretch the wait); else from
 * ours. Delta-seconds need no clock. `said`: the two headers as parsed (safe to log), for the budget's log.
 */
export function retryAfterOf(headers: ResponseHeaders, nowMs: number) {
  const retryAfter = headerValue(headers, 'retry-after')?.trim();
  const date = headerValue(headers, 'date')?.trim();
  // parseRetryAfter(date, 0) is the date in epoch ms; a Date of bare digits is no HTTP-date.
  const partnerNow = date === undefined || /^\d+$/.test(date) ? undefined : parseRetryAfter(date, 0);
  const retryAfterMs = parseRetryAfter(retryAfter, partnerNow ?? nowMs);
  const said = {
    ...(retryAfterMs === undefined ? {} : { retryAfter }),
    ...(partnerNow === undefined ? {} : { date }),
  };
  return { retryAfterMs, said };
}

/**
 * The wait after the `consecutive429s`-th 429 in a row: Retry-After (or the default), grown on repeats up to
 * the cap, never below the server's value ("retrying too soon returns 429 again"); over the cap: give up.
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
export function createPartnerAgent(): Agent {
  return new Agent({
    connect: { timeout: DEFAULT_TIMEOUTS.connectTimeoutMs },
    headersTimeout: DEFAULT_TIMEOUTS.requestTimeoutMs,
    bodyTimeout: DEFAULT_TIMEOUTS.bodyTimeoutMs,
  });
}

/** One Agent per process, so keep-alive sockets survive across warm invocations. */
let sharedAgent: Agent | undefined;
function defaultAgent(): Agent {
  sharedAgent ??= createPartnerAgent();
  return sharedAgent;
}

const truncate = (text: string, max = 200) => (text.length > max ? `${text.slice(0, max)}…` : text);

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

interface HttpAnswer {
  status: number;
  headers: ResponseHeaders;
  /** Decoded: the decompress interceptor drops Content-Encoding (and Content-Length) of what it decodes. */
  body: Buffer;
  /** The body was larger than `limit` bytes (decoded) and was abandoned unread. */
  overflow: boolean;
  limit: number;
  /** Why the body could not be decoded (a corrupt or truncated gzip, deflate or br stream). */
  undecodable?: Error;
}

function headerValue(headers: ResponseHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A Content-Encoding the interceptor could not decode (`x-foo`; zstd on Node 20), redacted; none for a 401. */
function undecodedCoding(answer: HttpAnswer, token: string): string | undefined {
  const v = answer.status === 401 ? undefined : answer.headers['content-encoding'];
  // Lowercased only to compare: a lowercased token would slip past redactToken.
  const codings = (Array.isArray(v) ? v.join(',') : (v ?? '')).split(',').map((coding) => coding.trim());
  const left = codings.filter((coding) => coding !== '' && coding.toLowerCase() !== 'identity');
  return left.length === 0 ? undefined : truncate(redact(left.join(', '), token), 100);
}

/** Abandons a body; the no-op listener keeps undici's AbortError on destroy from going uncaught. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/**
 * Reads at most `limit` decoded bytes (by Content-Length first, which only an unencoded body keeps, then while
 * streaming); beyond that, discards, which also ends the decoding (a bomb is inflated only up to the limit).
 */
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

/** What was asked for, as far as the meaning of the answer depends on it. */
type Resource = { label: string; sentPageId?: boolean; orderId?: Int64 };

/**
 * A body as text. The Encoding Standard's UTF-8 decode drops a leading byte order mark, which RFC 8259 (8.1)
 * forbids a server to send and lets a parser ignore: a framework or gateway that writes one would otherwise
 * make every page "not JSON" and stop the feed.
 */
const utf8 = new TextDecoder();

/** The `message` of a JSON Error body, cut and with the token redacted. */
function serverMessage(body: Buffer, token: string): string | undefined {
  try {
    const message: unknown = JSON.parse(utf8.decode(body))?.message;
    return typeof message === 'string' ? truncate(redact(message, token)) : undefined;
  } catch {
    return undefined; // a foreign body (proxy page) carries no usable message
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A redirect's target as origin and path only: its query, fragment and userinfo may carry secrets. */
function describeLocation(location: string | undefined, requestUrl: string, token: string): string {
  if (location === undefined) return 'no Location';
  if (!URL.canParse(location, requestUrl)) return 'an unparseable Location';
  const url = new URL(location, requestUrl);
  return truncate(redact(`${url.origin}${url.pathname}`, token));
}

/**
 * Any status but 429, 5xx and 3xx → a Page, a raw Order or its PartnerError. A 200 body is customer data:
 * one that is not JSON is described by size, content type and hash, with no cause (V8's SyntaxError quotes it).
 */
function interpret(resource: Resource, answer: HttpAnswer, token: string): unknown {
  const { status } = answer;
  const { label } = resource;
  // Still encoded, the body says nothing (a 404 might be an expired cursor): ask again, like a 5xx.
  const coding = undecodedCoding(answer, token);
  if (coding !== undefined) {
    const message = `${label}: ${status} body in a content-coding the client cannot decode (${coding})`;
    throw new PartnerError('unreadable', message, { statusCode: status });
  }
  if (status === 200) {
    const fail = (message: string) =>
      new PartnerError('unreadable', `${label}: ${message}`, { statusCode: 200 });
    const { undecodable } = answer;
    if (undecodable)
      throw fail(
        `200 body could not be decoded (${errorCode(undecodable) ?? undecodable.name}: ${undecodable.message})`,
      );
    if (answer.overflow) {
      const message = `${label}: response body exceeds the ${answer.limit}-byte limit`;
      throw new PartnerError('body-too-large', message, { statusCode: 200 });
    }
    let value: unknown;
    try {
      value = parseJsonExact(utf8.decode(answer.body)); // int64 beyond 2^53 → bigint
    } catch {
      const contentType = headerValue(answer.headers, 'content-type');
      const type =
        contentType === undefined ? 'none' : JSON.stringify(truncate(redact(contentType, token), 100));
      const sha256 = createHash('sha256').update(answer.body).digest('hex').slice(0, 16);
      throw fail(
        `${status} body is not valid JSON (${answer.body.length} bytes, content-type ${type}, sha256 ${sha256}…)`,
      );
    }
    const order = resource.orderId !== undefined;
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
  const [details, quoted] = [{ statusCode: status, serverMessage: message }, message ? `: ${message}` : ''];
  if (status === 401) throw new PartnerError('auth');
  if (status === 400) {
    const text = `partner API rejected the request (400): ${message ?? 'no message'}`;
    throw new PartnerError('bad-request', text, details);
  }
  if (status === 404 && resource.orderId !== undefined)
    throw new PartnerError('not-found', `order ${resource.orderId} not found${quoted}`, details);
  // Pagination rule 4, matched loosely (case, spaces), only when a cursor was sent.
  if (status === 404 && resource.sentPageId && message?.trim().toLowerCase() === 'pageid not found')
    throw new PartnerError('cursor-expired', undefined, details);
  throw new PartnerError('http', `partner API answered ${status}${quoted}`, details);
}

const QUERY_NAMES = 'pageId pageSize vendorIds orderIds fromTimestamp minAgeMinutes'.split(' ') as Array<
  keyof OrderUpdatesQuery
>;

/** `name=value` escaped as application/x-www-form-urlencoded; pageId arrives at the server byte for byte. */
const formPair = (name: string, value: string) => new URLSearchParams([[name, value]]).toString();

function queryString(query: OrderUpdatesQuery, encoding: 'repeat' | 'comma'): string {
  const pairs: string[] = [];
  for (const name of QUERY_NAMES) {
    const value = query[name];
    if (value === undefined) continue;
    const values = (Array.isArray(value) ? value : [value]).map(String);
    if (encoding === 'repeat' || values.length === 1) for (const v of values) pairs.push(formPair(name, v));
    else pairs.push(`${name}=${values.map((v) => formPair('', v).slice(1)).join(',')}`);
  }
  return pairs.length === 0 ? '' : `?${pairs.join('&')}`;
}

/** A PartnerApi for one base URL; a base URL the token may not go to fails here, at the cold start. */
export function createPartnerClient(options: PartnerClientOptions): PartnerApi {
  const { origin, basePath } = parsePartnerBaseUrl(options.baseUrl);
  const timeouts: Timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const arrayEncoding = options.arrayEncoding ?? 'repeat';
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retryPolicy };
  const { random = Math.random, now = Date.now } = options;
  const wait = options.sleep ?? sleep;
  // undici's own decoding, composed onto whatever dispatcher is given (the poller's budgeted Agent included);
  // error bodies too, so an encoded 404 `pageId not found` reads like a plain one.
  const dispatcher = (options.dispatcher ?? defaultAgent()).compose(
    interceptors.decompress({ skipErrorResponses: false }),
  );

  /** One GET, cut off at its own total timeout (then retried), at the call's deadline and at the caller's signal. */
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
          'accept-encoding': ACCEPT_ENCODING,
          authorization: `Bearer ${token}`,
          'user-agent': USER_AGENT,
        },
        signal,
        // The first byte may take the whole request timeout; 0 would disable undici's timers, hence the 1 ms.
        headersTimeout: Math.max(1, Math.min(timeouts.requestTimeoutMs, remainingMs)),
        bodyTimeout: Math.max(1, Math.min(timeouts.bodyTimeoutMs, remainingMs)),
      });
      const limit = res.statusCode === 200 ? maxBodyBytes : Math.min(maxBodyBytes, MAX_ERROR_BODY_BYTES);
      const read = await readBounded(res, limit).catch((err: unknown) => {
        discard(res.body);
        if (signal.aborted || (res.statusCode === 200 && isRetryableNetworkError(err))) throw err;
        // A failed read of an error body does not change what the status means; anything else that breaks
        // a 200 body mid-read is its decoding (zlib's Z_DATA_ERROR, Z_BUF_ERROR, brotli's codes).
        const body = { body: Buffer.alloc(0), overflow: false };
        return res.statusCode === 200 ? { ...body, undecodable: safeCause(err, token) } : body;
      });
      const answer: HttpAnswer = { status: res.statusCode, headers: res.headers, limit, ...read };
      return { kind: 'answer', answer } as const;
    } catch (err) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      // The token's request budget held the request until this signal fired (budgeted-dispatcher.ts).
      if (errorCode(err) === 'ERR_BUDGET_WAIT')
        return { kind: 'held', error: err as Error, deadlinePassed: !ownTimeout } as const;
      if (timer.aborted && ownTimeout) {
        const error = new Error(
          `no complete response within the ${timeouts.requestTimeoutMs} ms request timeout`,
        );
        return { kind: 'network', error: Object.assign(error, { code: 'ERR_REQUEST_TIMEOUT' }) } as const;
      }
      if (timer.aborted) return { kind: 'deadline', error: err } as const;
      if (isRetryableNetworkError(err)) return { kind: 'network', error: err } as const;
      throw err;
    }
  }

  /** The retry loop: the interpreted answer, or the PartnerError of an answer not worth repeating. */
  async function send(path: string, resource: Resource, callOptions: CallOptions): Promise<unknown> {
    const { deadline, signal } = callOptions;
    const { label } = resource;
    let [attempts, failures, consecutive429s] = [0, 0, 0];
    // The last failed attempt, which a retry-later reports (none yet: a network one).
    let last: { reason: RetryReason; statusCode?: number | undefined; cause?: Error } = { reason: 'network' };
    // Each failed attempt's kind: a give-up after a mix names them all, not only the last (fuzz seed 988: a
    // redirect last, after three 5xx, read as "no readable page on every attempt").
    const met = new Map<RetryReason, number>();
    const tally = () =>
      met.size > 1 ? `; met ${[...met].map(([kind, n]) => `${kind} ${n}`).join(', ')}` : '';
    const later = (message: string, more: PartnerErrorDetails) =>
      new PartnerError('retry-later', `${label}: ${message}`, { ...last, ...more });
    for (;;) {
      signal?.throwIfAborted();
      const token = await options.token();
      if (!isBearerTokenShape(token))
        throw new PartnerError('invalid-argument', 'token() must resolve to visible ASCII characters');
      signal?.throwIfAborted();
      const remainingMs = deadline - now();
      if (remainingMs <= 0)
        throw later('the call deadline passed before a response', { deadlinePassed: true });
      attempts += 1;
      const outcome = await attempt(path, token, remainingMs, signal);
      if (outcome.kind === 'held') {
        // Rate limiting (a 429's shared hold, or the budget's pace), not a network failure: say so, and what
        // held it until when; the next run waits for the same hold.
        const { until } = outcome.error as { until?: unknown };
        last = { reason: 'rate-limited' };
        const wait = typeof until === 'number' ? { retryAfterMs: Math.max(0, until - now()) } : {};
        const { deadlinePassed } = outcome;
        throw later(safeCause(outcome.error, token).message, { ...wait, deadlinePassed });
      }
      if (outcome.kind === 'deadline') {
        last = { reason: 'network', cause: safeCause(outcome.error, token) };
        throw later('no complete response before the call deadline', { deadlinePassed: true });
      }
      const status = outcome.kind === 'answer' ? outcome.answer.status : undefined;
      // What makes this attempt worth repeating with backoff (none: a 429, or a final answer).
      let failed: ({ describe: string } & Pick<RetryEvent, 'location' | 'contentEncoding'>) | undefined;
      if (outcome.kind === 'network') {
        const cause = safeCause(outcome.error, token);
        last = { reason: 'network', cause };
        failed = { describe: `network failure (${errorCode(cause) ?? cause.name})` };
      } else if (status !== undefined && status >= 500 && status <= 599) {
        last = { reason: 'server-error', statusCode: status };
        failed = { describe: `server error (${status})` };
      } else if (status !== undefined && status >= 300 && status <= 399) {
        // Never followed (no redirect interceptor is composed): the token goes nowhere else.
        const target = headerValue(outcome.answer.headers, 'location');
        const location = describeLocation(target, `${origin}${path}`, token);
        last = { reason: 'unreadable', statusCode: status };
        failed = { describe: `redirect (${status} to ${location}), not followed`, location };
      } else if (outcome.kind === 'answer' && status !== 429) {
        if (status === 200) await callOptions.beforeParse?.();
        try {
          return interpret(resource, outcome.answer, token);
        } catch (err) {
          // A maintenance or WAF page passes: ask again. Anything else (body-too-large included) is final.
          if (!(err instanceof PartnerError) || err.kind !== 'unreadable') throw err;
          last = { reason: 'unreadable', statusCode: status, cause: err };
          failed = { describe: `unreadable answer (${err.message.slice(label.length + 2)})` };
          const contentEncoding = undecodedCoding(outcome.answer, token);
          if (contentEncoding !== undefined) failed.contentEncoding = contentEncoding;
        }
      }
      let waitMs: number;
      const kind = failed === undefined ? 'rate-limited' : last.reason;
      met.set(kind, (met.get(kind) ?? 0) + 1);
      if (failed === undefined) {
        last = { reason: 'rate-limited', statusCode: 429 };
        consecutive429s += 1;
        const headers = outcome.kind === 'answer' ? outcome.answer.headers : {};
        const { retryAfterMs: retryAfter } = retryAfterOf(headers, now());
        const decision = rateLimitWaitMs(retryAfter, consecutive429s, policy);
        if (decision.action === 'give-up') {
          const { retryAfterMs } = decision;
          const message = `rate limited (429); Retry-After ${retryAfterMs} ms exceeds the ${policy.maxRetryAfterMs} ms the client waits`;
          throw later(`${message}${tally()}`, { retryAfterMs });
        }
        if (consecutive429s > policy.maxRateLimitRetries)
          throw later(`still rate limited after ${consecutive429s} 429s${tally()}`, {
            retryAfterMs: decision.waitMs,
          });
        failed = { describe: 'rate limited (429)' };
        waitMs = decision.waitMs;
      } else {
        consecutive429s = 0;
        failures += 1;
        waitMs = backoffWithFullJitter(failures, policy.baseBackoffMs, policy.maxBackoffMs, random);
        if (failures >= policy.maxAttempts)
          throw later(`${failed.describe}; gave up after ${failures} attempts${tally()}`, {
            retryAfterMs: waitMs,
          });
      }
      // Never start a wait that ends past the deadline (or leaves no time for the request after it).
      if (now() + waitMs + policy.minAttemptBudgetMs > deadline) {
        const message = `${failed.describe}; the ${waitMs} ms wait does not fit before the call deadline${tally()}`;
        throw later(message, { retryAfterMs: waitMs });
      }
      const { describe: _, ...named } = failed; // a 3xx's location, an undecoded content-coding
      try {
        callOptions.onRetry?.({ kind: last.reason, attempt: attempts, waitMs, status, ...named });
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
      const label = `GET ${updatesPath}`;
      const resource = { label, sentPageId: query.pageId !== undefined };
      const path = `${updatesPath}${queryString(query, arrayEncoding)}`;
      return (await send(path, resource, callOptions)) as RawPage;
    },
    getOrder: (orderId, callOptions) =>
      send(`${ordersPath}/${orderId}`, { label: `GET ${ordersPath}/${orderId}`, orderId }, callOptions),
  };
}
