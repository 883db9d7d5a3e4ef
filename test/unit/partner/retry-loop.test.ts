// The deadline-aware retry loop around a fake transport (scripted outcomes, a fake clock and sleep):
// what it repeats, what it hands back, and where it stops.
import { describe, expect, it } from 'vitest';
import { RetryLaterError } from '../../../functions/core/partner/errors.js';
import { withDeadlineRetries } from '../../../functions/core/partner/retry-loop.js';
import { DEFAULT_RETRY_POLICY } from '../../../functions/core/partner/retry-policy.js';
import type {
  AttemptOutcome,
  AttemptRequest,
  HttpAnswer,
} from '../../../functions/core/partner/transport.js';

const REQUEST = { path: '/v1/orderUpdates?pageSize=10', label: 'GET /v1/orderUpdates' };

function status(code: number, headers: HttpAnswer['headers'] = {}): AttemptOutcome {
  return {
    kind: 'answer',
    answer: { status: code, headers, body: Buffer.alloc(0), overflow: false, limit: 1 },
  };
}

function loop(outcomes: AttemptOutcome[], tokens: string[] = ['tok-a']) {
  let clock = 1_000_000;
  const attempts: AttemptRequest[] = [];
  const waits: number[] = [];
  let tokenCalls = 0;
  const send = withDeadlineRetries(
    async (request) => {
      attempts.push(request);
      const next = outcomes.shift();
      if (next === undefined) throw new Error('transport called more often than scripted');
      return next;
    },
    {
      token: async () => tokens[Math.min(tokenCalls++, tokens.length - 1)] ?? '',
      policy: { ...DEFAULT_RETRY_POLICY },
      onRetry: undefined,
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
      now: () => clock,
    },
  );
  return { send, attempts, waits, now: () => clock };
}

describe('withDeadlineRetries', () => {
  it('hands back the first answer that is not 429 or 5xx, with the token it was sent with', async () => {
    const { send, attempts, waits, now } = loop([status(503), status(404)], ['tok-a', 'tok-b']);
    const final = await send(REQUEST, { deadline: now() + 60_000 });
    expect(final.answer.status).toBe(404);
    expect(final.token).toBe('tok-b');
    expect(attempts.map((a) => a.token)).toEqual(['tok-a', 'tok-b']);
    expect(attempts.every((a) => a.path === REQUEST.path)).toBe(true);
    expect(waits).toEqual([100]);
  });

  it('repeats a network failure with full-jitter backoff', async () => {
    const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    const { send, waits, now } = loop([{ kind: 'network', error: reset }, status(200)]);
    expect((await send(REQUEST, { deadline: now() + 60_000 })).answer.status).toBe(200);
    expect(waits).toEqual([100]);
  });

  it('a cut-off at the deadline → RetryLaterError (network) without another attempt', async () => {
    const { send, attempts, now } = loop([{ kind: 'deadline', error: new Error('aborted') }]);
    const err = await send(REQUEST, { deadline: now() + 5_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'network', deadlinePassed: true });
    expect(attempts).toHaveLength(1);
  });

  it('a 429 wait that does not fit before the deadline → RetryLaterError, no sleep', async () => {
    const { send, waits, now } = loop([status(429, { 'retry-after': '10' })]);
    const err = await send(REQUEST, { deadline: now() + 5_000 }).catch((e: unknown) => e);
    // Not out of time: the partner asked for a wait the run cannot afford (no continuation follows).
    expect(err).toMatchObject({
      reason: 'rate-limited',
      statusCode: 429,
      retryAfterMs: 10_000,
      deadlinePassed: false,
    });
    expect(waits).toEqual([]);
  });

  it('a deadline already past → RetryLaterError before any attempt', async () => {
    const { send, attempts, now } = loop([]);
    await expect(send(REQUEST, { deadline: now() - 1 })).rejects.toMatchObject({ deadlinePassed: true });
    expect(attempts).toHaveLength(0);
  });
});
