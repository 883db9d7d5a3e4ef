import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  buildOrderVersionMessage,
  SCHEMA_VERSION,
} from '../../../functions/core/contract/order-version-message.js';
import {
  collectionOrder,
  priceAdjustmentOrder,
  sampleOrder,
  substitutionOrder,
  toOrder,
  voucherOrder,
} from '../../fixtures/orders.js';

const schema = JSON.parse(
  readFileSync(
    new URL('../../../functions/core/contract/order-version-message.schema.json', import.meta.url),
    'utf8',
  ),
);
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(schema);
const source = { feedId: 'feed-a', pageId: 'cursor-1', fetchedAt: '2024-05-01T08:00:00.000Z', findings: [] };

describe('order version message contract', () => {
  it('publishes bodies that validate against the published JSON Schema', () => {
    for (const raw of [
      sampleOrder(),
      collectionOrder(),
      voucherOrder(),
      substitutionOrder(),
      priceAdjustmentOrder(),
    ]) {
      const message = buildOrderVersionMessage(toOrder(raw), source);
      const valid = validate(JSON.parse(message.body));
      expect(validate.errors ?? []).toEqual([]);
      expect(valid).toBe(true);
    }
  });

  it('carries orderId, version, vendorId and status as message attributes', () => {
    const message = buildOrderVersionMessage(toOrder(sampleOrder({ id: 77, version: 4 })), source);
    expect(message.attributes).toEqual({
      orderId: { DataType: 'Number', StringValue: '77' },
      version: { DataType: 'Number', StringValue: '4' },
      vendorId: { DataType: 'String', StringValue: 'vendor-1' },
      status: { DataType: 'String', StringValue: 'accepted' },
      schemaVersion: { DataType: 'Number', StringValue: String(SCHEMA_VERSION) },
    });
  });

  it('counts body and attributes toward the size SQS enforces', () => {
    const message = buildOrderVersionMessage(toOrder(sampleOrder()), source);
    const attributeBytes = Object.entries(message.attributes).reduce(
      (sum, [name, value]) => sum + name.length + value.DataType.length + value.StringValue.length,
      0,
    );
    expect(message.sizeBytes).toBe(Buffer.byteLength(message.body) + attributeBytes);
  });

  it('rejects a body the schema does not describe', () => {
    const body = JSON.parse(buildOrderVersionMessage(toOrder(sampleOrder()), source).body);
    body.order.placedAt = 1714550400000;
    expect(validate(body)).toBe(false);
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
