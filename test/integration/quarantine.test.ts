// A hostile partner, scripted by hand rather than by our simulator: records the parser must reject, mixed with
// good ones (records too large for SQS, and characters SQS refuses: hostile-values.test.ts). Through the real handlers
// against real (emulated) S3, SQS and DynamoDB: bad records land in the quarantine with their reason,
// the raw record and their pageId; the stream goes on; the good versions are applied. The replay runs the
// Lambda entry modules themselves (handler.ts), wired from process.env at import.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type AwsClients,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  quarantinedKeys,
  scanOrders,
} from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { sampleOrder } from '../fixtures/orders.js';
import { handlersFor, pipelineOnMoto } from '../support/handlers.js';
import { readQuarantined, receiveAll } from '../support/pipeline.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

const pipeline = pipelineOnMoto();
let aws: AwsClients;
let partner: ScriptedServer;
let resources: PipelineResources;

beforeAll(async () => {
  partner = await startScriptedServer();
});
afterAll(async () => partner?.close());
beforeEach(() => {
  partner.reset();
  ({ aws, resources } = pipeline);
});

const unknownStatus = { ...sampleOrder({ id: 2 }), status: 'refunded' };

describe('quarantine', () => {
  it('quarantines rejected records with reason, raw record and pageId, and applies the rest', async () => {
    const mistyped = { ...sampleOrder({ id: 3 }), total: { amount: '12.50', currency: 'EUR' } };
    partner.script(
      {
        status: 200,
        body: { data: [sampleOrder({ id: 1 }), unknownStatus], hasMore: true, nextPageId: 'page-2' },
      },
      {
        status: 200,
        body: {
          data: [mistyped, { not: 'an order' }],
          hasMore: false,
          nextPageId: 'page-3',
        },
      },
    );
    const handlers = handlersFor(aws, pipelineEnv(resources, partner.url, { DOWNSTREAM_QUEUE_URLS: '{}' }));

    const outcome = await handlers.poll();
    await drainQueue(aws, resources.ordersQueueUrl, handlers);

    expect(outcome).toMatchObject({ kind: 'caught-up', versionsPublished: 1, quarantined: 3 });
    expect([...(await scanOrders(aws, resources.ordersTable)).keys()].sort()).toEqual([1]);
    const keys = await quarantinedKeys(aws, resources.quarantineBucket);
    expect(keys).toHaveLength(3);
    const records = await Promise.all(
      keys.map((key) => readQuarantined(aws, resources.quarantineBucket, key)),
    );
    const byOrder = new Map(records.map((record) => [record.orderId ?? 'unidentified', record]));
    expect(byOrder.get(2)).toMatchObject({
      reason: 'unknown status "refunded"',
      pageId: null /* the first page is requested without a cursor */,
      raw: unknownStatus,
    });
    expect(byOrder.get(3)).toMatchObject({ pageId: 'page-2', raw: mistyped });
    expect(String(byOrder.get(3)?.reason)).toContain('total.amount');
    expect(byOrder.get('unidentified')).toMatchObject({ raw: { not: 'an order' } });
    expect(await receiveAll(aws, resources.ordersDlqUrl)).toEqual([]);
  });

  it('writes the same quarantine object again, not a second one, when a page is replayed (Lambda entry modules)', async () => {
    const page = {
      status: 200,
      body: { data: [sampleOrder({ id: 1 }), unknownStatus], hasMore: false, nextPageId: 'page-2' },
    };
    partner.script(page, page);
    // As a cold start does: the entry modules read process.env and wire the real clients at import.
    Object.assign(process.env, pipelineEnv(resources, partner.url, { DOWNSTREAM_QUEUE_URLS: '{}' }));
    vi.resetModules();
    const poller = await import('../../functions/poller/handler.js');
    const consumer = await import('../../functions/consumer/handler.js');

    await poller.handler({}, lambdaContext('poller', 60_000));
    await poller.handler({}, lambdaContext('poller', 60_000)); // the partner answers the cursor with the same page
    await drainQueue(aws, resources.ordersQueueUrl, { consume: consumer.handler });

    expect(await quarantinedKeys(aws, resources.quarantineBucket)).toHaveLength(1);
    expect([...(await scanOrders(aws, resources.ordersTable)).keys()]).toEqual([1]);
  });
});
