// The deadline-aware retry loop, composed around a Transport the way undici composes interceptors
// around a dispatcher: `withDeadlineRetries(transport, options)` is a Send that repeats the same
// request on 429, 5xx and network failures, waiting as retry-policy.ts says, and never starts a wait
// that would cross the caller's deadline (it throws RetryLaterError instead). Every other answer is
// handed back for interpretation, with the token it was sent with (so interpretation can redact it).
//
// Per attempt: fetch the token (a rotated token is picked up) → check the deadline → one attempt →
// decide: give back, wait and repeat, or RetryLaterError.

import { InvalidArgumentError, RetryLaterError } from './errors.js';
import { backoffWithFullJitter, parseRetryAfter, type RetryPolicy, rateLimitWaitMs } from './retry-policy.js';
import { errorCode, safeCause } from './safe-text.js';
import { isBearerTokenShape } from './token-shape.js';
import { type HttpAnswer, headerValue, type Transport } from './transport.js';
import type { CallOptions, RetryEvent } from './types.js';

export interface RetryLoopOptions {
  /** Called before every attempt. */
  token: () => Promise<string>;
  policy: RetryPolicy;
  /** Called before every wait; its errors are ignored. */
  onRetry: ((event: RetryEvent) => void) | undefined;
  random: () => number;
  sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  now: () => number;
}

export interface Request {
  /** Path and query, sent as is on every attempt. */
  path: string;
  /** `GET /prefix/v1/orderUpdates`: used in messages (no query: cursors are long and opaque). */
  label: string;
}

/** An answer that is not retried (any status but 429 and 5xx), and the token it was sent with. */
export interface FinalAnswer {
  answer: HttpAnswer;
  token: string;
}

export type Send = (request: Request, options: CallOptions) => Promise<FinalAnswer>;

/** Default sleep: a timer that rejects with `signal.reason` when the signal aborts. */
export function defaultSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
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

async function fetchToken(token: () => Promise<string>): Promise<string> {
  const value = await token();
  if (!isBearerTokenShape(value)) {
    throw new InvalidArgumentError('token() must resolve to a non-empty string of visible ASCII characters');
  }
  return value;
}

interface RetryPlan {
  kind: RetryEvent['kind'];
  waitMs: number;
  statusCode?: number;
  cause?: Error;
  describe: string;
}

export function withDeadlineRetries(transport: Transport, options: RetryLoopOptions): Send {
  const { policy, now } = options;
  return async (request, callOptions) => {
    if (typeof callOptions?.deadline !== 'number' || !Number.isFinite(callOptions.deadline)) {
      throw new InvalidArgumentError('options.deadline must be an epoch-milliseconds number');
    }
    const { deadline, signal } = callOptions;
    const { label } = request;
    let attempt = 0;
    let failures = 0;
    let consecutive429s = 0;
    let last: RetryPlan | undefined;

    for (;;) {
      signal?.throwIfAborted();
      const token = await fetchToken(options.token);
      signal?.throwIfAborted();
      const remainingMs = deadline - now();
      if (remainingMs <= 0) {
        throw new RetryLaterError(
          last?.kind ?? 'network',
          `${label}: the call deadline passed before a response`,
          {
            statusCode: last?.statusCode,
            cause: last?.cause,
            deadlinePassed: true,
          },
        );
      }
      attempt += 1;
      const outcome = await transport({ path: request.path, token, remainingMs, signal });

      let plan: RetryPlan;
      if (outcome.kind === 'deadline') {
        throw new RetryLaterError('network', `${label}: no complete response before the call deadline`, {
          cause: safeCause(outcome.error, token),
          deadlinePassed: true,
        });
      } else if (outcome.kind === 'answer' && outcome.answer.status === 429) {
        consecutive429s += 1;
        const retryAfter = parseRetryAfter(headerValue(outcome.answer.headers, 'retry-after'), now());
        const decision = rateLimitWaitMs(retryAfter, consecutive429s, policy);
        if (decision.action === 'give-up') {
          throw new RetryLaterError(
            'rate-limited',
            `${label}: rate limited (429); Retry-After ${decision.retryAfterMs} ms exceeds the ${policy.maxRetryAfterMs} ms the client waits`,
            { statusCode: 429, retryAfterMs: decision.retryAfterMs },
          );
        }
        if (consecutive429s > policy.maxRateLimitRetries) {
          throw new RetryLaterError(
            'rate-limited',
            `${label}: still rate limited after ${consecutive429s} 429s`,
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
          waitMs: backoffWithFullJitter(failures, policy.baseBackoffMs, policy.maxBackoffMs, options.random),
          statusCode: status,
          describe: `server error (${status})`,
        };
      } else if (outcome.kind === 'network') {
        consecutive429s = 0;
        failures += 1;
        const cause = safeCause(outcome.error, token);
        plan = {
          kind: 'network',
          waitMs: backoffWithFullJitter(failures, policy.baseBackoffMs, policy.maxBackoffMs, options.random),
          cause,
          describe: `network failure (${errorCode(cause) ?? cause.name})`,
        };
      } else {
        return { answer: outcome.answer, token };
      }
      last = plan;

      const errorOptions = { statusCode: plan.statusCode, retryAfterMs: plan.waitMs, cause: plan.cause };
      if (plan.kind !== 'rate-limited' && failures >= policy.maxAttempts) {
        throw new RetryLaterError(
          plan.kind,
          `${label}: ${plan.describe}; gave up after ${failures} attempts`,
          errorOptions,
        );
      }
      // Never start a wait that ends past the deadline (or leaves no time for the request after it).
      if (now() + plan.waitMs + policy.minAttemptBudgetMs > deadline) {
        throw new RetryLaterError(
          plan.kind,
          `${label}: ${plan.describe}; the ${plan.waitMs} ms wait does not fit before the call deadline`,
          errorOptions,
        );
      }
      const event: RetryEvent = { kind: plan.kind, attempt, waitMs: plan.waitMs, status: plan.statusCode };
      for (const observe of [options.onRetry, callOptions.onRetry]) {
        try {
          observe?.(event);
        } catch {
          // A metrics hook must not change the outcome of the call.
        }
      }
      await options.sleep(plan.waitMs, signal);
    }
  };
}
