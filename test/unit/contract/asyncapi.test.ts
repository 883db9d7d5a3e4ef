// The AsyncAPI 3.0 document of every queue's messages (issue 12 point 4) is a valid AsyncAPI 3.0.0
// document, points at the JSON Schema next to it, and says what the code and the stack really do: the
// attributes the message builder sets, the queues the stack creates and their settings.
import { readFileSync } from 'node:fs';
import specs from '@asyncapi/specs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import { parseConfig } from '../../../infra/config.js';
import { ordersQueueVisibilityTimeout } from '../../../infra/constructs/consumer.js';
import { DEAD_LETTER_RETENTION, QUEUE_RETENTION } from '../../../infra/constructs/order-queues.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import {
  asyncapi,
  headersOf,
  payloadSchemaUrl,
  validateHeaders,
  validatePayload,
} from '../../support/asyncapi.js';

const SOURCE = {
  feedId: 'f',
  pageId: null,
  fetchedAt: '2024-05-01T08:00:00.000Z',
  findings: [],
  correlationId: 'poll:req-1:1',
  origin: 'poll' as const,
};

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
  it('is valid against the AsyncAPI 3.0.0 JSON Schema', () => {
    const validate = validateAsyncapi;
    const valid = validate(asyncapi);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('refuses a broken document (the validation above can fail)', () => {
    const validate = validateAsyncapi;
    const broken = structuredClone(asyncapi);
    broken.operations.publishToOrders.action = 'publish'; // AsyncAPI 2's word; 3.0 says send/receive
    expect(validate(broken)).toBe(false);
  });

  it('takes the message payload from the JSON Schema next to it', () => {
    expect(asyncapi.components.messages.orderVersion.payload).toEqual({
      $ref: './order-version-message.schema.json',
    });
    expect(payloadSchemaUrl.pathname).toMatch(
      /functions\/core\/contract\/order-version-message\.schema\.json$/,
    );
    // The schema uses only keywords draft-07 knows too (AsyncAPI's default schema format builds on it).
    const draft07 = JSON.parse(readFileSync(payloadSchemaUrl, 'utf8'));
    delete draft07.$schema;
    const validate07 = new Ajv({ strict: false }).compile(draft07);
    const body = JSON.parse(buildOrderVersionMessage(toOrder(sampleOrder()), SOURCE).body);
    expect(validate07(body)).toBe(true);
    expect(validate07({ ...body, order: { ...body.order, status: 'lost' } })).toBe(false);
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

  it('shows the stack’s queue settings (at the configuration’s defaults) in its SQS bindings', () => {
    const config = parseConfig({ partnerBaseUrl: 'https://partner.example', tokenParameterName: '/token' });
    for (const name of ['orders', 'downstream']) {
      const { queue, deadLetterQueue } = asyncapi.channels[name].bindings.sqs;
      expect(queue, name).toMatchObject({
        fifoQueue: false,
        visibilityTimeout: ordersQueueVisibilityTimeout(config).toSeconds(),
        messageRetentionPeriod: QUEUE_RETENTION.toSeconds(),
        redrivePolicy: { maxReceiveCount: config.maxReceiveCount },
      });
      expect(queue.redrivePolicy.deadLetterQueue.name).toBe(deadLetterQueue.name);
      expect(deadLetterQueue.messageRetentionPeriod, name).toBe(DEAD_LETTER_RETENTION.toSeconds());
    }
  });
});
