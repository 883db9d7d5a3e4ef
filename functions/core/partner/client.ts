// The partner API client, on undici. Flow of one call: validate input → build the URL once → per
// attempt: fetch the token, send GET with timeouts capped by the deadline, read the body (bounded) →
// map the status to a result or a typed error → on 429 / 5xx / network failure wait and repeat the
// same URL, unless the wait would cross the caller's deadline (then RetryLaterError).
//
// The token lives only in the Authorization header of the outgoing request: errors are built from
// the method, the path and the server's message (with the token redacted), and undici errors are
// copied into plain causes so no request object, header or socket is reachable from an error.

import { Agent, type Dispatcher } from 'undici';
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
import { type ArrayEncoding, buildOrderUpdatesQuery, checkOrderId } from './query.js';
import {
  backoffWithFullJitter,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  type RetryPolicy,
  rateLimitWaitMs,
} from './retry-policy.js';
import type { CallOptions, OrderUpdatesQuery, PartnerApi, RawPage, RetryEvent } from './types.js';
import { parsePartnerBaseUrl } from './url-policy.js';

export type { ArrayEncoding } from './query.js';

export interface PartnerClientTimeouts {
  /** TCP + TLS handshake. Applies to the default Agent only (an injected dispatcher has its own). */
  connectTimeoutMs: number;
  /** From sending the request to the last response header. */
  headersTimeoutMs: number;
  /** Longest silence between two body chunks. */
  bodyTimeoutMs: number;
}

/**
 * undici's own defaults (300 s) exceed a Lambda's whole budget; these leave room for retries within
 * one poll. Each request is additionally cut off at the call's deadline.
 */
export const DEFAULT_TIMEOUTS: Readonly<PartnerClientTimeouts> = Object.freeze({
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 15_000,
});

/** A page of 100 orders is far below this; anything larger is treated as a malformed answer. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Error bodies (4xx/5xx) are read only to find `message`; no need to buffer more than this. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Largest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Server text quoted in an error message is cut to this length. */
const MAX_QUOTED_CHARS = 200;

export const DEFAULT_USER_AGENT = 'order-feed-ingester/0.1 (undici)';

export interface PartnerClientOptions {
  /**
   * `https://host[:port][/prefix]`; the prefix may name a test scenario. Requests go to
   * `${baseUrl}/v1/orderUpdates` and `${baseUrl}/v1/orders/{id}`. `http:` only for loopback hosts;
   * no userinfo, query or fragment.
   */
  baseUrl: string;
  /** Called before every attempt, so a rotated (re-cached) token is picked up without a rebuild. */
  token: () => Promise<string>;
  /** Default: a module-level Agent with DEFAULT_TIMEOUTS (or one built from `timeouts.connectTimeoutMs`). */
  dispatcher?: Dispatcher;
  /** Default DEFAULT_TIMEOUTS; headers/body timeouts apply per request, with any dispatcher. */
  timeouts?: Partial<PartnerClientTimeouts>;
  /** Default DEFAULT_MAX_BODY_BYTES (10 MiB). A larger 200 body → ResponseFormatError. */
  maxBodyBytes?: number;
  /** Default 'repeat' (`vendorIds=a&vendorIds=b`); see ArrayEncoding for why. */
  arrayEncoding?: ArrayEncoding;
  /** Fields override DEFAULT_RETRY_POLICY. */
  retryPolicy?: Partial<RetryPolicy>;
  /** Called before every wait (429, 5xx, network), for metrics and logs. Its errors are ignored. */
  onRetry?: (event: RetryEvent) => void;
  /** Default Math.random (full-jitter draws). */
  random?: () => number;
  /** Default: a timer that rejects with `signal.reason` when the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Default Date.now; compared with `CallOptions.deadline` and used for Retry-After dates. */
  now?: () => number;
  /** Default DEFAULT_USER_AGENT. */
  userAgent?: string;
}

let sharedAgent: Agent | undefined;

// One Agent per process (created on first use) so keep-alive sockets survive across warm invocations.
function defaultDispatcher(connectTimeoutMs: number): Dispatcher {
  if (connectTimeoutMs !== DEFAULT_TIMEOUTS.connectTimeoutMs) {
    return new Agent({
      connectTimeout: connectTimeoutMs,
      headersTimeout: DEFAULT_TIMEOUTS.headersTimeoutMs,
      bodyTimeout: DEFAULT_TIMEOUTS.bodyTimeoutMs,
    });
  }
  sharedAgent ??= new Agent({
    connectTimeout: DEFAULT_TIMEOUTS.connectTimeoutMs,
    headersTimeout: DEFAULT_TIMEOUTS.headersTimeoutMs,
    bodyTimeout: DEFAULT_TIMEOUTS.bodyTimeoutMs,
  });
  return sharedAgent;
}

function defaultSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Failures worth repeating the same request for: resets, refusals, timeouts, truncated bodies. */
const RETRYABLE_NETWORK_CODES = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  'EHOSTDOWN',
]);

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function isRetryableNetworkError(err: unknown): boolean {
  const candidates: unknown[] = [err];
  if (err instanceof Error) {
    candidates.push(err.cause);
    // Happy-eyeballs connects (Node 20 autoSelectFamily) fail with an AggregateError of per-address errors.
    if (err instanceof AggregateError) candidates.push(...err.errors);
  }
  return candidates.some((c) => {
    const code = errorCode(c);
    return code !== undefined && RETRYABLE_NETWORK_CODES.has(code);
  });
}

function redact(text: string, token: string | undefined): string {
  return token ? text.split(token).join('[redacted]') : text;
}

function truncate(text: string): string {
  return text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text;
}

/**
 * A detached copy of an error (name, code, message) to use as a `cause`: undici errors can reference
 * sockets and request state, and a JSON.parse error quotes the body; the copy carries neither.
 */
function safeCause(err: unknown, token: string | undefined): Error {
  const source = err instanceof Error ? err : new Error(String(err));
  const copy = new Error(truncate(redact(source.message, token)));
  copy.name = source.name;
  const code = errorCode(source);
  if (code !== undefined) Object.assign(copy, { code });
  return copy;
}

/** The cause of an abort we triggered ourselves because the call's deadline arrived. */
class DeadlineReached extends Error {
  constructor() {
    super('call deadline reached');
    this.name = 'DeadlineReached';
  }
}

type FailureKind = RetryEvent['kind'];

interface Target {
  kind: 'orderUpdates' | 'order';
  /** Path and query, sent as is on every attempt. */
  path: string;
  /** `GET /prefix/v1/orderUpdates`: used in messages (no query: cursors are long and opaque). */
  label: string;
  sentPageId: boolean;
  orderId?: number;
}

interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The body was larger than `limit` bytes and was abandoned unread. */
  overflow: boolean;
  limit: number;
}

type AttemptOutcome = { kind: 'answer'; answer: HttpAnswer } | { kind: 'network'; error: unknown };

function headerValue(headers: HttpAnswer['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Abandons a response body. undici's BodyReadable emits an AbortError when destroyed without a reason;
 * nobody else listens, so without this no-op listener it would surface as an uncaught exception.
 */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** Reads at most `limit` bytes; beyond that the stream is destroyed (which also frees the socket). */
async function readBounded(
  body: Dispatcher.ResponseData['body'],
  declaredLength: string | undefined,
  limit: number,
) {
  const declared = declaredLength === undefined ? Number.NaN : Number(declaredLength);
  if (Number.isFinite(declared) && declared > limit) {
    discard(body);
    return { body: Buffer.alloc(0), overflow: true };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buf.length;
    if (size > limit) {
      // Leaving a for-await early would destroy the stream too; discard() does it without an error event.
      discard(body);
      return { body: Buffer.concat(chunks), overflow: true };
    }
    chunks.push(buf);
  }
  return { body: Buffer.concat(chunks), overflow: false };
}

/** The `message` of an Error body, cut and with the token redacted; undefined when there is none. */
function serverMessage(body: Buffer, token: string): string | undefined {
  if (body.length === 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      const message = (parsed as { message?: unknown }).message;
      if (typeof message === 'string') return truncate(redact(message, token));
    }
  } catch {
    // Not JSON: the spec's errors are JSON, so a foreign body (proxy page) carries no usable message.
  }
  return undefined;
}

function parseJson(target: Target, answer: HttpAnswer, token: string): unknown {
  const text = answer.body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    const snippet = truncate(redact(text, token));
    throw new ResponseFormatError(
      `${target.label}: ${answer.status} body is not valid JSON (${answer.body.length} bytes, starts ${JSON.stringify(snippet)})`,
      { statusCode: answer.status, cause: safeCause(err, token) },
    );
  }
}

/** Checks the Page envelope only; records stay `unknown` for parseOrder. */
function toRawPage(target: Target, value: unknown, status: number): RawPage {
  const fail = (what: string) =>
    new ResponseFormatError(`${target.label}: response is not a Page: ${what}`, { statusCode: status });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail('not a JSON object');
  const page = value as Record<string, unknown>;
  if (typeof page.hasMore !== 'boolean') throw fail('hasMore is not a boolean');
  if (!Array.isArray(page.data)) throw fail('data is not an array');
  if (page.nextPageId !== undefined && typeof page.nextPageId !== 'string')
    throw fail('nextPageId is not a string');
  // Pagination rule 1: more pages without a cursor to reach them cannot be followed.
  if (page.hasMore && page.nextPageId === undefined) throw fail('hasMore is true but nextPageId is missing');
  const raw: RawPage = { hasMore: page.hasMore, data: page.data };
  if (page.nextPageId !== undefined) raw.nextPageId = page.nextPageId;
  return raw;
}

/** Maps a final (non-retryable) answer to a result or a typed error. */
function interpret(target: Target, answer: HttpAnswer, token: string): unknown {
  const { status } = answer;
  if (status === 200) {
    if (answer.overflow) {
      throw new ResponseFormatError(`${target.label}: response body exceeds the ${answer.limit}-byte limit`, {
        statusCode: status,
      });
    }
    const value = parseJson(target, answer, token);
    if (target.kind === 'orderUpdates') return toRawPage(target, value, status);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ResponseFormatError(`${target.label}: response is not an Order object`, {
        statusCode: status,
      });
    }
    return value;
  }
  const message = serverMessage(answer.body, token);
  if (status === 401) throw new AuthenticationError();
  if (status === 400) throw new BadRequestError(message);
  if (status === 404) {
    if (target.kind === 'order') throw new OrderNotFoundError(target.orderId ?? -1, message);
    // Pagination rule 4. Matched loosely (case, spaces) but only when a cursor was actually sent.
    if (target.sentPageId && message?.trim().toLowerCase() === 'pageid not found')
      throw new CursorExpiredError();
  }
  throw new UnexpectedStatusError(status, message);
}

interface ResolvedConfig {
  origin: string;
  dispatcher: Dispatcher;
  timeouts: PartnerClientTimeouts;
  maxBodyBytes: number;
  policy: RetryPolicy;
  token: () => Promise<string>;
  onRetry: ((event: RetryEvent) => void) | undefined;
  random: () => number;
  sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  now: () => number;
  userAgent: string;
}

function checkPositiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive integer (got ${String(value)})`);
  }
  return value;
}

// A header value undici would refuse or that could smuggle a second header; checked without echoing it.
const TOKEN_SHAPE = /^[\x21-\x7e]+$/;

async function fetchToken(config: ResolvedConfig): Promise<string> {
  const token = await config.token();
  if (typeof token !== 'string' || !TOKEN_SHAPE.test(token)) {
    throw new InvalidArgumentError('token() must resolve to a non-empty string of visible ASCII characters');
  }
  return token;
}

/** One HTTP exchange, cut off at the deadline and by the caller's signal. */
async function attemptOnce(
  config: ResolvedConfig,
  target: Target,
  token: string,
  remainingMs: number,
  callerSignal: AbortSignal | undefined,
): Promise<AttemptOutcome> {
  const controller = new AbortController();
  // setTimeout fires at once for delays above 2^31 - 1 ms (~24.8 days): clamp a far-away deadline.
  const timer = setTimeout(
    () => controller.abort(new DeadlineReached()),
    Math.min(remainingMs, MAX_TIMER_MS),
  );
  const onCallerAbort = () => controller.abort(callerSignal?.reason);
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  try {
    const res = await config.dispatcher.request({
      origin: config.origin,
      path: target.path,
      method: 'GET',
      headers: {
        accept: 'application/json',
        authorization: `Bearer ${token}`,
        'user-agent': config.userAgent,
      },
      signal: controller.signal,
      // 0 would disable undici's timers, hence the floor of 1 ms.
      headersTimeout: Math.max(1, Math.min(config.timeouts.headersTimeoutMs, remainingMs)),
      bodyTimeout: Math.max(1, Math.min(config.timeouts.bodyTimeoutMs, remainingMs)),
    });
    const limit =
      res.statusCode === 200 ? config.maxBodyBytes : Math.min(config.maxBodyBytes, MAX_ERROR_BODY_BYTES);
    let read: { body: Buffer; overflow: boolean };
    try {
      read = await readBounded(res.body, headerValue(res.headers, 'content-length'), limit);
    } catch (err) {
      discard(res.body);
      // A failed read of an error body does not change what the status means.
      if (res.statusCode !== 200 && !controller.signal.aborted) {
        read = { body: Buffer.alloc(0), overflow: false };
      } else {
        throw err;
      }
    }
    return { kind: 'answer', answer: { status: res.statusCode, headers: res.headers, limit, ...read } };
  } catch (err) {
    if (callerSignal?.aborted) throw callerSignal.reason;
    if (controller.signal.reason instanceof DeadlineReached) {
      throw new RetryLaterError('network', `${target.label}: no complete response before the call deadline`, {
        cause: safeCause(err, token),
      });
    }
    if (isRetryableNetworkError(err)) return { kind: 'network', error: err };
    throw err;
  } finally {
    clearTimeout(timer);
    callerSignal?.removeEventListener('abort', onCallerAbort);
  }
}

interface RetryPlan {
  kind: FailureKind;
  waitMs: number;
  statusCode?: number;
  cause?: Error;
  describe: string;
}

async function execute(config: ResolvedConfig, target: Target, options: CallOptions): Promise<unknown> {
  if (typeof options?.deadline !== 'number' || !Number.isFinite(options.deadline)) {
    throw new InvalidArgumentError('options.deadline must be an epoch-milliseconds number');
  }
  const { deadline, signal } = options;
  const { policy } = config;
  let attempt = 0;
  let failures = 0;
  let consecutive429s = 0;
  let last: RetryPlan | undefined;

  for (;;) {
    signal?.throwIfAborted();
    const token = await fetchToken(config);
    signal?.throwIfAborted();
    const remainingMs = deadline - config.now();
    if (remainingMs <= 0) {
      throw new RetryLaterError(
        last?.kind ?? 'network',
        `${target.label}: the call deadline passed before a response`,
        {
          statusCode: last?.statusCode,
          cause: last?.cause,
        },
      );
    }
    attempt += 1;
    const outcome = await attemptOnce(config, target, token, remainingMs, signal);

    let plan: RetryPlan;
    if (outcome.kind === 'answer' && outcome.answer.status === 429) {
      consecutive429s += 1;
      const retryAfter = parseRetryAfter(headerValue(outcome.answer.headers, 'retry-after'), config.now());
      const decision = rateLimitWaitMs(retryAfter, consecutive429s, policy);
      if (decision.action === 'give-up') {
        throw new RetryLaterError(
          'rate-limited',
          `${target.label}: rate limited (429); Retry-After ${decision.retryAfterMs} ms exceeds the ${policy.maxRetryAfterMs} ms the client waits`,
          { statusCode: 429, retryAfterMs: decision.retryAfterMs },
        );
      }
      if (consecutive429s > policy.maxRateLimitRetries) {
        throw new RetryLaterError(
          'rate-limited',
          `${target.label}: still rate limited after ${consecutive429s} 429s`,
          {
            statusCode: 429,
            retryAfterMs: decision.waitMs,
          },
        );
      }
      plan = {
        kind: 'rate-limited',
        waitMs: decision.waitMs,
        statusCode: 429,
        describe: 'rate limited (429)',
      };
    } else if (outcome.kind === 'answer' && outcome.answer.status >= 500 && outcome.answer.status <= 599) {
      consecutive429s = 0;
      failures += 1;
      const { status } = outcome.answer;
      plan = {
        kind: 'server-error',
        waitMs: backoffWithFullJitter(failures, policy.baseBackoffMs, policy.maxBackoffMs, config.random),
        statusCode: status,
        describe: `server error (${status})`,
      };
    } else if (outcome.kind === 'network') {
      consecutive429s = 0;
      failures += 1;
      const cause = safeCause(outcome.error, token);
      plan = {
        kind: 'network',
        waitMs: backoffWithFullJitter(failures, policy.baseBackoffMs, policy.maxBackoffMs, config.random),
        cause,
        describe: `network failure (${errorCode(cause) ?? cause.name})`,
      };
    } else {
      return interpret(target, outcome.answer, token);
    }
    last = plan;

    const errorOptions = { statusCode: plan.statusCode, retryAfterMs: plan.waitMs, cause: plan.cause };
    if (plan.kind !== 'rate-limited' && failures >= policy.maxAttempts) {
      throw new RetryLaterError(
        plan.kind,
        `${target.label}: ${plan.describe}; gave up after ${failures} attempts`,
        errorOptions,
      );
    }
    // Never start a wait that ends past the deadline (or leaves no time for the request after it).
    if (config.now() + plan.waitMs + policy.minAttemptBudgetMs > deadline) {
      throw new RetryLaterError(
        plan.kind,
        `${target.label}: ${plan.describe}; the ${plan.waitMs} ms wait does not fit before the call deadline`,
        errorOptions,
      );
    }
    try {
      config.onRetry?.({ kind: plan.kind, attempt, waitMs: plan.waitMs, status: plan.statusCode });
    } catch {
      // A metrics hook must not change the outcome of the call.
    }
    await config.sleep(plan.waitMs, signal);
  }
}

/**
 * Builds a PartnerApi for one base URL. Configuration is checked here (a bad URL or limit fails at
 * construction, i.e. the cold start); call inputs are checked per call, before any request.
 */
export function createPartnerClient(options: PartnerClientOptions): PartnerApi {
  const { origin, basePath } = parsePartnerBaseUrl(options.baseUrl);
  if (typeof options.token !== 'function') {
    throw new InvalidArgumentError('token must be a function returning the bearer token');
  }
  const timeouts: PartnerClientTimeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  checkPositiveInteger('timeouts.connectTimeoutMs', timeouts.connectTimeoutMs);
  checkPositiveInteger('timeouts.headersTimeoutMs', timeouts.headersTimeoutMs);
  checkPositiveInteger('timeouts.bodyTimeoutMs', timeouts.bodyTimeoutMs);
  const arrayEncoding = options.arrayEncoding ?? 'repeat';
  if (arrayEncoding !== 'repeat' && arrayEncoding !== 'comma') {
    throw new InvalidArgumentError(`arrayEncoding must be 'repeat' or 'comma'`);
  }
  const config: ResolvedConfig = {
    origin,
    dispatcher: options.dispatcher ?? defaultDispatcher(timeouts.connectTimeoutMs),
    timeouts,
    maxBodyBytes: checkPositiveInteger('maxBodyBytes', options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES),
    policy: { ...DEFAULT_RETRY_POLICY, ...options.retryPolicy },
    token: options.token,
    onRetry: options.onRetry,
    random: options.random ?? Math.random,
    sleep: options.sleep ?? defaultSleep,
    now: options.now ?? Date.now,
    userAgent: options.userAgent ?? DEFAULT_USER_AGENT,
  };
  checkPositiveInteger('retryPolicy.maxAttempts', config.policy.maxAttempts);

  const updatesPath = `${basePath}/v1/orderUpdates`;
  const ordersPath = `${basePath}/v1/orders`;

  return {
    async getOrderUpdates(query: OrderUpdatesQuery, callOptions: CallOptions): Promise<RawPage> {
      const search = buildOrderUpdatesQuery(query, arrayEncoding);
      const target: Target = {
        kind: 'orderUpdates',
        path: `${updatesPath}${search}`,
        label: `GET ${updatesPath}`,
        sentPageId: query.pageId !== undefined,
      };
      return (await execute(config, target, callOptions)) as RawPage;
    },
    async getOrder(id: number, callOptions: CallOptions): Promise<unknown> {
      const orderId = checkOrderId('order id', id);
      const path = `${ordersPath}/${orderId}`;
      return execute(
        config,
        { kind: 'order', path, label: `GET ${path}`, sentPageId: false, orderId },
        callOptions,
      );
    },
  };
}
