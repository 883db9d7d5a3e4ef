// The downstream consumer module (issue 12 point 4): parse and validate a message with errors that name
// the field, read int64 values exactly, tolerate additive fields, and build the version-guarded put.

import {
  conditionalPut,
  ItemTooLargeError,
  OrderVersionMessageError,
  parseOrderVersionMessage,
} from 'order-feed-ingester/contract';
import { describe, expect, it } from 'vitest';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { messageSource } from '../../support/message-source.js';

const SOURCE = messageSource({ findings: [{ code: 'unknown-field', detail: 'loyaltyTier' }] });
const body = (overrides: Parameters<typeof sampleOrder>[0] = {}) =>
  buildOrderVersionMessage(toOrder(sampleOrder(overrides)), SOURCE).body;

/** The body with one change made to its parsed JSON. */
// biome-ignore lint/suspicious/noExplicitAny: the test edits parsed JSON of any shape
function edited(change: (message: Record<string, any>) => void): string {
  const message = JSON.parse(body());
  change(message);
  return JSON.stringify(message);
}

/** `text` is what a plain-JavaScript caller may pass: a string, or by mistake an object. */
function errorOf(text: unknown): OrderVersionMessageError {
  try {
    parseOrderVersionMessage(text as string);
  } catch (error) {
    if (error instanceof OrderVersionMessageError) return error;
    throw error;
  }
  throw new Error('expected the body to be refused');
}

describe('parseOrderVersionMessage', () => {
  it('returns the order and its source as the poller sent them', () => {
    const order = toOrder(sampleOrder({ id: 77, version: 4 }));

    const message = parseOrderVersionMessage(buildOrderVersionMessage(order, SOURCE).body);

    expect(message).toEqual({ schemaVersion: 1, order, source: SOURCE });
  });

  it('reads int64 ids and versions beyond 2^53 exactly, as bigints', () => {
    const id = 2n ** 63n - 1n;
    const order = { ...toOrder(sampleOrder()), id, version: 2n ** 53n + 1n };

    const message = parseOrderVersionMessage(buildOrderVersionMessage(order, SOURCE).body);

    expect(message.order.id).toBe(id);
    expect(message.order.version).toBe(9007199254740993n);
  });

  it('ignores fields it does not know (fields are added within a schemaVersion)', () => {
    const text = edited((message) => {
      message.source.traceId = 'x';
      message.order.loyaltyTier = 'gold';
      message.routing = { region: 'eu' };
    });

    const message = parseOrderVersionMessage(text);

    expect(message.source).toEqual(SOURCE);
    expect(message.order).not.toHaveProperty('loyaltyTier');
    expect(message).not.toHaveProperty('routing');
  });

  it('reads a message sent before correlation ids existed', () => {
    const text = edited((message) => {
      delete message.source.correlationId;
      delete message.source.origin;
    });
    const { correlationId, origin, ...rest } = SOURCE;

    expect(parseOrderVersionMessage(text).source).toEqual(rest);
  });

  /** The body with the field at `path` (dotted) set to `value`, or deleted when `value` is undefined. */
  const set = (path: string, value?: unknown) =>
    edited((message) => {
      const keys = path.split('.');
      const last = keys.pop() as string;
      const parent = keys.reduce((node, key) => node[key], message);
      if (value === undefined) delete parent[last];
      else parent[last] = value;
    });

  it.each([
    ['not JSON', '{"schemaVersion":', '', /body is not JSON/],
    ['not an object', '[1]', '', /expected an object, got an array/],
    ['another schemaVersion', set('schemaVersion', 2), 'schemaVersion', /expected 1, got number 2/],
    ['no source', set('source'), 'source', /expected an object, got nothing/],
    ['an empty feedId', set('source.feedId', ''), 'source.feedId', /non-empty string/],
    [
      'a local fetchedAt',
      set('source.fetchedAt', '2024-05-01T08:00:00'),
      'source.fetchedAt',
      /UTC timestamp/,
    ],
    ['findings not a list', set('source.findings', {}), 'source.findings', /expected an array/],
    [
      'a finding without detail',
      set('source.findings', [{ code: 'x' }]),
      'source.findings[0].detail',
      /expected a string/,
    ],
    ['an unknown origin', set('source.origin', 'replay'), 'source.origin', /poll, reconcile, backfill/],
    ['an empty correlationId', set('source.correlationId', ''), 'source.correlationId', /non-empty/],
    ['an amount that is text', set('order.total.amount', 'ten'), 'order', /total\.amount/],
    ['an unknown status', set('order.status', 'refunded'), 'order', /refunded/],
    ['no order id', set('order.id'), 'order', /missing required field: id/],
    ['the whole SQS record', { messageId: 'm-1', body: '{}' }, '', /got an SQS record: pass record\.body/],
    ['a body already parsed', { schemaVersion: 1 }, '', /as a string \(record\.body.*got object$/],
  ])('refuses %s, naming where', (_case, text, path, problem) => {
    const error = errorOf(text);
    expect(error.path).toBe(path);
    expect(error.message).toMatch(problem);
    expect(error.code).toBe('ERR_ORDER_VERSION_MESSAGE');
  });
});

describe('conditionalPut', () => {
  // What the put does to a table (only newer versions written, int64 exact, the table's own key and a
  // projection) is shown against moto in test/integration/contract-consumer.test.ts.
  it('refuses an item over DynamoDB’s 400 KB before any call', () => {
    const message = parseOrderVersionMessage(body({ id: 5, version: 3 }));

    expect(() =>
      conditionalPut({ tableName: 't', message, item: () => ({ blob: 'x'.repeat(410 * 1024) }) }),
    ).toThrow(ItemTooLargeError);
  });
});
