// The client's deadline-aware retry loop over a fake dispatcher (scripted answers, a fake clock and sleep):
// what it repeats, what it hands back, and where it stops.
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { createPartnerClient } from '../../../functions/core/partner/client.js';
import { RetryLaterError, UnexpectedStatusError } from '../../../functions/core/partner/errors.js';

type Script = (request: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;

function status(code: number, headers: Record<string, string> = {}, body = ''): Script {
  return async () =>
    ({
      statusCode: code,
      headers,
      body: Readable.from([Buffer.from(body)]),
    }) as unknown as Dispatcher.ResponseData;
}

function loop(script: Script[], tokens: string[] = ['tok-a']) {
  let clock = 1_000_000;
  const attempts: Dispatcher.RequestOptions[] = [];
  const waits: number[] = [];
  let tokenCalls = 0;
  const dispatcher = {
    request: async (request: Dispatcher.RequestOptions) => {
      attempts.push(request);
      const next = script.shift();
      if (next === undefined) throw new Error('dispatcher called more often than scripted');
      return next(request);
    },
  } as unknown as Dispatcher;
  const client = createPartnerClient({
    baseUrl: 'https://partner.example',
    token: async () => tokens[Math.min(tokenCalls++, tokens.length - 1)] ?? '',
    dispatcher,
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
      clock += ms;
    },
    now: () => clock,
  });
  const send = (options: { deadline: number }) => client.getOrderUpdates({ pageSize: 10 }, options);
  return { send, attempts, waits, now: () => clock };
}

const authorization = (request: Dispatcher.RequestOptions) =>
  (request.headers as Record<string, string>).authorization;

describe('the retry loop', () => {
  it('hands back the first answer that is not 429 or 5xx, with the token it was sent with', async () => {
    const { send, attempts, waits, now } = loop(
      [status(503), status(404, {}, JSON.stringify({ message: 'echo tok-b' }))],
      ['tok-a', 'tok-b'],
    );
    const err = await send({ deadline: now() + 60_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnexpectedStatusError);
    // Redacted with the token of the attempt that got the answer.
    expect((err as Error).message).toBe('partner API answered 404: echo [redacted]');
    expect(attempts.map(authorization)).toEqual(['Bearer tok-a', 'Bearer tok-b']);
    expect(attempts.every((a) => a.path === '/v1/orderUpdates?pageSize=10')).toBe(true);
    expect(waits).toEqual([100]);
  });

  it('repeats a network failure with full-jitter backoff', async () => {
    const reset: Script = async () => {
      throw Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    };
    const page = JSON.stringify({ hasMore: false, data: [] });
    const { send, waits, now } = loop([reset, status(200, {}, page)]);
    expect(await send({ deadline: now() + 60_000 })).toEqual({ hasMore: false, data: [] });
    expect(waits).toEqual([100]);
  });

  it('a cut-off at the deadline → RetryLaterError (network) without another attempt', async () => {
    const hang: Script = (request) =>
      new Promise((_, reject) => {
        const signal = request.signal as AbortSignal;
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    const { send, attempts, now } = loop([hang]);
    const err = await send({ deadline: now() + 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'network', deadlinePassed: true });
    expect(attempts).toHaveLength(1);
  });

  it('a 429 wait that does not fit before the deadline → RetryLaterError, no sleep', async () => {
    const { send, waits, now } = loop([status(429, { 'retry-after': '10' })]);
    const err = await send({ deadline: now() + 5_000 }).catch((e: unknown) => e);
    // Not out of time: the partner asked for a wait the run cannot afford (no continuation follows).
    expect(err).toMatchObject({
      reason: 'rate-limited',
      statusCode: 429,
      retryAfterMs: 10_000,
      deadlinePassed: false,
    });
    expect(waits).toEqual([]);
  });

  it('accepts a deadline that is not a whole millisecond (half an odd safety margin)', async () => {
    const page = JSON.stringify({ hasMore: false, data: [] });
    const { send, now } = loop([status(200, {}, page)]);
    expect(await send({ deadline: now() + 20_000.5 })).toEqual({ hasMore: false, data: [] });
  });

  it('a deadline already past → RetryLaterError before any attempt', async () => {
    const { send, attempts, now } = loop([]);
    await expect(send({ deadline: now() - 1 })).rejects.toMatchObject({ deadlinePassed: true });
    expect(attempts).toHaveLength(0);
  });
});
