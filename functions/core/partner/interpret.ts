// Interpretation: what a final answer (any status but 429 and 5xx, which the retry loop handles) means.
// 200 → a Page or an Order (checked for shape only; records stay raw for parseOrder); 401, 400, 404
// and the rest → typed errors. Pure: a status, headers and a body in, a value or an error out.

import { type Int64, parseJsonExact } from '../model/int64.js';
import {
  AuthenticationError,
  BadRequestError,
  CursorExpiredError,
  OrderNotFoundError,
  ResponseFormatError,
  UnexpectedStatusError,
} from './errors.js';
import { describeFingerprint, fingerprint, redact, truncate } from './safe-text.js';
import { type HttpAnswer, headerValue } from './transport.js';
import type { RawPage } from './types.js';

/** What was asked for, as far as the meaning of the answer depends on it. */
export type Resource =
  | {
      kind: 'orderUpdates';
      /** `GET /prefix/v1/orderUpdates`, for messages. */
      label: string;
      /** A 404 `pageId not found` means an expired cursor only when a cursor was sent. */
      sentPageId: boolean;
    }
  | { kind: 'order'; label: string; orderId: Int64 };

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

/**
 * A 200 body is customer data: when it is not JSON, the error describes it (size, content type, hash)
 * and quotes none of it. No cause either: V8's SyntaxError message quotes the start of the text.
 */
function parseJson(resource: Resource, answer: HttpAnswer, token: string): unknown {
  try {
    // Exact: an integer beyond 2^53 (the spec's ids, versions and amounts are int64) becomes a bigint.
    return parseJsonExact(answer.body.toString('utf8'));
  } catch {
    const body = fingerprint(answer.body, headerValue(answer.headers, 'content-type'), token);
    throw new ResponseFormatError(
      `${resource.label}: ${answer.status} body is not valid JSON (${describeFingerprint(body)})`,
      { statusCode: answer.status, problem: 'not-json', body },
    );
  }
}

/** Checks the Page envelope only; records stay `unknown` for parseOrder. */
function toRawPage(resource: Resource, value: unknown, status: number): RawPage {
  const fail = (what: string) =>
    new ResponseFormatError(`${resource.label}: response is not a Page: ${what}`, { statusCode: status });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail('not a JSON object');
  const page = value as Record<string, unknown>;
  if (typeof page.hasMore !== 'boolean') throw fail('hasMore is not a boolean');
  if (!Array.isArray(page.data)) throw fail('data is not an array');
  if (page.nextPageId !== undefined && typeof page.nextPageId !== 'string')
    throw fail('nextPageId is not a string');
  // Pagination rule 1: more pages without a cursor to reach them cannot be followed.
  // hasMore true without nextPageId breaks pagination rule 1, but the page's data is good: the poller keeps
  // it and ends the run without guessing a cursor (poll-feed.ts), so it is not an error here.
  const raw: RawPage = { hasMore: page.hasMore, data: page.data };
  if (page.nextPageId !== undefined) raw.nextPageId = page.nextPageId;
  return raw;
}

/** Maps a final answer to a Page (orderUpdates) or a raw Order (order), or throws its typed error. */
export function interpret(resource: Resource, answer: HttpAnswer, token: string): unknown {
  const { status } = answer;
  if (status === 200) {
    if (answer.overflow) {
      throw new ResponseFormatError(
        `${resource.label}: response body exceeds the ${answer.limit}-byte limit`,
        { statusCode: status, problem: 'body-too-large' },
      );
    }
    const value = parseJson(resource, answer, token);
    if (resource.kind === 'orderUpdates') return toRawPage(resource, value, status);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ResponseFormatError(`${resource.label}: response is not an Order object`, {
        statusCode: status,
      });
    }
    return value;
  }
  const message = serverMessage(answer.body, token);
  if (status === 401) throw new AuthenticationError();
  if (status === 400) throw new BadRequestError(message);
  if (status === 404) {
    if (resource.kind === 'order') throw new OrderNotFoundError(resource.orderId, message);
    // Pagination rule 4. Matched loosely (case, spaces) but only when a cursor was actually sent.
    if (resource.sentPageId && message?.trim().toLowerCase() === 'pageid not found')
      throw new CursorExpiredError();
  }
  throw new UnexpectedStatusError(status, message);
}

/** interpret() for GET /v1/orderUpdates. */
export function interpretPage(
  resource: Extract<Resource, { kind: 'orderUpdates' }>,
  answer: HttpAnswer,
  token: string,
): RawPage {
  return interpret(resource, answer, token) as RawPage;
}
