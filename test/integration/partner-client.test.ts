// The partner client's behaviours, each asserted here once, against a real HTTP server on 127.0.0.1:0 whose
// answers each test scripts. Waits go through a recording fake `sleep` (no real time passes) except in one test.
// By behaviour: what a request looks like; answers repeated, then a page; answers that end the call, as the
// PartnerError's kind (table), none of which carries the token or the body of a 200; base URLs.

import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { gzipSync } from 'node:zlib';
import { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPartnerClient, type PartnerClientOptions } from '../../functions/core/partner/client.js';
import { PartnerError } from '../../functions/core/partner/errors.js';
import type { PartnerApi, RetryEvent } from '../../functions/core/partner/types.js';
import {
  encode,
  type Responder,
  type ScriptedServer,
  startScriptedServer,
} from '../support/scripted-http-server.js';

const TOKEN = 'tok-SECRET-3f9c1e7a-do-not-leak';
const CUSTOMER = 'Jane Example, 12 Private Road';
const PAGE = { hasMore: true, data: [{ id: 1, version: 1 }], nextPageId: 'cursor-2' };
const LAST_PAGE = { hasMore: false, data: [], nextPageId: 'cursor-2' };
const FIXED_NOW = Date.UTC(2030, 0, 1, 0, 0, 0); // Tue, 01 Jan 2030 00:00:00 GMT

let server: ScriptedServer;
let agent: Agent;
let refusedUrl: string;

beforeAll(async () => {
  server = await startScriptedServer();
  agent = new Agent({ connectTimeout: 2_000 });
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  refusedUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await agent.close();
  await server.close();
});
beforeEach(() => server.reset());

/** A client on the scripted server whose sleep records waits and returns at once. */
function harness(overrides: Partial<PartnerClientOptions> = {}) {
  const waits: number[] = [];
  const events: RetryEvent[] = [];
  const api = createPartnerClient({
    baseUrl: `${server.url}/test-scenario`,
    token: async () => TOKEN,
    dispatcher: agent,
    random: () => 0.5,
    sleep: async (ms) => void waits.push(ms),
    ...overrides,
  });
  // Retry events arrive through each call's own onRetry, as the poller counts them.
  const onRetry = (event: RetryEvent) => events.push(event);
  const client: PartnerApi = {
    getOrderUpdates: (query, call) => api.getOrderUpdates(query, { onRetry, ...call }),
    getOrder: (id, call) => api.getOrder(id, { onRetry, ...call }),
  };
  return { client, waits, events };
}

const within = (ms = 10_000) => ({ deadline: Date.now() + ms });

async function rejectionOf(promise: Promise<unknown>): Promise<PartnerError> {
  const result = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(result instanceof PartnerError)) throw new Error(`expected a PartnerError, got ${String(result)}`);
  return result;
}

/** Everything a log line could be built from: message, stack, cause chain, inspect and JSON forms. */
function renderings(err: Error): string[] {
  const texts = [JSON.stringify(err), String(err), inspect(err, { depth: 10 })];
  for (let e: unknown = err; e instanceof Error; e = e.cause) texts.push(e.message, e.stack ?? '');
  return texts;
}

/** A server answer that echoes the request's Authorization header (a partner may). */
const echoing =
  (status: number, text = (auth: string) => ({ message: `bad header ${auth}` })): Responder =>
  (req) => ({ status, body: text(String(req.headers.authorization)) });

describe('what a request looks like', () => {
  it('a GET with the token only in the Authorization header, and the page as served', async () => {
    server.script({ status: 200, body: PAGE });
    expect(await harness().client.getOrderUpdates({ pageId: 'cursor-1' }, within())).toEqual(PAGE);
    const [req] = server.requests;
    expect(req).toMatchObject({ method: 'GET', pathname: '/test-scenario/v1/orderUpdates' });
    expect(req?.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/json',
      'accept-encoding': 'gzip, deflate, br',
    });
    expect(req?.headers['user-agent']).toMatch(/order-feed-ingester/);
    expect(decodeURIComponent(req?.url ?? '')).not.toContain(TOKEN);
  });

  it('joins base URLs with and without a trailing slash or prefix onto /v1', async () => {
    server.setFallback({ status: 200, body: LAST_PAGE });
    for (const base of [`${server.url}/test-versioning/`, `${server.url}/`, server.url])
      await harness({ baseUrl: base }).client.getOrderUpdates({}, within());
    expect(server.requests.map((r) => r.url)).toEqual([
      '/test-versioning/v1/orderUpdates',
      '/v1/orderUpdates',
      '/v1/orderUpdates',
    ]);
  });

  it('fetches an order by its exact id (a bigint beyond 2^53) and leaves it raw', async () => {
    const order = { id: 42, version: 3, extra: { anything: true } };
    server.script({ status: 200, body: order });
    expect(await harness().client.getOrder(2n ** 63n - 1n, within())).toEqual(order);
    expect(server.requests[0]?.url).toBe('/test-scenario/v1/orders/9223372036854775807');
  });

  it('asks the token provider before every attempt: the retry sends, and redacts, the rotated token', async () => {
    const tokens = ['tok-before-rotation', 'tok-after-rotation'];
    server.script(
      { status: 503 },
      echoing(404, (auth) => ({ message: `echo ${auth.slice(7)}` })),
    );
    const call = harness({ token: async () => tokens.shift() ?? 'none' }).client.getOrderUpdates(
      {},
      within(),
    );
    await expect(call).rejects.toMatchObject({ message: 'partner API answered 404: echo [redacted]' });
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([
      'Bearer tok-before-rotation',
      'Bearer tok-after-rotation',
    ]);
  });

  it('works with the default module-level Agent and sleep (a real wait of the default 429 delay)', async () => {
    const { client } = harness({
      dispatcher: undefined,
      sleep: undefined,
      retryPolicy: { defaultRetryAfterMs: 100 },
    });
    server.script({ status: 429 }, { status: 200, body: LAST_PAGE });
    expect(await client.getOrderUpdates({}, within())).toEqual(LAST_PAGE);
    const [first, second] = server.requests;
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(100);
  });

  it("repeats array parameters ('repeat', the default) or joins them with commas ('comma')", async () => {
    server.setFallback({ status: 200, body: LAST_PAGE });
    const query = {
      pageSize: 50,
      vendorIds: ['v-1', 'v 2&3'],
      orderIds: [7, 9_007_199_254_740_991],
      minAgeMinutes: 60,
    };
    await harness().client.getOrderUpdates(query, within());
    await harness({ arrayEncoding: 'comma' }).client.getOrderUpdates(query, within());
    expect(server.requests.map((r) => r.url)).toEqual([
      '/test-scenario/v1/orderUpdates?pageSize=50&vendorIds=v-1&vendorIds=v+2%263&orderIds=7&orderIds=9007199254740991&minAgeMinutes=60',
      '/test-scenario/v1/orderUpdates?pageSize=50&vendorIds=v-1,v+2%263&orderIds=7,9007199254740991&minAgeMinutes=60',
    ]);
  });

  it.each(['a+b/c=d&e', 'x y%20z?#é', '  spaced  '])('sends pageId %j byte for byte', async (pageId) => {
    server.script({ status: 200, body: LAST_PAGE });
    await harness().client.getOrderUpdates({ pageId, fromTimestamp: '2024-05-01T12:30:00.000Z' }, within());
    expect(server.requests[0]?.query.get('pageId')).toBe(pageId);
    expect(server.requests[0]?.query.get('fromTimestamp')).toBe('2024-05-01T12:30:00.000Z');
  });
});

describe('answers it hands back as they are', () => {
  it.each([
    ['an empty stream (no nextPageId)', { hasMore: false, data: [] }, { hasMore: false, data: [] }],
    [
      'hasMore without nextPageId (rule 1 broken; the poller keeps the data)',
      { hasMore: true, data: [{ id: 1 }] },
      { hasMore: true, data: [{ id: 1 }] },
    ],
    [
      'envelope fields the spec does not define, dropped',
      { hasMore: false, data: [], extra: 1 },
      { hasMore: false, data: [] },
    ],
    [
      'a page after a UTF-8 byte order mark (RFC 8259 8.1: a parser may ignore one)',
      `\uFEFF${JSON.stringify({ hasMore: false, data: [{ id: 1 }] })}`,
      { hasMore: false, data: [{ id: 1 }] },
    ],
    [
      'a nextPageId of exactly 2,048 UTF-8 bytes',
      { hasMore: true, data: [], nextPageId: 'é'.repeat(1_024) },
      { hasMore: true, data: [], nextPageId: 'é'.repeat(1_024) },
    ],
  ])('%s', async (_name, body, page) => {
    server.script({ status: 200, body });
    expect(await harness().client.getOrderUpdates({}, within(20_000.5))).toEqual(page);
  });

  it('a page whose headers come after a third of the request timeout, and after bodyTimeout', async () => {
    // Scaled down: the request timeout of 2 s stands for 30 s, headers at 0.8 s for a partner's 12 s (the old
    // headers timeout was a third of the total); bodyTimeout, silence in the body only, does not apply.
    const { client, events } = harness({ timeouts: { requestTimeoutMs: 2_000, bodyTimeoutMs: 300 } });
    server.script({ status: 200, body: PAGE, delayMs: 800 });
    expect(await client.getOrderUpdates({}, within())).toEqual(PAGE);
    expect(events).toEqual([]);
  });
});

describe('compressed pages, decoded before they are read', () => {
  // An id beyond 2^53 survives decoding exactly; `x-gzip` is gzip's old name, `identity` no coding at all.
  const text = '{"hasMore":false,"data":[{"id":9223372036854775807,"name":"é"}]}';
  const page = { hasMore: false, data: [{ id: 9_223_372_036_854_775_807n, name: 'é' }] };
  it.each([
    ['gzip', { encoding: 'gzip' }],
    ['deflate', { encoding: 'deflate' }],
    ['br', { encoding: 'br' }],
    ['two codings, gzip then br', { encoding: 'gzip, br' }],
    ['x-gzip', { headers: { 'content-encoding': 'x-gzip' }, body: encode(Buffer.from(text), 'gzip') }],
    ['identity (not encoded)', { headers: { 'content-encoding': 'identity' } }],
    ['gzip of the page after a byte order mark', { encoding: 'gzip', body: `\uFEFF${text}` }],
  ])('%s', async (_name, answer) => {
    server.script({ status: 200, body: text, ...answer });
    expect(await harness().client.getOrderUpdates({}, within())).toEqual(page);
  });
});

const redirect = (status: number, to = '/elsewhere/v1/orderUpdates?sig=QUERY-SECRET-91#frag'): Responder => ({
  status,
  headers: { location: to },
});
/** A 429; the server's own Date is the real clock's, so an HTTP-date case sends the partner's `date` too. */
const r429 = (retryAfter?: string, date?: string): Responder => ({
  status: 429,
  ...(retryAfter && { headers: { 'retry-after': retryAfter, ...(date && { date }) } }),
});
const HTML = { status: 200, headers: { 'content-type': 'text/html' }, body: `<html>${CUSTOMER}</html>` };
const TRICKLE = { status: 200, body: PAGE, chunkBytes: 1, intervalMs: 20 }; // never silent for bodyTimeout
const SLOW = { status: 200, body: PAGE, delayMs: 3_000 };
const X_FOO = { status: 200, headers: { 'content-encoding': 'x-foo' }, body: 'opaque' };
/** A body in `encoding` whose stream is then broken by `damage`. */
const corrupt = (encoding: string, damage: (bytes: Buffer) => Buffer): Responder => ({
  status: 200,
  headers: { 'content-encoding': encoding },
  body: damage(encode(Buffer.from(JSON.stringify(PAGE)), encoding)),
});
/** gzip inside gzip: 16 MiB of spaces, 64 members of it (1 GiB), gzipped again: under 2 KB on the wire. */
function gzipBomb(): Buffer {
  const member = gzipSync(Buffer.alloc(16 * 1024 * 1024, ' '), { level: 9 });
  return gzipSync(Buffer.concat(Array.from({ length: 64 }, () => member)), { level: 9 });
}

describe('answers it repeats (the same URL, waiting first), then hands back the page', () => {
  // Each retry event as `kind attempt waitMs status [location]`; random() is 0.5, so a backoff is half its ceiling.
  const cases: Array<[string, Responder[], string[], Partial<PartnerClientOptions>?]> = [
    ['429: waits Retry-After (delta-seconds)', [r429('2')], ['rate-limited 1 2000 429']],
    [
      '429: waits until an HTTP-date, on the partner’s clock',
      [r429('Tue, 01 Jan 2030 00:00:07 GMT', 'Tue, 01 Jan 2030 00:00:00 GMT')],
      ['rate-limited 1 7000 429'],
    ],
    [
      '429: an HTTP-date from a partner clock an hour ahead of ours is the same 7 s',
      [r429('Tue, 01 Jan 2030 01:00:07 GMT', 'Tue, 01 Jan 2030 01:00:00 GMT')],
      ['rate-limited 1 7000 429'],
    ],
    [
      'repeated 429s: backs off further, never below Retry-After',
      [r429('1'), r429('1'), r429('1')],
      ['rate-limited 1 1000 429', 'rate-limited 2 2000 429', 'rate-limited 3 4000 429'],
    ],
    [
      '5xx: full-jitter backoff',
      [{ status: 503 }, { status: 500 }],
      ['server-error 1 100 503', 'server-error 2 200 500'],
    ],
    ['a connection reset', [{ destroy: true }], ['network 1 100 -']],
    [
      'headers silent past the request timeout: cut',
      [SLOW],
      ['network 1 100 -'],
      { timeouts: { requestTimeoutMs: 150 } },
    ],
    [
      'a body silent past bodyTimeout: cut',
      [{ status: 200, body: PAGE, chunkBytes: 8, intervalMs: 2_000 }],
      ['network 1 100 -'],
      { timeouts: { bodyTimeoutMs: 100 } },
    ],
    [
      'a trickling body, cut at the request timeout',
      [TRICKLE],
      ['network 1 100 -'],
      { timeouts: { requestTimeoutMs: 300 } },
    ],
    ['a 200 that is not JSON (a maintenance page)', [HTML], ['unreadable 1 100 200']],
    ['a body in a coding it cannot decode, named', [X_FOO], ['unreadable 1 100 200 x-foo']],
    [
      'a 429 and a 503 with encoded bodies: read as plain ones',
      [
        { status: 429, headers: { 'retry-after': '1' }, encoding: 'br', body: { message: 'slow down' } },
        { status: 503, encoding: 'gzip', body: { message: 'maintenance' } },
      ],
      ['rate-limited 1 1000 429', 'server-error 2 100 503'],
    ],
    [
      'a 3xx, never followed; its target without query or fragment',
      [redirect(302)],
      ['unreadable 1 100 302 /elsewhere/v1/orderUpdates'],
    ],
    [
      'a relative, a missing and an unparseable Location',
      [redirect(307, '/moved?x=1'), { status: 303 }, redirect(308, 'http://[bad')],
      [
        'unreadable 1 100 307 /moved',
        'unreadable 2 200 303 no Location',
        'unreadable 3 400 308 an unparseable Location',
      ],
    ],
  ];

  it.each(cases)('%s', async (_name, answers, events, options = {}) => {
    const { client, waits, events: seen } = harness({ now: () => FIXED_NOW, ...options });
    server.script(...answers, { status: 200, body: PAGE });

    const page = await client.getOrderUpdates(
      { pageId: 'a+b/c', pageSize: 20 },
      { deadline: FIXED_NOW + 60_000 },
    );

    expect(page).toEqual(PAGE);
    const described = seen.map((e) =>
      [e.kind, e.attempt, e.waitMs, e.status ?? '-', e.location, e.contentEncoding]
        .filter((x) => x !== undefined)
        .join(' '),
    );
    expect(described).toEqual(events.map((e) => e.replace(/ \//, ` ${server.url}/`)));
    expect(waits).toEqual(seen.map((e) => e.waitMs));
    expect(new Set(server.requests.map((r) => r.url)).size).toBe(1);
  });

  it('a throwing onRetry hook does not change the outcome', async () => {
    server.script({ status: 500 }, { status: 200, body: LAST_PAGE });
    const onRetry = () => {
      throw new Error('metrics down');
    };
    expect(await harness().client.getOrderUpdates({}, { ...within(), onRetry })).toEqual(LAST_PAGE);
  });
});

type Call = (client: PartnerApi) => Promise<unknown>;
interface More {
  call?: Call;
  options?: Partial<PartnerClientOptions>;
  deadlineMs?: number;
}
const order = (id: number): More => ({ call: (client) => client.getOrder(id, within()) });
const cursor: More = { call: (client) => client.getOrderUpdates({ pageId: 'old-cursor' }, within()) };
const attempts = (maxAttempts: number, more: More = {}): More => ({
  ...more,
  options: { retryPolicy: { maxAttempts } },
});
const kind = (k: string, more: Record<string, unknown> = {}) => ({ kind: k, ...more });
const later = (reason: string, more: Record<string, unknown> = {}) =>
  kind('retry-later', { code: 'ERR_PARTNER_RETRY_LATER', reason, deadlinePassed: false, ...more });
const unreadable = (text: string | RegExp, more: Record<string, unknown> = {}) =>
  later('unreadable', { message: expect.stringMatching(text), cause: { kind: 'unreadable' }, ...more });
const flipByte = (bytes: Buffer, at: number) => {
  const copy = Buffer.from(bytes);
  copy[at] = (copy[at] ?? 0) ^ 0xff;
  return copy;
};
const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);
const notJson = (
  what: string,
  type: string,
  text: string,
  encoding?: string,
): [string, Responder, object, number] => [
  `a 200 that is not JSON (${what}) on every attempt → retry-later, described by size and hash only`,
  { status: 200, headers: { 'content-type': type }, body: text, ...(encoding && { encoding }) },
  unreadable(
    new RegExp(`${Buffer.byteLength(text)} bytes, .*sha256 ${hashOf(text)}….*gave up after 5 attempts$`),
    {
      statusCode: 200,
      cause: { kind: 'unreadable', code: 'ERR_PARTNER_RESPONSE_FORMAT', statusCode: 200 },
    },
  ),
  5,
];

// [behaviour, the server's answer (an array: in order; else every answer), the error, requests sent, how called].
const FAILURES: Array<[string, Responder | Responder[], object, number, More?]> = [
  ['401 → auth, at once', echoing(401), kind('auth', { code: 'ERR_PARTNER_AUTH', statusCode: 401 }), 1],
  [
    '404 `pageId not found` for a cursor sent → cursor-expired (matched loosely)',
    { status: 404, body: { message: ' PageId Not Found ' } },
    kind('cursor-expired', { code: 'ERR_PARTNER_CURSOR_EXPIRED', statusCode: 404 }),
    1,
    cursor,
  ],
  [
    'the same 404 gzip-encoded → cursor-expired',
    { status: 404, encoding: 'gzip', body: { message: 'pageId not found' } },
    kind('cursor-expired'),
    1,
    cursor,
  ],
  [
    'the same 404 after a byte order mark → cursor-expired',
    { status: 404, body: `\uFEFF${JSON.stringify({ message: 'pageId not found' })}` },
    kind('cursor-expired'),
    1,
    cursor,
  ],
  [
    '404 `pageId not found`, no cursor sent → http',
    { status: 404, body: { message: 'pageId not found' } },
    kind('http'),
    1,
  ],
  [
    'any other 404 on the feed → http, quoting the server redacted',
    echoing(404),
    kind('http', {
      code: 'ERR_PARTNER_HTTP',
      message: 'partner API answered 404: bad header Bearer [redacted]',
    }),
    1,
    cursor,
  ],
  [
    '404 on an order → not-found naming the id',
    echoing(404),
    kind('not-found', { message: expect.stringMatching(/^order 999 not found: /) }),
    1,
    order(999),
  ],
  [
    "400 → bad-request with the server's message",
    echoing(400),
    kind('bad-request', { serverMessage: 'bad header Bearer [redacted]' }),
    1,
    order(1),
  ],
  [
    '403, its body not JSON → http, no message',
    { status: 403, body: '<p>no</p>' },
    kind('http', { message: 'partner API answered 403' }),
    1,
  ],
  [
    '5xx on every attempt → retry-later after 5 attempts',
    echoing(502),
    later('server-error', { statusCode: 502 }),
    5,
  ],
  [
    '3xx on every attempt → retry-later (unreadable) naming the target without its query',
    redirect(301, `/${encodeURIComponent(TOKEN)}/x?access_token=${TOKEN}`),
    later('unreadable', { statusCode: 301, message: expect.stringContaining('(301 to http://127.0.0.1:') }),
    5,
  ],
  notJson('an HTML page', 'text/html; charset=utf-8', `<html><body>${CUSTOMER}</body></html>`),
  notJson(
    'JSON cut off mid-record',
    'application/json',
    `{"hasMore":true,"data":[{"id":1,"customer":"${CUSTOMER}`,
  ),
  notJson('text echoing the token', `text/plain; Bearer ${TOKEN}`, `${CUSTOMER} Bearer ${TOKEN}`),
  notJson('gzip-encoded HTML: its decoded size and hash', 'text/html', `<p>${CUSTOMER}</p>`, 'gzip'),
  [
    'a body in a coding it cannot decode → retry-later naming the coding, redacted (a 404 too: unread)',
    { status: 404, headers: { 'content-encoding': `x-foo, ${TOKEN}` }, body: 'pageId not found' },
    unreadable('404 body in a content-coding the client cannot decode \\(x-foo, \\[redacted\\]\\)', {
      statusCode: 404,
    }),
    2,
    attempts(2, cursor),
  ],
  ...(
    [
      ['a truncated gzip stream', corrupt('gzip', (b) => b.subarray(0, b.length - 9)), 'Z_BUF_ERROR'],
      ['a gzip stream with a bad CRC', corrupt('gzip', (b) => flipByte(b, b.length - 6)), 'Z_DATA_ERROR'],
      ['an empty gzip body', corrupt('gzip', () => Buffer.alloc(0)), 'Z_BUF_ERROR'],
      ['a br stream that is not br', corrupt('br', (b) => flipByte(b, 0)), ''],
    ] as const
  ).map(([what, answer, code]): [string, Responder, object, number, More] => [
    `${what} → retry-later (unreadable), never a crash`,
    answer,
    unreadable(`200 body could not be decoded \\(${code}`, { statusCode: 200 }),
    2,
    attempts(2),
  ]),
  [
    'an order that is not JSON → the same',
    HTML,
    unreadable('content-type "text/html"'),
    2,
    attempts(2, order(7)),
  ],
  [
    'a page that is an array → retry-later (unreadable)',
    { status: 200, body: [] },
    unreadable('not a JSON object'),
    2,
    attempts(2),
  ],
  ...(
    [
      ['hasMore is not a boolean', { hasMore: 'no', data: [] }],
      ['data is not an array', { hasMore: false }],
      ['nextPageId is not a string', { hasMore: false, data: [], nextPageId: 5 }],
    ] as const
  ).map(([why, body]): [string, Responder, object, number, More] => [
    `a page whose ${why} → retry-later (unreadable)`,
    { status: 200, body },
    unreadable(why),
    2,
    attempts(2),
  ]),
  [
    'a page whose nextPageId is over 2,048 UTF-8 bytes → retry-later (unreadable)',
    { status: 200, body: { hasMore: true, data: [], nextPageId: `${'é'.repeat(1_024)}x` } },
    unreadable('nextPageId of 2049 bytes exceeds the 2048-byte limit'),
    2,
    attempts(2),
  ],
  [
    'an order that is not an object → retry-later (unreadable)',
    { status: 200, body: [1] },
    unreadable('not an Order object'),
    2,
    attempts(2, order(1)),
  ],
  [
    'a 200 over the body cap (Content-Length) → body-too-large at once',
    { status: 200, body: { data: ['y'.repeat(64 * 1024)] } },
    kind('body-too-large', {
      code: 'ERR_PARTNER_RESPONSE_FORMAT',
      statusCode: 200,
      message: expect.stringContaining('1024-byte limit'),
    }),
    1,
    { options: { maxBodyBytes: 1_024 } },
  ],
  [
    'a gzip bomb (under 2 KB, 1 GiB decoded) → body-too-large, cut at the cap in decoded bytes',
    { status: 200, headers: { 'content-encoding': 'gzip, gzip' }, body: gzipBomb() },
    kind('body-too-large', { message: expect.stringContaining('1048576-byte limit') }),
    1,
    { options: { maxBodyBytes: 1024 * 1024 } },
  ],
  [
    'a chunked 200 over the body cap → cut while streaming',
    { status: 200, body: { data: ['z'.repeat(1024 * 1024)] }, chunkBytes: 16 * 1024 },
    kind('body-too-large', { message: expect.stringContaining('4096-byte limit') }),
    1,
    { options: { maxBodyBytes: 4_096 } },
  ],
  [
    '429 whose wait does not fit before the deadline → retry-later',
    r429('30'),
    later('rate-limited', { statusCode: 429, retryAfterMs: 30_000 }),
    1,
    { deadlineMs: 2_000 },
  ],
  [
    '429 with Retry-After over the 60 s cap → retry-later with it',
    r429('7200'),
    later('rate-limited', { retryAfterMs: 7_200_000 }),
    1,
    { deadlineMs: 86_400_000 },
  ],
  [
    '429s beyond maxRateLimitRetries → retry-later',
    r429('1'),
    later('rate-limited'),
    3,
    { options: { retryPolicy: { maxRateLimitRetries: 2 } }, deadlineMs: 600_000 },
  ],
  [
    "a mix of failures → retry-later with the last one's reason, naming every kind it met",
    [
      { status: 500 },
      { status: 429, headers: { 'retry-after': '0' } },
      { status: 503 },
      { destroy: true },
      { status: 502 },
      redirect(302),
    ],
    later('unreadable', {
      statusCode: 302,
      message: expect.stringMatching(
        /gave up after 5 attempts; met server-error 3, rate-limited 1, network 1, unreadable 1$/,
      ),
    }),
    6,
  ],
  ['connection resets on every attempt → retry-later (network)', { destroy: true }, later('network'), 5],
  [
    'headers silent past the request timeout on every attempt → retry-later (network), not out of time',
    SLOW,
    later('network', { message: expect.stringContaining('ERR_REQUEST_TIMEOUT') }),
    1,
    { options: { timeouts: { requestTimeoutMs: 50 }, retryPolicy: { maxAttempts: 1 } } },
  ],
  [
    'a trickle outlasting every attempt → retry-later (network, the request timeout), not out of time',
    TRICKLE,
    later('network', { message: expect.stringContaining('ERR_REQUEST_TIMEOUT') }),
    2,
    { options: { timeouts: { requestTimeoutMs: 100 }, retryPolicy: { maxAttempts: 2 } } },
  ],
  [
    'a request running at the deadline → cut off, retry-later (out of time)',
    SLOW,
    later('network', { deadlinePassed: true }),
    1,
    { deadlineMs: 300 },
  ],
  [
    'a request timeout longer than the time left → the deadline cuts the request (out of time)',
    TRICKLE,
    later('network', { deadlinePassed: true }),
    1,
    { options: { timeouts: { requestTimeoutMs: 60_000 } }, deadlineMs: 200 },
  ],
  [
    'a deadline already past → retry-later (out of time), no request',
    SLOW,
    later('network', { deadlinePassed: true }),
    0,
    { deadlineMs: -1 },
  ],
  [
    'a token that cannot go in a header → invalid-argument, no request',
    SLOW,
    kind('invalid-argument', { code: 'ERR_PARTNER_INVALID_ARGUMENT' }),
    0,
    { options: { token: async () => `${TOKEN}\r\nx: y` } },
  ],
];

describe('answers that end the call: the error kind, and what it carries', () => {
  it.each(FAILURES)('%s', async (_name, answers, error, requests, more = {}) => {
    const { client, waits } = harness(more.options);
    if (Array.isArray(answers)) server.script(...answers);
    else server.setFallback(answers);
    const call =
      more.call ?? ((c: PartnerApi) => c.getOrderUpdates({ pageSize: 100 }, within(more.deadlineMs)));

    const err = await rejectionOf(call(client));

    expect(err).toMatchObject(error);
    expect(server.requests).toHaveLength(requests);
    expect(waits).toHaveLength(Math.max(0, requests - 1)); // a wait before every repeat, none after the last
    expect(new Set(server.requests.map((r) => r.url)).size).toBeLessThanOrEqual(1);
    for (const text of renderings(err)) {
      expect(text).not.toContain(TOKEN);
      // No SyntaxError in the chain either: V8's quotes the body.
      expect(text).not.toMatch(/Jane Example|Private Road|QUERY-SECRET|frag|SyntaxError/);
    }
  });

  it('connection refused on every attempt → retry-later (network) with a plain cause', async () => {
    const { client, waits } = harness({ baseUrl: refusedUrl, retryPolicy: { maxAttempts: 3 } });
    const err = await rejectionOf(client.getOrderUpdates({}, within()));
    expect(err).toMatchObject(later('network', { cause: { code: 'ECONNREFUSED' } }));
    expect(waits).toHaveLength(2);
  });

  it('a body over the cap leaves the connection usable for the next call', async () => {
    const { client } = harness({ maxBodyBytes: 1_024 });
    server.script({ status: 200, body: { data: ['y'.repeat(64 * 1024)] } }, { status: 200, body: LAST_PAGE });
    await expect(client.getOrderUpdates({}, within())).rejects.toMatchObject({ kind: 'body-too-large' });
    expect(await client.getOrderUpdates({}, within())).toEqual(LAST_PAGE);
  });

  it("the caller's AbortSignal ends a call mid-request with its reason", async () => {
    server.script(SLOW);
    const controller = new AbortController();
    const reason = new Error('shutting down');
    setTimeout(() => controller.abort(reason), 50);
    const call = harness().client.getOrderUpdates({}, { ...within(), signal: controller.signal });
    await expect(call).rejects.toBe(reason);
  });
});

describe('base URLs the token may go to (checked when the client is built)', () => {
  it.each([
    ['http to a non-loopback host', 'http://partner.example/test-pagination'],
    ['another scheme', 'ftp://127.0.0.1/x'],
    ['userinfo (not echoed)', 'https://user:hunter2@partner.example'],
    ['a query string', 'https://partner.example/v?x=1'],
    ['a bare ?', 'https://partner.example/?'],
    ['a fragment', 'https://partner.example/#x'],
    ['not a URL', 'partner.example'],
  ])('refuses %s', (_name, baseUrl) => {
    const build = () => createPartnerClient({ baseUrl, token: async () => TOKEN });
    expect(build).toThrow(
      expect.objectContaining({ kind: 'invalid-argument', message: expect.stringMatching(/^baseUrl must/) }),
    );
    expect(build).toThrow(expect.objectContaining({ message: expect.not.stringContaining('hunter2') }));
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
