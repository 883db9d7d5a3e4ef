// The AsyncAPI 3.0 document of every queue's messages (issue 12 point 4) is a valid AsyncAPI 3.0.0
// document, stands alone (its payload generated from the JSON Schema next to it), and says what the code
// really does: the attributes the message builder sets, the correlation ids they carry, the channels. Its SQS
// bindings against the stack (queue settings, output names) are checked in test/infra/stack.test.ts.
import { readFileSync } from 'node:fs';
import specs from '@asyncapi/specs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import { bundledAsyncApi, SCHEMA_PATH } from '../../../tools/contract/bundle-asyncapi.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { asyncapi, headersOf, validateHeaders, validatePayload } from '../../support/asyncapi.js';
import { messageSource } from '../../support/message-source.js';

const SOURCE = messageSource();

/**
 * The specification's own schema (draft-07, Ajv's default dialect). It embeds the draft-07 meta-schema
 * under that meta-schema's id, so Ajv's built-in copy is left out (`meta: false`) for the two not to clash;
 * formats are not what this checks.
 */
const validateAsyncapi = new Ajv({
  allErrors: true,
  strict: false,
  validateFormats: false,
  meta: false,
}).compile(specs.schemas['3.0.0']);

describe('AsyncAPI document', () => {
  it('is valid against the AsyncAPI 3.0.0 JSON Schema, which refuses a broken one', () => {
    const broken = structuredClone(asyncapi);
    broken.operations.publishToOrders.action = 'publish'; // AsyncAPI 2's word; 3.0 says send/receive

    expect(validateAsyncapi(asyncapi)).toBe(true);
    expect(validateAsyncapi.errors ?? []).toEqual([]);
    expect(validateAsyncapi(broken)).toBe(false);
  });

  it('carries its payload inline, generated from the JSON Schema next to it (npx tsx tools/contract/bundle-asyncapi.ts)', () => {
    const document = JSON.stringify(asyncapi);

    expect(asyncapi).toEqual(bundledAsyncApi());
    // Nothing outside the document: every reference is internal.
    expect(document.match(/"\$ref":"[^#]/g)).toBeNull();
    expect(asyncapi.components.messages.orderVersion.payload.properties.order).toEqual({
      $ref: '#/components/schemas/Order',
    });
  });

  it('validates bodies by its own payload schema, as the JSON Schema file does', () => {
    const body = JSON.parse(buildOrderVersionMessage(toOrder(sampleOrder()), SOURCE).body);

    expect(validatePayload(body), JSON.stringify(validatePayload.errors)).toBe(true);
    expect(validatePayload({ ...body, order: { ...body.order, status: 'lost' } })).toBe(false);
    expect(validatePayload({ ...body, order: { ...body.order, total: { amount: 1 } } })).toBe(false);
    // The schema uses only keywords draft-07 knows too (AsyncAPI's default schema format builds on it).
    const draft07 = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8'));
    delete draft07.$schema;
    const validate07 = new Ajv({ strict: false }).compile(draft07);
    expect(validate07(body)).toBe(true);
    expect(validate07({ ...body, order: { ...body.order, status: 'lost' } })).toBe(false);
  });

  it('names every correlation id form the tools emit, quarantine-retry included', () => {
    const forms = [
      'poll:<runId>:<page>',
      'reconcile:<runId>',
      'backfill:<runId>',
      'quarantine-retry:<runId>',
    ];
    const source = readFileSync(new URL('../../../tools/ops/quarantine.ts', import.meta.url), 'utf8');

    expect(source).toContain('correlationId: `quarantine-retry:');
    for (const form of forms) {
      expect(JSON.stringify(asyncapi.components.messages.orderVersion.payload), form).toContain(form);
      expect(asyncapi.components.messages.orderVersion.correlationId.description, form).toContain(form);
    }
  });

  it('describes as headers exactly the attributes the message builder sets', () => {
    const message = buildOrderVersionMessage(toOrder(sampleOrder({ id: 12, version: 3 })), SOURCE);
    const headers = asyncapi.components.messages.orderVersion.headers;

    expect(Object.keys(headers.properties).sort()).toEqual(Object.keys(message.attributes).sort());
    for (const [name, attribute] of Object.entries(message.attributes)) {
      expect(headers.properties[name]['x-sqs-data-type'], name).toBe(attribute.DataType);
    }
    expect(validateHeaders(headersOf(message.attributes))).toBe(true);
    expect(validateHeaders({ ...headersOf(message.attributes), orderId: '12.5' })).toBe(false);
  });

  it('has examples that are valid messages', () => {
    for (const example of asyncapi.components.messages.orderVersion.examples) {
      expect(validatePayload(example.payload), example.name).toBe(true);
      expect(validateHeaders(example.headers), example.name).toBe(true);
      expect(example.headers.correlationId).toBe(example.payload.source.correlationId);
    }
  });

  it('has a channel for every queue the stack creates, the subscriber ones parameterised', () => {
    expect(Object.keys(asyncapi.channels).sort()).toEqual([
      'downstream',
      'downstreamDeadLetter',
      'orders',
      'ordersDeadLetter',
    ]);
    expect(asyncapi.channels.downstream.address).toBe('downstream-{subscriber}');
    expect(Object.keys(asyncapi.channels.downstream.parameters)).toEqual(['subscriber']);
    expect(asyncapi.channels.downstreamDeadLetter.address).toBe('downstream-{subscriber}-dead-letter');
    for (const channel of Object.values<{ messages: unknown }>(asyncapi.channels)) {
      expect(channel.messages).toEqual({ orderVersion: { $ref: '#/components/messages/orderVersion' } });
    }
  });
});
