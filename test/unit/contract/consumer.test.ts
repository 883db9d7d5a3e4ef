// The downstream consumer module (issue 12 point 4): parse and validate a message with errors that name
// the field, read int64 values exactly, tolerate additive fields, and build the version-guarded put.

import {
  conditionalPut,
  ItemTooLargeError,
  OrderVersionMessageError,
  parseOrderVersionMessage,
} from 'order-feed-ingester/contract';
import { describe, expect, it } from 'vitest';
import {
  buildOrderVersionMessage,
  type MessageSource,
} from '../../../functions/core/contract/order-version-message.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';

const SOURCE: MessageSource = {
  feedId: 'partner-feed',
  pageId: 'cursor-7',
  fetchedAt: '2024-05-01T08:00:00.000Z',
  findings: [{ code: 'unknown-field', detail: 'loyaltyTier' }],
  correlationId: 'poll:req-1:2',
  origin: 'poll',
};
const body = (overrides: Parameters<typeof sampleOrder>[0] = {}) =>
  buildOrderVersionMessage(toOrder(sampleOrder(overrides)), SOURCE).body;

/** The body with one change made to its parsed JSON. */
// biome-ignore lint/suspicious/noExplicitAny: the test edits parsed JSON of any shape
function edited(change: (message: Record<string, any>) => void): string {
  const message = JSON.parse(body());
  change(message);
  return JSON.stringify(message);
}

function errorOf(text: string): OrderVersionMessageError {
  try {
    parseOrderVersionMessage(text);
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

  it.each([
    ['not JSON', '{"schemaVersion":', '', /body is not JSON/],
    ['not an object', '[1]', '', /expected an object, got an array/],
    [
      'another schemaVersion',
      edited((m) => {
        m.schemaVersion = 2;
      }),
      'schemaVersion',
      /expected 1, got number 2/,
    ],
    ['no source', edited((m) => delete m.source), 'source', /expected an object, got nothing/],
    [
      'an empty feedId',
      edited((m) => {
        m.source.feedId = '';
      }),
      'source.feedId',
      /non-empty string/,
    ],
    [
      'a local fetchedAt',
      edited((m) => {
        m.source.fetchedAt = '2024-05-01T08:00:00';
      }),
      'source.fetchedAt',
      /UTC timestamp/,
    ],
    [
      'findings not a list',
      edited((m) => {
        m.source.findings = {};
      }),
      'source.findings',
      /expected an array/,
    ],
    [
      'a finding without detail',
      edited((m) => {
        m.source.findings = [{ code: 'x' }];
      }),
      'source.findings[0].detail',
      /expected a string/,
    ],
    [
      'an unknown origin',
      edited((m) => {
        m.source.origin = 'replay';
      }),
      'source.origin',
      /poll, reconcile, backfill/,
    ],
    [
      'an empty correlationId',
      edited((m) => {
        m.source.correlationId = '';
      }),
      'source.correlationId',
      /non-empty/,
    ],
    [
      'an amount that is text',
      edited((m) => {
        m.order.total.amount = 'ten';
      }),
      'order',
      /total\.amount/,
    ],
    [
      'an unknown status',
      edited((m) => {
        m.order.status = 'refunded';
      }),
      'order',
      /refunded/,
    ],
    ['no order id', edited((m) => delete m.order.id), 'order', /missing required field: id/],
  ])('refuses %s, naming where', (_case, text, path, problem) => {
    const error = errorOf(text);
    expect(error.path).toBe(path);
    expect(error.message).toMatch(problem);
    expect(error.code).toBe('ERR_ORDER_VERSION_MESSAGE');
  });
});

describe('conditionalPut', () => {
  const message = parseOrderVersionMessage(body({ id: 5, version: 3 }));

  it('writes the order under its key only if none is stored or the stored version is lower', () => {
    const input = conditionalPut({ tableName: 't', message });

    expect(input.ConditionExpression).toBe('attribute_not_exists(#key) OR #version < :version');
    expect(input.ExpressionAttributeNames).toEqual({ '#key': 'orderId', '#version': 'version' });
    expect(input.ExpressionAttributeValues).toEqual({ ':version': { N: '3' } });
    expect(input.Item).toMatchObject({
      orderId: { N: '5' },
      version: { N: '3' },
      status: { S: 'accepted' },
      correlationId: { S: 'poll:req-1:2' },
    });
  });

  it('writes int64 values with their exact digits', () => {
    const big = parseOrderVersionMessage(
      buildOrderVersionMessage(
        { ...toOrder(sampleOrder()), id: 2n ** 63n - 1n, version: 2n ** 53n + 1n },
        SOURCE,
      ).body,
    );

    const input = conditionalPut({ tableName: 't', message: big, keyAttribute: 'pk' });

    expect(input.Item?.pk).toEqual({ N: '9223372036854775807' });
    expect(input.ExpressionAttributeValues).toEqual({ ':version': { N: '9007199254740993' } });
  });

  it('stores a projection, but always the key and the version it compares', () => {
    const input = conditionalPut({
      tableName: 't',
      message,
      item: (m) => ({ status: m.order.status, version: 'overridden', orderId: 'overridden' }),
    });

    expect(input.Item).toEqual({ status: { S: 'accepted' }, orderId: { N: '5' }, version: { N: '3' } });
  });

  it('refuses an item over DynamoDB’s 400 KB before any call', () => {
    expect(() =>
      conditionalPut({ tableName: 't', message, item: () => ({ blob: 'x'.repeat(410 * 1024) }) }),
    ).toThrow(ItemTooLargeError);
  });
});
