// The partner client against a partner that answers badly, over real HTTP (scripted server on
// 127.0.0.1:0): a 200 body that is not JSON is asked again and, if it persists, never reaches an error
// message or a log line (the give-up's cause describes it by size, type and hash), and a page
// too large for the body limit is a ResponseFormatError like any oversized answer (no smaller pageSize).

import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPartnerClient, type PartnerClientOptions } from '../../functions/core/partner/client.js';
import { ResponseFormatError, RetryLaterError } from '../../functions/core/partner/errors.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

const TOKEN = 'tok-hardening-7c1d';

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

function client(overrides: Partial<PartnerClientOptions> = {}) {
  return createPartnerClient({
    baseUrl: server.url,
    token: async () => TOKEN,
    dispatcher: agent,
    sleep: async () => undefined,
    ...overrides,
  });
}

const within = (ms = 10_000) => ({ deadline: Date.now() + ms });

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
}

/** Everything a log line could be built from: message, stack, cause chain, inspect and JSON forms. */
function renderings(err: Error): string[] {
  const texts = [err.message, String(err), err.stack ?? '', inspect(err, { depth: 10 }), JSON.stringify(err)];
  let cause: unknown = err.cause;
  while (cause instanceof Error) {
    texts.push(cause.message, cause.stack ?? '');
    cause = cause.cause;
  }
  return texts;
}

/** A page whose records are of known size: `count` orders of about `bytesEach` bytes. */
function pageOf(count: number, bytesEach: number) {
  return {
    hasMore: true,
    nextPageId: 'cursor-after',
    data: Array.from({ length: count }, (_, i) => ({ id: i + 1, version: 1, note: 'n'.repeat(bytesEach) })),
  };
}

/** Answers /v1/orderUpdates like a partner whose records are ~1 KB each: the page grows with pageSize. */
function pagesSizedByPageSize(bytesEach = 1_000) {
  server.setFallback((req) => {
    const pageSize = Number(req.query.get('pageSize') ?? '10');
    return { status: 200, body: pageOf(pageSize, bytesEach) };
  });
}

describe('a 200 answer that is not JSON (customer data in the body)', () => {
  const customerText = 'Jane Example, 12 Private Road, card ending 4242';
  const bodies: Array<[string, string, string]> = [
    ['an HTML error page', 'text/html; charset=utf-8', `<html><body>${customerText}</body></html>`],
    [
      'JSON cut off mid-record',
      'application/json',
      `{"hasMore":true,"data":[{"id":1,"customer":"${customerText}`,
    ],
    ['text with the token echoed', 'text/plain', `${customerText} Bearer ${TOKEN}`],
  ];

  it.each(bodies)(
    '%s on every attempt: RetryLaterError whose cause carries its length, content type and hash, and no body text',
    async (_name, type, text) => {
      server.setFallback({ status: 200, headers: { 'content-type': type }, body: text });

      const err = await rejectionOf(client().getOrderUpdates({ pageSize: 10 }, within()));

      expect(err).toBeInstanceOf(RetryLaterError);
      expect(err).toMatchObject({ reason: 'unreadable', statusCode: 200 });
      expect(err.cause).toBeInstanceOf(ResponseFormatError);
      const expectedHash = createHash('sha256').update(text).digest('hex').slice(0, 16);
      expect(err.cause).toMatchObject({
        code: 'ERR_PARTNER_RESPONSE_FORMAT',
        statusCode: 200,
        problem: 'not-json',
        body: { bytes: Buffer.byteLength(text), contentType: type, sha256: expectedHash },
      });
      expect(err.message).toContain(`${Buffer.byteLength(text)} bytes`);
      expect(err.message).toContain(expectedHash);
      for (const rendered of renderings(err)) {
        expect(rendered).not.toContain('Jane Example');
        expect(rendered).not.toContain('Private Road');
        expect(rendered).not.toContain(TOKEN);
      }
    },
  );

  it('getOrder: the same, for an order body', async () => {
    server.setFallback({
      status: 200,
      headers: { 'content-type': 'text/html' },
      body: `<p>${customerText}</p>`,
    });
    const err = await rejectionOf(client().getOrder(7, within()));
    expect(err).toMatchObject({ reason: 'unreadable' });
    expect(err.cause).toMatchObject({ problem: 'not-json', body: { contentType: 'text/html' } });
    for (const rendered of renderings(err)) expect(rendered).not.toContain('Jane Example');
  });
});

describe('a page over the body-size limit', () => {
  it('→ ResponseFormatError (body-too-large) naming the limit, after one request, with no smaller pageSize', async () => {
    pagesSizedByPageSize();
    const err = await rejectionOf(
      client({ maxBodyBytes: 30_000 }).getOrderUpdates({ pageId: 'cursor-7', pageSize: 100 }, within()),
    );

    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err).toMatchObject({
      problem: 'body-too-large',
      code: 'ERR_PARTNER_RESPONSE_FORMAT',
      statusCode: 200,
    });
    expect(err.message).toContain('30000');
    expect(server.requests.map((r) => [r.query.get('pageId'), r.query.get('pageSize')])).toEqual([
      ['cursor-7', '100'],
    ]);
  });

  it('a page within the limit is returned whole', async () => {
    pagesSizedByPageSize();
    const page = await client({ maxBodyBytes: 30_000 }).getOrderUpdates(
      { pageId: 'cursor-7', pageSize: 25 },
      within(),
    );
    expect(page.data).toHaveLength(25);
    expect(page.nextPageId).toBe('cursor-after');
  });
});
