// The partner client against a real HTTP server on 127.0.0.1:0 whose answers each test scripts.
// Waits go through a recording fake `sleep` (no real time passes) except in one Retry-After: 1 test.

import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPartnerClient, type PartnerClientOptions } from '../../functions/core/partner/client.js';
import {
  AuthenticationError,
  BadRequestError,
  CursorExpiredError,
  InvalidArgumentError,
  OrderNotFoundError,
  type PartnerApiError,
  ResponseFormatError,
  RetryLaterError,
  UnexpectedStatusError,
} from '../../functions/core/partner/errors.js';
import type { CallOptions, PartnerApi, RetryEvent } from '../../functions/core/partner/types.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

const TOKEN = 'tok-SECRET-3f9c1e7a-do-not-leak';
const PAGE = { hasMore: true, data: [{ id: 1, version: 1 }], nextPageId: 'cursor-2' };
const LAST_PAGE = { hasMore: false, data: [], nextPageId: 'cursor-2' };

let server: ScriptedServer;
let agent: Agent;

beforeAll(async () => {
  server = await startScriptedServer();
  agent = new Agent({ connectTimeout: 2_000 });
});

afterAll(async () => {
  await agent.close();
  await server.close();
});

beforeEach(() => {
  server.reset();
});

interface Harness {
  waits: number[];
  events: RetryEvent[];
  options: PartnerClientOptions;
}

/** A client on the scripted server with a fake sleep that records waits and returns at once. */
function harness(
  overrides: Partial<PartnerClientOptions> & Pick<CallOptions, 'onRetry'> = {},
): Harness & { client: PartnerApi } {
  const waits: number[] = [];
  const events: RetryEvent[] = [];
  const { onRetry = (e: RetryEvent) => events.push(e), ...rest } = overrides;
  const options: PartnerClientOptions = {
    baseUrl: `${server.url}/test-scenario`,
    token: async () => TOKEN,
    dispatcher: agent,
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...rest,
  };
  const api = createPartnerClient(options);
  // Retry events arrive through each call's own onRetry, as the poller counts them.
  const client: PartnerApi = {
    getOrderUpdates: (query, call) => api.getOrderUpdates(query, { onRetry, ...call }),
    getOrder: (id, call) => api.getOrder(id, { onRetry, ...call }),
  };
  return { waits, events, options, client };
}

const within = (ms = 10_000) => ({ deadline: Date.now() + ms });

async function rejectionOf(promise: Promise<unknown>): Promise<PartnerApiError> {
  try {
    await promise;
  } catch (err) {
    return err as PartnerApiError;
  }
  throw new Error('expected the call to fail');
}

function expectNoToken(err: unknown): void {
  const e = err as Error;
  for (const text of [JSON.stringify(err), String(err), e.stack ?? '', inspect(err, { depth: 10 })]) {
    expect(text).not.toContain(TOKEN);
  }
}

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('successful calls', () => {
  it('returns the page and sends the token only in the Authorization header', async () => {
    const { client } = harness();
    server.script({ status: 200, body: PAGE });

    const page = await client.getOrderUpdates({ pageId: 'cursor-1' }, within());

    expect(page).toEqual(PAGE);
    expect(server.requests).toHaveLength(1);
    const [req] = server.requests;
    expect(req?.method).toBe('GET');
    expect(req?.pathname).toBe('/test-scenario/v1/orderUpdates');
    expect(req?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req?.headers.accept).toBe('application/json');
    expect(req?.headers['user-agent']).toMatch(/order-feed-ingester/);
    expect(req?.url).not.toContain(TOKEN);
    expect(decodeURIComponent(req?.url ?? '')).not.toContain(TOKEN);
  });

  it('joins base URLs with and without a trailing slash or prefix onto /v1', async () => {
    server.setFallback({ status: 200, body: LAST_PAGE });
    await harness({ baseUrl: `${server.url}/test-versioning/` }).client.getOrderUpdates({}, within());
    await harness({ baseUrl: `${server.url}/` }).client.getOrderUpdates({}, within());
    await harness({ baseUrl: server.url }).client.getOrderUpdates({}, within());
    expect(server.requests.map((r) => r.url)).toEqual([
      '/test-versioning/v1/orderUpdates',
      '/v1/orderUpdates',
      '/v1/orderUpdates',
    ]);
  });

  it('fetches one order by id and leaves it raw', async () => {
    const { client } = harness();
    const order = { id: 42, version: 3, status: 'accepted', extra: { anything: true } };
    server.script({ status: 200, body: order });

    expect(await client.getOrder(42, within())).toEqual(order);
    expect(server.requests[0]?.url).toBe('/test-scenario/v1/orders/42');
  });

  it('fetches a 64-bit id beyond 2^53 by its exact digits (a bigint)', async () => {
    const { client } = harness();
    server.script({ status: 200, body: { id: 1 } });

    await client.getOrder(2n ** 63n - 1n, within());

    expect(server.requests[0]?.url).toBe('/test-scenario/v1/orders/9223372036854775807');
  });

  it('asks the token provider before every attempt, so a rotated token is used on the retry', async () => {
    const tokens = [TOKEN, `${TOKEN}-rotated`];
    const { client } = harness({ token: async () => tokens.shift() ?? 'none' });
    server.script({ status: 503 }, { status: 200, body: LAST_PAGE });

    await client.getOrderUpdates({}, within());
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${TOKEN}`,
      `Bearer ${TOKEN}-rotated`,
    ]);
  });

  it('works with the default module-level Agent', async () => {
    const { client } = harness({ dispatcher: undefined });
    server.script({ status: 200, body: LAST_PAGE });
    expect(await client.getOrderUpdates({}, within())).toEqual(LAST_PAGE);
  });
});

describe('non-retryable statuses', () => {
  it('401 → AuthenticationError after exactly one request, no wait', async () => {
    const { client, waits } = harness();
    server.setFallback({ status: 401, body: { message: 'Unauthorized' } });

    const err = await rejectionOf(client.getOrderUpdates({}, within()));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err.code).toBe('ERR_PARTNER_AUTH');
    expect(err.statusCode).toBe(401);
    expect(server.requests).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('404 `pageId not found` on a cursor → CursorExpiredError', async () => {
    const { client } = harness();
    server.script({ status: 404, body: { message: 'pageId not found' } });
    const err = await rejectionOf(client.getOrderUpdates({ pageId: 'old-cursor' }, within()));
    expect(err).toBeInstanceOf(CursorExpiredError);
    expect(err.code).toBe('ERR_PARTNER_CURSOR_EXPIRED');
    expect(server.requests).toHaveLength(1);
  });

  it('any other 404 on the feed → UnexpectedStatusError', async () => {
    const { client } = harness();
    server.script({ status: 404, body: { message: 'no such route' } }, { status: 404, body: 'Not Found' });
    const first = await rejectionOf(client.getOrderUpdates({ pageId: 'c' }, within()));
    expect(first).toBeInstanceOf(UnexpectedStatusError);
    expect(first.statusCode).toBe(404);
    expect(first.message).toContain('no such route');
    const second = await rejectionOf(client.getOrderUpdates({}, within()));
    expect(second).toBeInstanceOf(UnexpectedStatusError);
  });

  it('404 on an order → OrderNotFoundError carrying the id', async () => {
    const { client } = harness();
    server.script({ status: 404, body: { message: 'order not found' } });
    const err = await rejectionOf(client.getOrder(999, within()));
    expect(err).toBeInstanceOf(OrderNotFoundError);
    expect((err as OrderNotFoundError).orderId).toBe(999);
    expect(err.code).toBe('ERR_PARTNER_NOT_FOUND');
  });

  it("400 → BadRequestError with the server's message", async () => {
    const { client } = harness();
    server.script({ status: 400, body: { message: 'id must be an integer' } });
    const err = await rejectionOf(client.getOrder(1, within()));
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).serverMessage).toBe('id must be an integer');
    expect(err.message).toContain('id must be an integer');
  });

  it('other statuses (403) → UnexpectedStatusError, not retried', async () => {
    const { client, waits } = harness();
    server.script({ status: 403, body: { message: 'Forbidden' } });
    expect(await rejectionOf(client.getOrderUpdates({}, within()))).toMatchObject({
      code: 'ERR_PARTNER_HTTP',
      statusCode: 403,
    });
    expect(server.requests).toHaveLength(1);
    expect(waits).toEqual([]);
  });
});

describe('3xx: retried like a 5xx, never followed', () => {
  const SECRET_QUERY = 'sig=QUERY-SECRET-91';
  const redirect = (status: number) => ({
    status,
    headers: { location: `${server.url}/elsewhere/v1/orderUpdates?${SECRET_QUERY}#frag` },
  });

  it('a 302 then a page: the page within the call, the target never asked, its query logged nowhere', async () => {
    const { client, waits, events } = harness();
    server.script(redirect(302), { status: 200, body: PAGE });

    expect(await client.getOrderUpdates({ pageId: 'c1' }, within())).toEqual(PAGE);

    expect(server.requests.map((r) => r.pathname)).toEqual([
      '/test-scenario/v1/orderUpdates',
      '/test-scenario/v1/orderUpdates',
    ]);
    expect(waits).toEqual([100]);
    expect(events).toEqual([
      {
        kind: 'unreadable',
        attempt: 1,
        waitMs: 100,
        status: 302,
        location: `${server.url}/elsewhere/v1/orderUpdates`,
      },
    ]);
  });

  it('3xx on every attempt → RetryLaterError (unreadable) naming the target without its query', async () => {
    const { client, waits, events } = harness();
    server.setFallback(redirect(301));

    const err = await rejectionOf(client.getOrderUpdates({}, within()));

    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'unreadable', statusCode: 301, deadlinePassed: false });
    expect(err.message).toContain(`301 to ${server.url}/elsewhere/v1/orderUpdates)`);
    expect(server.requests).toHaveLength(5);
    expect(waits).toHaveLength(4);
    for (const text of [JSON.stringify(events), err.message, inspect(err, { depth: 10 })]) {
      expect(text).not.toContain('QUERY-SECRET');
      expect(text).not.toContain('frag');
    }
  });

  it('a relative, a missing and an unparseable Location are described without failing', async () => {
    const { client, events } = harness();
    server.script(
      { status: 307, headers: { location: '/moved?x=1' } },
      { status: 303 },
      { status: 308, headers: { location: 'http://[bad' } },
      { status: 200, body: PAGE },
    );
    await client.getOrderUpdates({}, within());
    expect(events.map((e) => e.location)).toEqual([
      `${server.url}/moved`,
      'no Location',
      'an unparseable Location',
    ]);
  });
});

describe('429 rate limiting', () => {
  it('waits Retry-After (delta-seconds), then repeats the same URL', async () => {
    const { client, waits, events } = harness();
    server.script({ status: 429, headers: { 'retry-after': '2' } }, { status: 200, body: PAGE });

    const page = await client.getOrderUpdates({ pageId: 'a+b/c', pageSize: 20 }, within(30_000));

    expect(page).toEqual(PAGE);
    expect(waits).toEqual([2_000]);
    expect(events).toEqual([{ kind: 'rate-limited', attempt: 1, waitMs: 2_000, status: 429 }]);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.url).toBe(server.requests[0]?.url);
  });

  it('really waits at least Retry-After: 1 with the default sleep', async () => {
    const { client } = harness({ sleep: undefined });
    server.script({ status: 429, headers: { 'retry-after': '1' } }, { status: 200, body: LAST_PAGE });

    await client.getOrderUpdates({}, within());

    const [first, second] = server.requests;
    expect(second && first ? second.receivedAt - first.receivedAt : 0).toBeGreaterThanOrEqual(1_000);
  });

  it('reads the HTTP-date form of Retry-After', async () => {
    const fixedNow = Date.UTC(2030, 0, 1, 0, 0, 0);
    const { client, waits } = harness({ now: () => fixedNow });
    server.script(
      { status: 429, headers: { 'retry-after': 'Tue, 01 Jan 2030 00:00:07 GMT' } },
      { status: 200, body: LAST_PAGE },
    );

    await client.getOrderUpdates({}, { deadline: fixedNow + 60_000 });
    expect(waits).toEqual([7_000]);
  });

  it('uses the default wait when Retry-After is missing', async () => {
    const { client, waits } = harness();
    server.script({ status: 429 }, { status: 200, body: LAST_PAGE });
    await client.getOrderUpdates({}, within());
    expect(waits).toEqual([1_000]);
  });

  it('backs off further on repeated 429s, never below Retry-After', async () => {
    const { client, waits } = harness();
    const limited = { status: 429, headers: { 'retry-after': '1' } };
    server.script(limited, limited, limited, { status: 200, body: LAST_PAGE });

    await client.getOrderUpdates({}, within(60_000));
    expect(waits).toEqual([1_000, 2_000, 4_000]);
    expect(new Set(server.requests.map((r) => r.url)).size).toBe(1);
  });

  it('a wait that would end past the deadline → RetryLaterError without sleeping', async () => {
    const { client, waits } = harness();
    server.script({ status: 429, headers: { 'retry-after': '30' } });

    const err = await rejectionOf(client.getOrderUpdates({}, within(2_000)));

    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'rate-limited', retryAfterMs: 30_000, statusCode: 429 });
    expect(waits).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it("a Retry-After beyond the cap → RetryLaterError with the server's value", async () => {
    const { client, waits } = harness();
    server.script({ status: 429, headers: { 'retry-after': '7200' } });

    const err = await rejectionOf(client.getOrderUpdates({}, { deadline: Date.now() + 24 * 3_600_000 }));

    expect(err).toMatchObject({
      code: 'ERR_PARTNER_RETRY_LATER',
      reason: 'rate-limited',
      retryAfterMs: 7_200_000,
    });
    expect(waits).toEqual([]);
  });

  it('gives up after maxRateLimitRetries consecutive 429s', async () => {
    const { client, waits } = harness({ retryPolicy: { maxRateLimitRetries: 2 } });
    server.setFallback({ status: 429, headers: { 'retry-after': '1' } });
    const err = await rejectionOf(client.getOrderUpdates({}, within(600_000)));
    expect(err).toMatchObject({ reason: 'rate-limited', statusCode: 429 });
    expect(waits).toEqual([1_000, 2_000]);
    expect(server.requests).toHaveLength(3);
  });
});

describe('5xx and network failures', () => {
  it('5xx then success: full-jitter backoff between attempts', async () => {
    const { client, waits, events } = harness();
    server.script({ status: 503 }, { status: 500, body: 'oops' }, { status: 200, body: PAGE });

    expect(await client.getOrderUpdates({}, within())).toEqual(PAGE);
    // random() = 0.5: half of the ceilings 200 ms and 400 ms.
    expect(waits).toEqual([100, 200]);
    expect(events.map((e) => [e.kind, e.attempt, e.status])).toEqual([
      ['server-error', 1, 503],
      ['server-error', 2, 500],
    ]);
  });

  it('5xx on every attempt → RetryLaterError after maxAttempts', async () => {
    const { client, waits } = harness();
    server.setFallback({ status: 502 });

    const err = await rejectionOf(client.getOrderUpdates({}, within()));

    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'server-error', statusCode: 502 });
    expect(server.requests).toHaveLength(5);
    expect(waits).toHaveLength(4);
  });

  it('connection reset (socket destroyed) then success', async () => {
    const { client, events } = harness();
    server.script({ destroy: true }, { status: 200, body: PAGE });

    expect(await client.getOrderUpdates({}, within())).toEqual(PAGE);
    expect(server.requests).toHaveLength(2);
    expect(events.map((e) => e.kind)).toEqual(['network']);
  });

  it('connection refused on every attempt → RetryLaterError (network) with a safe cause', async () => {
    const port = await closedPort();
    const { client, waits } = harness({
      baseUrl: `http://127.0.0.1:${port}`,
      retryPolicy: { maxAttempts: 3 },
    });

    const err = await rejectionOf(client.getOrderUpdates({}, within()));

    expect(err).toMatchObject({ reason: 'network', code: 'ERR_PARTNER_RETRY_LATER' });
    expect((err.cause as { code?: string }).code).toBe('ECONNREFUSED');
    expect(waits).toHaveLength(2);
  });

  it('slow headers → headers timeout, then a successful retry', async () => {
    const { client, events } = harness({ timeouts: { headersTimeoutMs: 150 } });
    server.script({ status: 200, body: PAGE, delayMs: 1_000 }, { status: 200, body: PAGE });

    expect(await client.getOrderUpdates({}, within())).toEqual(PAGE);
    expect(server.requests).toHaveLength(2);
    expect(events.map((e) => e.kind)).toEqual(['network']);
  });

  it('a request still running at the deadline is cut off → RetryLaterError', async () => {
    const { client } = harness();
    server.script({ status: 200, body: PAGE, delayMs: 3_000 });
    const started = Date.now();

    const err = await rejectionOf(client.getOrderUpdates({}, within(300)));

    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'network', deadlinePassed: true });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('a body trickling past the request timeout is cut at it and retried as a network failure', async () => {
    const { client, events } = harness({ timeouts: { requestTimeoutMs: 300 } });
    // One byte every 20 ms: never silent for bodyTimeout, about 2 s in all.
    server.script({ status: 200, body: PAGE, chunkBytes: 1, intervalMs: 20 }, { status: 200, body: PAGE });

    expect(await client.getOrderUpdates({}, within())).toEqual(PAGE);

    expect(server.requests).toHaveLength(2);
    expect(events.map((e) => e.kind)).toEqual(['network']);
  });

  it('a trickle outlasting every attempt → RetryLaterError (network, request timeout), not out of time', async () => {
    const { client } = harness({ timeouts: { requestTimeoutMs: 100 }, retryPolicy: { maxAttempts: 2 } });
    server.setFallback({ status: 200, body: PAGE, chunkBytes: 1, intervalMs: 20 });

    const err = await rejectionOf(client.getOrderUpdates({}, within()));

    expect(err).toMatchObject({ reason: 'network', deadlinePassed: false });
    expect(err.message).toContain('ERR_REQUEST_TIMEOUT');
    expect(server.requests).toHaveLength(2);
  });

  it('a request timeout longer than the time left: the call deadline cuts the request (out of time)', async () => {
    const { client } = harness({ timeouts: { requestTimeoutMs: 60_000 } });
    server.script({ status: 200, body: PAGE, chunkBytes: 1, intervalMs: 20 });

    const err = await rejectionOf(client.getOrderUpdates({}, within(200)));

    expect(err).toMatchObject({ reason: 'network', deadlinePassed: true });
    expect(server.requests).toHaveLength(1);
  });

  it('a deadline already past → RetryLaterError without any request', async () => {
    const { client } = harness();
    const err = await rejectionOf(client.getOrderUpdates({}, { deadline: Date.now() - 1 }));
    expect(err).toBeInstanceOf(RetryLaterError);
    expect(server.requests).toHaveLength(0);
  });

  it("honours the caller's AbortSignal mid-request", async () => {
    const { client } = harness();
    server.script({ status: 200, body: PAGE, delayMs: 3_000 });
    const controller = new AbortController();
    const reason = new Error('shutting down');
    setTimeout(() => controller.abort(reason), 50);

    await expect(client.getOrderUpdates({}, { ...within(), signal: controller.signal })).rejects.toBe(reason);
  });

  it('a throwing onRetry hook does not change the outcome', async () => {
    const { client } = harness({
      onRetry: () => {
        throw new Error('metrics down');
      },
    });
    server.script({ status: 500 }, { status: 200, body: LAST_PAGE });
    expect(await client.getOrderUpdates({}, within())).toEqual(LAST_PAGE);
  });
});

describe('malformed responses', () => {
  const HTML = { status: 200, headers: { 'content-type': 'text/html' }, body: '<html>maintenance</html>' };

  it('an HTML 200 then a good page → the good page within the call', async () => {
    const { client, events } = harness();
    server.script(HTML, { status: 200, body: PAGE });

    expect(await client.getOrderUpdates({}, within())).toEqual(PAGE);
    expect(events).toEqual([{ kind: 'unreadable', attempt: 1, waitMs: 100, status: 200 }]);
  });

  it('non-JSON 200 on every attempt → RetryLaterError (unreadable), its ResponseFormatError as cause', async () => {
    const { client, waits } = harness();
    server.setFallback({ status: 200, body: `<html>${'x'.repeat(5_000)}</html>` });

    const err = await rejectionOf(client.getOrderUpdates({}, within()));

    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'unreadable', statusCode: 200, deadlinePassed: false });
    expect(err.cause).toBeInstanceOf(ResponseFormatError);
    expect(err.cause).toMatchObject({ problem: 'not-json', statusCode: 200 });
    expect(err.message).toMatch(/body is not valid JSON .*; gave up after 5 attempts$/);
    expect(err.message.length).toBeLessThan(400);
    expect(waits).toHaveLength(4);
  });

  it('oversize body (with Content-Length) → ResponseFormatError at once; the connection stays usable', async () => {
    const { client } = harness({ maxBodyBytes: 1_024 });
    server.script(
      { status: 200, body: { hasMore: false, data: ['y'.repeat(64 * 1024)] } },
      { status: 200, body: LAST_PAGE },
    );

    expect(await rejectionOf(client.getOrderUpdates({}, within()))).toMatchObject({
      problem: 'body-too-large',
    });
    expect(server.requests).toHaveLength(1);
    expect(await client.getOrderUpdates({}, within())).toEqual(LAST_PAGE);
  });

  it('oversize chunked body (no Content-Length) is cut off while streaming', async () => {
    const { client } = harness({ maxBodyBytes: 4_096 });
    server.script({
      status: 200,
      body: { hasMore: false, data: ['z'.repeat(1024 * 1024)] },
      chunkBytes: 16 * 1024,
    });

    const err = await rejectionOf(client.getOrderUpdates({}, within()));
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err.message).toContain('4096');
  });

  it.each([
    ['an array', []],
    ['hasMore not boolean', { hasMore: 'no', data: [] }],
    ['data missing', { hasMore: false }],
    ['data not an array', { hasMore: false, data: {} }],
    ['nextPageId not a string', { hasMore: false, data: [], nextPageId: 5 }],
    ['nextPageId over the limit', { hasMore: true, data: [], nextPageId: 'c'.repeat(2_049) }],
  ])('wrong page envelope (%s) → retried, then RetryLaterError (unreadable)', async (_name, body) => {
    const { client } = harness({ retryPolicy: { maxAttempts: 2 } });
    server.setFallback({ status: 200, body });
    const err = await rejectionOf(client.getOrderUpdates({}, within()));
    expect(err).toMatchObject({ reason: 'unreadable', statusCode: 200 });
    expect(err.cause).toMatchObject({ code: 'ERR_PARTNER_RESPONSE_FORMAT', problem: 'wrong-shape' });
    expect(server.requests).toHaveLength(2);
  });

  it('hands over a page with hasMore but no nextPageId (rule 1 broken) with its data, for the poller to keep', async () => {
    const { client } = harness();
    server.script({ status: 200, body: { hasMore: true, data: [{ id: 1 }] } });
    expect(await client.getOrderUpdates({}, within())).toEqual({ hasMore: true, data: [{ id: 1 }] });
  });

  it('an order that is not a JSON object → retried, then RetryLaterError (unreadable)', async () => {
    const { client } = harness({ retryPolicy: { maxAttempts: 2 } });
    server.setFallback({ status: 200, body: [1, 2] });
    const err = await rejectionOf(client.getOrder(1, within()));
    expect(err).toMatchObject({
      reason: 'unreadable',
      message: expect.stringMatching(/not an Order object/),
    });
  });
});

describe('query encoding', () => {
  it("repeats array parameters by default (arrayEncoding 'repeat')", async () => {
    const { client } = harness();
    server.script({ status: 200, body: LAST_PAGE });

    await client.getOrderUpdates(
      { pageSize: 50, vendorIds: ['v-1', 'v 2'], orderIds: [7, 9_007_199_254_740_991], minAgeMinutes: 60 },
      within(),
    );

    const req = server.requests[0];
    expect(req?.url).toBe(
      '/test-scenario/v1/orderUpdates?pageSize=50&vendorIds=v-1&vendorIds=v+2&orderIds=7&orderIds=9007199254740991&minAgeMinutes=60',
    );
    expect(req?.query.getAll('vendorIds')).toEqual(['v-1', 'v 2']);
  });

  it("joins array parameters with literal commas (arrayEncoding 'comma')", async () => {
    const { client } = harness({ arrayEncoding: 'comma' });
    server.script({ status: 200, body: LAST_PAGE });

    await client.getOrderUpdates({ vendorIds: ['a', 'b&c'], orderIds: [1, 2] }, within());

    expect(server.requests[0]?.url).toBe('/test-scenario/v1/orderUpdates?vendorIds=a,b%26c&orderIds=1,2');
    expect(server.requests[0]?.query.get('vendorIds')).toBe('a,b&c');
  });

  it('refuses a vendor id containing a comma under the comma encoding', async () => {
    const { client } = harness({ arrayEncoding: 'comma' });
    await expect(client.getOrderUpdates({ vendorIds: ['a,b'] }, within())).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it.each(['a+b/c=d&e', 'x y%20z?#é', '  spaced  '])(
    'sends pageId %j byte-identical after decoding',
    async (pageId) => {
      const { client } = harness();
      server.script({ status: 200, body: LAST_PAGE });
      await client.getOrderUpdates({ pageId }, within());
      expect(server.requests[0]?.query.get('pageId')).toBe(pageId);
    },
  );

  it('sends fromTimestamp as an ISO 8601 UTC string', async () => {
    const { client } = harness();
    server.setFallback({ status: 200, body: LAST_PAGE });

    await client.getOrderUpdates({ fromTimestamp: new Date(Date.UTC(2024, 4, 1, 12, 30)) }, within());
    await client.getOrderUpdates({ fromTimestamp: '2024-05-01T14:30:00+02:00' }, within());

    expect(server.requests.map((r) => r.query.get('fromTimestamp'))).toEqual([
      '2024-05-01T12:30:00.000Z',
      '2024-05-01T12:30:00.000Z',
    ]);
  });
});

describe('client-side validation', () => {
  it.each([
    ['pageSize 0', { pageSize: 0 }, /pageSize must be an integer from 1 to 100/],
    ['pageSize 101', { pageSize: 101 }, /pageSize/],
    ['pageSize 1.5', { pageSize: 1.5 }, /pageSize/],
    ['minAgeMinutes 0', { minAgeMinutes: 0 }, /minAgeMinutes must be an integer from 1 to 1440/],
    ['minAgeMinutes 1441', { minAgeMinutes: 1441 }, /minAgeMinutes/],
    ['unsafe order id', { orderIds: [2 ** 53] }, /2\^53/],
    ['negative order id', { orderIds: [-1] }, /orderIds\[0\]/],
    ['empty vendor id', { vendorIds: [''] }, /vendorIds\[0\]/],
    ['empty vendorIds', { vendorIds: [] }, /non-empty array/],
    ['empty pageId', { pageId: '' }, /pageId/],
    ['zone-less timestamp', { fromTimestamp: '2024-05-01T00:00:00' }, /fromTimestamp/],
    ['garbage timestamp', { fromTimestamp: 'yesterday' }, /fromTimestamp/],
    ['invalid Date', { fromTimestamp: new Date(Number.NaN) }, /fromTimestamp/],
  ])('refuses %s before sending anything', async (_name, query, message) => {
    const { client } = harness();
    const err = await rejectionOf(client.getOrderUpdates(query, within()));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err.message).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });

  it.each([
    [2 ** 53, /pass an int64 id beyond that as a bigint/],
    [-1, /non-negative integer/],
    [1.5, /non-negative integer/],
    [2n ** 63n, /non-negative int64/],
  ])('refuses order id %s for getOrder', async (id, message) => {
    const { client } = harness();
    const err = await rejectionOf(client.getOrder(id, within()));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err.message).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });

  it.each([
    ['http to a non-loopback host', 'http://partner.example/test-pagination'],
    ['another scheme', 'ftp://127.0.0.1/x'],
    ['userinfo', 'https://user:pass@partner.example'],
    ['a query string', 'https://partner.example/v?x=1'],
    ['a bare ?', 'https://partner.example/?'],
    ['a fragment', 'https://partner.example/#x'],
    ['not a URL', 'partner.example'],
  ])('refuses a base URL with %s at construction', (_name, baseUrl) => {
    expect(() => createPartnerClient({ baseUrl, token: async () => TOKEN })).toThrow(InvalidArgumentError);
  });

  it('refuses credentials in the URL without echoing them', () => {
    expect(() =>
      createPartnerClient({ baseUrl: 'https://u:hunter2@partner.example', token: async () => TOKEN }),
    ).toThrow(expect.objectContaining({ message: expect.not.stringContaining('hunter2') }));
  });

  it.each([
    'https://partner.example/test-versioning',
    'http://127.0.0.1:8080/test-pagination',
    'http://127.1.2.3:9',
    'http://localhost:8080',
    'http://[::1]:8080/',
  ])('accepts %s', (baseUrl) => {
    expect(() => createPartnerClient({ baseUrl, token: async () => TOKEN, dispatcher: agent })).not.toThrow();
  });
});

describe('the token never leaks', () => {
  const scenarios: Array<[string, () => Promise<unknown>]> = [
    [
      'AuthenticationError',
      () => {
        server.script({ status: 401, body: { message: `Unauthorized: Bearer ${TOKEN}` } });
        return harness().client.getOrderUpdates({}, within());
      },
    ],
    [
      'BadRequestError echoing the header',
      () => {
        server.script((req) => ({
          status: 400,
          body: { message: `bad header ${req.headers.authorization}` },
        }));
        return harness().client.getOrder(1, within());
      },
    ],
    [
      'CursorExpiredError',
      () => {
        server.script({ status: 404, body: { message: 'pageId not found' } });
        return harness().client.getOrderUpdates({ pageId: 'p' }, within());
      },
    ],
    [
      'OrderNotFoundError echoing the header',
      () => {
        server.script((req) => ({ status: 404, body: { message: String(req.headers.authorization) } }));
        return harness().client.getOrder(5, within());
      },
    ],
    [
      'UnexpectedStatusError echoing the header',
      () => {
        server.script((req) => ({ status: 418, body: { message: String(req.headers.authorization) } }));
        return harness().client.getOrderUpdates({}, within());
      },
    ],
    [
      'RetryLaterError (non-JSON 200s echoing the header, in the body and the content type)',
      () => {
        server.setFallback((req) => ({
          status: 200,
          headers: { 'content-type': `text/html; ${req.headers.authorization}` },
          body: `not json ${req.headers.authorization}`,
        }));
        return harness().client.getOrderUpdates({}, within());
      },
    ],
    [
      'RetryLaterError (3xx whose Location carries the token, in its path and query)',
      () => {
        server.setFallback({
          status: 302,
          headers: { location: `/${encodeURIComponent(TOKEN)}/x?access_token=${TOKEN}` },
        });
        return harness().client.getOrderUpdates({}, within());
      },
    ],
    [
      'ResponseFormatError (oversize)',
      () => {
        server.script({ status: 200, body: 'x'.repeat(10_000) });
        return harness({ maxBodyBytes: 100 }).client.getOrderUpdates({}, within());
      },
    ],
    [
      'RetryLaterError (429 past the deadline)',
      () => {
        server.script({ status: 429, headers: { 'retry-after': '60' } });
        return harness().client.getOrderUpdates({}, within(1_000));
      },
    ],
    [
      'RetryLaterError (5xx exhausted)',
      () => {
        server.setFallback((req) => ({ status: 500, body: { message: String(req.headers.authorization) } }));
        return harness().client.getOrderUpdates({}, within());
      },
    ],
    [
      'RetryLaterError (connection resets exhausted)',
      () => {
        server.setFallback({ destroy: true });
        return harness().client.getOrderUpdates({}, within());
      },
    ],
    [
      'RetryLaterError (deadline mid-request)',
      () => {
        server.script({ status: 200, body: PAGE, delayMs: 2_000 });
        return harness().client.getOrderUpdates({}, within(200));
      },
    ],
    [
      'RetryLaterError (headers timeout exhausted)',
      () => {
        server.setFallback({ status: 200, body: PAGE, delayMs: 1_000 });
        return harness({
          timeouts: { headersTimeoutMs: 50 },
          retryPolicy: { maxAttempts: 1 },
        }).client.getOrderUpdates({}, within());
      },
    ],
    ['InvalidArgumentError', () => harness().client.getOrderUpdates({ pageSize: 0 }, within())],
  ];

  it.each(scenarios)('%s carries no token in message, cause, stack or inspect output', async (_name, run) => {
    const err = await rejectionOf(run());
    expect((err as PartnerApiError).code).toMatch(/^ERR_PARTNER_/);
    expectNoToken(err);
  });
});
