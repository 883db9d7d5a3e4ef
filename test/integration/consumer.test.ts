// The consumer Lambda against real emulated SQS and DynamoDB: exact under duplicates, reordering,
// crashes mid-batch, concurrent consumers, and poison messages.
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import type { OutgoingMessage } from '../../functions/core/contract/order-version-message.js';
import {
  type AwsClients,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  scanOrders,
} from '../../tools/harness/pipeline.js';
import { sampleOrder, toOrder } from '../fixtures/orders.js';
import { type Handlers, handlersFor, pipelineOnMoto } from '../support/handlers.js';
import { messageOf } from '../support/messages.js';
import { readLedger, receiveAll } from '../support/pipeline.js';

const pipeline = pipelineOnMoto({ maxReceiveCount: 3 });
let aws: AwsClients;
let resources: PipelineResources;
let handlers: Handlers;

beforeEach(() => {
  ({ aws, resources } = pipeline);
  handlers = handlersFor(aws, pipelineEnv(resources, 'http://127.0.0.1:1'));
});

/** Three orders over several versions: a cancelled sale, an accepted sale whose total drops, a rejection. */
function history(): OutgoingMessage[] {
  const versions = [
    { id: 1, version: 1, status: 'placed', vendorId: 'v-1', amount: 1000 },
    { id: 1, version: 2, status: 'accepted', vendorId: 'v-1', amount: 1000 },
    { id: 1, version: 3, status: 'cancelled', vendorId: 'v-1', amount: 1000 },
    { id: 2, version: 1, status: 'placed', vendorId: 'v-1', amount: 2500 },
    { id: 2, version: 2, status: 'accepted', vendorId: 'v-1', amount: 2500 },
    { id: 2, version: 3, status: 'accepted', vendorId: 'v-1', amount: 2100 },
    { id: 3, version: 1, status: 'placed', vendorId: 'v-2', amount: 700 },
    { id: 3, version: 2, status: 'rejected', vendorId: 'v-2', amount: 700 },
    { id: 4, version: 5, status: 'accepted', vendorId: 'v-2', amount: 900 },
  ];
  return versions.map(({ id, version, status, vendorId, amount }) => {
    const raw = sampleOrder({ id, version, status, vendorId });
    raw.total = { amount, currency: 'EUR' };
    raw.customerPayments = [
      { type: 'online', collectedBy: 'platform', payment: { amount, currency: 'EUR' } },
    ];
    return messageOf(toOrder(raw));
  });
}

const EXPECTED_LEDGER = [
  { vendorId: 'v-1', currency: 'EUR', count: 1, amount: 2100 },
  { vendorId: 'v-2', currency: 'EUR', count: 1, amount: 900 },
];

async function publish(messages: OutgoingMessage[]) {
  await new SqsFanoutPublisher(aws.sqs, [resources.ordersQueueUrl]).publish(messages);
}

async function finalState() {
  const orders = await scanOrders(aws, resources.ordersTable);
  return {
    versions: Object.fromEntries([...orders].map(([id, item]) => [id, item.version])),
    items: orders,
    ledger: await readLedger(aws, resources.ordersTable),
  };
}

describe('consumer Lambda', () => {
  it('keeps the latest version and the sales ledger under duplicates, reverse order and two consumers at once', async () => {
    await publish([
      ...history(),
      ...history().reverse(),
      ...history(),
      messageOf(toOrder(sampleOrder({ id: 55, version: 2 }))),
    ]);

    const drained = await Promise.all([
      drainQueue(aws, resources.ordersQueueUrl, handlers, { batchSize: 3 }),
      drainQueue(aws, resources.ordersQueueUrl, handlers, { batchSize: 1 }),
    ]);

    const state = await finalState();
    expect(drained[0].succeeded + drained[1].succeeded).toBe(28);
    expect(state.versions).toEqual({ 1: 3, 2: 3, 3: 2, 4: 5, 55: 2 });
    expect(state.ledger).toEqual([
      ...EXPECTED_LEDGER,
      { vendorId: 'vendor-1', currency: 'EUR', count: 1, amount: 3098 },
    ]);
    expect(state.items.get(2)).toMatchObject({
      status: 'accepted',
      total: { amount: 2100, currency: 'EUR' },
    });
    // Stored as normalised, with the API's field names and timestamps in toISOString form.
    expect(state.items.get(55)).toMatchObject({
      orderId: 55,
      id: 55,
      version: 2,
      latestVersion: true,
      vendorId: 'vendor-1',
      status: 'accepted',
      type: 'delivery',
      placedAt: '2024-05-01T08:00:00.000Z',
      deliveryProvider: 'courier_partner',
      serviceFee: { amount: 99, currency: 'EUR' },
      saleKey: 'vendor-1#EUR',
      saleAmount: 3098,
    });
    expect(state.items.get(55)?.items).toEqual(toOrder(sampleOrder({ id: 55, version: 2 })).items);
    expect(state.items.get(55)?.cancelledAt).toBeUndefined();
  });

  it('fails only the poison message, which reaches the dead-letter queue after maxReceiveCount receives', async () => {
    await publish(history().slice(0, 4));
    await aws.sqs.send(
      new SendMessageCommand({ QueueUrl: resources.ordersQueueUrl, MessageBody: '{"not":"an order"}' }),
    );

    const drained = await drainQueue(aws, resources.ordersQueueUrl, handlers);

    expect(drained.succeeded).toBe(4);
    expect(drained.failed).toBe(3); // received three times (maxReceiveCount), then redriven by the queue
    expect(await receiveAll(aws, resources.ordersDlqUrl)).toEqual(['{"not":"an order"}']);
    expect((await finalState()).versions).toEqual({ 1: 3, 2: 1 });
  });

  it('ends as one clean run when the function crashes in the middle of a batch and the batch is redelivered', async () => {
    await publish(history());
    let crashes = 0;
    const crashing: Handlers = {
      poll: handlers.poll,
      async consume(event, context) {
        // Two crashes stay under maxReceiveCount (3), so nothing is dead-lettered.
        if (crashes < 2) {
          crashes += 1;
          // Half the batch is written, then the invocation dies: nothing is deleted from the queue.
          const half: SQSEvent = { Records: event.Records.slice(0, Math.ceil(event.Records.length / 2)) };
          await handlers.consume(half, context);
          throw new Error('simulated crash');
        }
        return handlers.consume(event, context);
      },
    };

    const drained = await drainQueue(aws, resources.ordersQueueUrl, crashing, { batchSize: 4 });

    expect(drained.crashes).toBe(2);
    const state = await finalState();
    expect(await receiveAll(aws, resources.ordersDlqUrl)).toEqual([]);
    expect(state.versions).toEqual({ 1: 3, 2: 3, 3: 2, 4: 5 });
    expect(state.ledger).toEqual(EXPECTED_LEDGER);
  });
});
