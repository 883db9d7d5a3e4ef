import { describe, expect, it } from 'vitest';
import {
  buildOrderVersionMessage,
  isValidAttributeValue,
  pollCorrelationId,
  runCorrelationId,
} from '../../../functions/core/contract/order-version-message.js';
import {
  collectionOrder,
  priceAdjustmentOrder,
  sampleOrder,
  substitutionOrder,
  toOrder,
  voucherOrder,
} from '../../fixtures/orders.js';
import { contractViolations } from '../../support/contract.js';
import { messageSource } from '../../support/message-source.js';

const valid = (body: unknown) => contractViolations([JSON.stringify(body)]).length === 0;

const source = messageSource();

// The exact bytes, attributes and size of the messages the released code built: golden-messages.test.ts.
describe('order version message contract', () => {
  it('publishes bodies that validate against the published JSON Schema', () => {
    const fixtures = [sampleOrder, collectionOrder, voucherOrder, substitutionOrder, priceAdjustmentOrder];
    const bodies = fixtures.map((raw) => buildOrderVersionMessage(toOrder(raw()), source).body);

    expect(contractViolations(bodies)).toEqual([]);
  });

  it('carries the correlation id and origin in the body, valid against the schema', () => {
    const message = buildOrderVersionMessage(toOrder(sampleOrder()), {
      ...source,
      correlationId: 'reconcile:run-7',
      origin: 'reconcile',
    });
    const body = JSON.parse(message.body);
    expect(body.source).toMatchObject({ correlationId: 'reconcile:run-7', origin: 'reconcile' });
    expect(valid(body)).toBe(true);
    // Within schemaVersion 1 both are optional: a message sent before they existed stays valid.
    delete body.source.correlationId;
    delete body.source.origin;
    expect(valid(body)).toBe(true);
    body.source.origin = 'replay';
    expect(valid(body)).toBe(false);
  });

  it('refuses an empty correlation id (SQS would refuse the empty attribute, failing the whole batch)', () => {
    expect(() => buildOrderVersionMessage(toOrder(sampleOrder()), { ...source, correlationId: '' })).toThrow(
      RangeError,
    );
  });

  it('names poll pages and other runs in the correlation id', () => {
    expect(pollCorrelationId('3f1c-req', 2)).toBe('poll:3f1c-req:2');
    expect(runCorrelationId('reconcile', 'r-1')).toBe('reconcile:r-1');
    expect(runCorrelationId('backfill', 'b-1')).toBe('backfill:b-1');
  });
});

describe('characters SQS refuses', () => {
  it('escapes U+FFFE and U+FFFF in the body so the parsed order is unchanged', () => {
    const raw = sampleOrder();
    const name = 'Odd \uFFFF name \uFFFE';
    raw.items[0] = { ...(raw.items[0] as NonNullable<(typeof raw.items)[0]>), name };
    const message = buildOrderVersionMessage(toOrder(raw), source);
    expect(message.body).not.toMatch(/[\uFFFE\uFFFF]/);
    expect(JSON.parse(message.body).order.items[0].name).toBe(name);
  });
});

describe('message attributes SQS would refuse (issue 11 point 3)', () => {
  // The order as built, then given the vendorId: the parser already replaces lone surrogates, but the
  // builder must be safe for any string it is handed.
  const build = (vendorId: string) =>
    buildOrderVersionMessage({ ...toOrder(sampleOrder()), vendorId }, source);

  it.each([
    ['a control character', 'vendor\u0001x', 'vendor\uFFFDx'],
    ['U+FFFF', 'vendor\uFFFF', 'vendor\uFFFD'],
    ['a lone surrogate', 'vendor\uD800', 'vendor\uFFFD'],
  ])('replaces %s in the attribute with U+FFFD, keeping the body exact', (_name, vendorId, attribute) => {
    const message = build(vendorId);
    expect(message.attributes.vendorId?.StringValue).toBe(attribute);
    expect(isValidAttributeValue(message.attributes.vendorId?.StringValue ?? '')).toBe(true);
    expect(JSON.parse(message.body).order.vendorId).toBe(vendorId);
  });

  it('keeps tab, newline and characters outside the BMP, which SQS accepts', () => {
    const message = buildOrderVersionMessage({ ...toOrder(sampleOrder()), vendorId: 'a\tb\nc 🍕' }, source);
    expect(message.attributes.vendorId?.StringValue).toBe('a\tb\nc 🍕');
    expect(isValidAttributeValue('')).toBe(false);
    expect(isValidAttributeValue('\u0000')).toBe(false);
  });
});
