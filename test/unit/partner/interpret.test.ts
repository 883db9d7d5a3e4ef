// Interpretation of a final answer (status, headers, body) without a server: every status the client
// does not retry maps to a value or to its typed error.
import { describe, expect, it } from 'vitest';
import {
  type HttpAnswer,
  interpret,
  MAX_PAGE_ID_BYTES,
  type Resource,
} from '../../../functions/core/partner/client.js';
import {
  AuthenticationError,
  BadRequestError,
  CursorExpiredError,
  OrderNotFoundError,
  ResponseFormatError,
  UnexpectedStatusError,
} from '../../../functions/core/partner/errors.js';

const TOKEN = 'tok-unit-SECRET';
const FEED: Resource = { kind: 'orderUpdates', label: 'GET /v1/orderUpdates', sentPageId: true };
const FIRST_PAGE_REQUEST: Resource = { ...FEED, sentPageId: false };
const ORDER: Resource = { kind: 'order', label: 'GET /v1/orders/42', orderId: 42 };

function answer(status: number, body: unknown, extra: Partial<HttpAnswer> = {}): HttpAnswer {
  const bytes = Buffer.isBuffer(body)
    ? body
    : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: bytes,
    overflow: false,
    limit: 1_024,
    ...extra,
  };
}

function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected interpret to throw');
}

describe('200 answers', () => {
  it('returns the page envelope with its records left raw', () => {
    const page = { hasMore: true, data: [{ id: 1, anything: 'kept' }], nextPageId: 'c2' };
    expect(interpret(FEED, answer(200, page), TOKEN)).toEqual(page);
  });

  it('drops envelope fields the spec does not define', () => {
    expect(interpret(FEED, answer(200, { hasMore: false, data: [], extra: 1 }), TOKEN)).toEqual({
      hasMore: false,
      data: [],
    });
  });

  it('returns an order object as is', () => {
    expect(interpret(ORDER, answer(200, { id: 42, version: 3 }), TOKEN)).toEqual({ id: 42, version: 3 });
  });

  it('an order that is not an object → ResponseFormatError', () => {
    expect(thrown(() => interpret(ORDER, answer(200, [1]), TOKEN))).toBeInstanceOf(ResponseFormatError);
  });

  it('a body that is not JSON → ResponseFormatError describing it by size, type and hash only', () => {
    const body = answer(200, '<p>Jane Example</p>', { headers: { 'content-type': 'text/html' } });
    const err = thrown(() => interpret(FEED, body, TOKEN));
    expect(err).toMatchObject({
      problem: 'not-json',
      body: { bytes: 19, contentType: 'text/html', sha256: expect.stringMatching(/^[0-9a-f]{16}$/) },
    });
    expect(err.message).not.toContain('Jane');
    expect(err.cause).toBeUndefined();
  });

  it('a nextPageId over MAX_PAGE_ID_BYTES (UTF-8 bytes) → ResponseFormatError; one at the limit passes', () => {
    const page = (nextPageId: string) => answer(200, { hasMore: true, data: [], nextPageId });
    const atLimit = 'é'.repeat(MAX_PAGE_ID_BYTES / 2);
    expect(interpret(FEED, page(atLimit), TOKEN)).toMatchObject({ nextPageId: atLimit });
    const err = thrown(() => interpret(FEED, page(`${atLimit}x`), TOKEN));
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err).toMatchObject({ problem: 'wrong-shape', statusCode: 200 });
    expect(err.message).toContain(
      `nextPageId of ${MAX_PAGE_ID_BYTES + 1} bytes exceeds the ${MAX_PAGE_ID_BYTES}-byte limit`,
    );
  });

  it('a body cut at the limit → ResponseFormatError naming the limit', () => {
    const err = thrown(() => interpret(FEED, answer(200, '', { overflow: true, limit: 4_096 }), TOKEN));
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err).toMatchObject({
      code: 'ERR_PARTNER_RESPONSE_FORMAT',
      statusCode: 200,
      problem: 'body-too-large',
    });
    expect(err.message).toContain('4096');
  });
});

describe('error statuses', () => {
  it('401 → AuthenticationError', () => {
    expect(thrown(() => interpret(FEED, answer(401, { message: 'Unauthorized' }), TOKEN))).toBeInstanceOf(
      AuthenticationError,
    );
  });

  it("400 → BadRequestError with the server's message, token redacted", () => {
    const err = thrown(() => interpret(ORDER, answer(400, { message: `bad ${TOKEN}` }), TOKEN));
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).serverMessage).toBe('bad [redacted]');
  });

  it('404 `pageId not found` is an expired cursor only when a cursor was sent', () => {
    const notFound = answer(404, { message: ' PageId Not Found ' });
    expect(thrown(() => interpret(FEED, notFound, TOKEN))).toBeInstanceOf(CursorExpiredError);
    expect(thrown(() => interpret(FIRST_PAGE_REQUEST, notFound, TOKEN))).toBeInstanceOf(
      UnexpectedStatusError,
    );
  });

  it('404 on an order → OrderNotFoundError carrying the id', () => {
    const err = thrown(() => interpret(ORDER, answer(404, { message: 'no such order' }), TOKEN));
    expect(err).toBeInstanceOf(OrderNotFoundError);
    expect(err).toMatchObject({ orderId: 42, code: 'ERR_PARTNER_NOT_FOUND' });
  });

  it('any other status → UnexpectedStatusError; a non-JSON error body carries no message', () => {
    const err = thrown(() => interpret(FEED, answer(403, '<html>forbidden</html>'), TOKEN));
    expect(err).toBeInstanceOf(UnexpectedStatusError);
    expect(err.message).toBe('partner API answered 403');
  });
});
