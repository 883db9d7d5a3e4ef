// Transport: one HTTP attempt over an undici dispatcher. Sends GET with the bearer token, cuts the
// exchange off at the call's deadline and at the caller's signal, and reads the body up to a limit.
// It does not judge the status: every answer comes back as is, a retryable network failure as
// `network`, a cut-off at the deadline as `deadline`; anything else is thrown.

import type { Dispatcher } from 'undici';
import { errorCode } from './safe-text.js';

/** Error bodies (4xx/5xx) are read only to find `message`; no need to buffer more than this. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Largest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The body was larger than `limit` bytes and was abandoned unread. */
  overflow: boolean;
  limit: number;
}

export type AttemptOutcome =
  | { kind: 'answer'; answer: HttpAnswer }
  /** A failure worth repeating the request for (reset, refusal, timeout, truncated body). */
  | { kind: 'network'; error: unknown }
  /** No complete answer before the call's deadline. */
  | { kind: 'deadline'; error: unknown };

export interface AttemptRequest {
  /** Path and query, sent as is. */
  path: string;
  token: string;
  /** Time left until the call's deadline; the attempt is cut off then. */
  remainingMs: number;
  signal: AbortSignal | undefined;
}

/** One attempt. Rejects with the caller's abort reason when the caller aborts. */
export type Transport = (request: AttemptRequest) => Promise<AttemptOutcome>;

export interface TransportConfig {
  origin: string;
  dispatcher: Dispatcher;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Largest 200 body read; error bodies are read up to min(this, 64 KiB). */
  maxBodyBytes: number;
  userAgent: string;
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

export function isRetryableNetworkError(err: unknown): boolean {
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

export function headerValue(headers: HttpAnswer['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The cause of an abort we triggered ourselves because the call's deadline arrived. */
class DeadlineReached extends Error {
  constructor() {
    super('call deadline reached');
    this.name = 'DeadlineReached';
  }
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

export function createUndiciTransport(config: TransportConfig): Transport {
  return async ({ path, token, remainingMs, signal: callerSignal }) => {
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
        path,
        method: 'GET',
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${token}`,
          'user-agent': config.userAgent,
        },
        signal: controller.signal,
        // 0 would disable undici's timers, hence the floor of 1 ms.
        headersTimeout: Math.max(1, Math.min(config.headersTimeoutMs, remainingMs)),
        bodyTimeout: Math.max(1, Math.min(config.bodyTimeoutMs, remainingMs)),
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
      if (controller.signal.reason instanceof DeadlineReached) return { kind: 'deadline', error: err };
      if (isRetryableNetworkError(err)) return { kind: 'network', error: err };
      throw err;
    } finally {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    }
  };
}
