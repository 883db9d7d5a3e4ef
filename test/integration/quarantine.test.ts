// A hostile partner, scripted by hand rather than by our simulator: records the parser must reject, mixed with
// good ones (records too large for SQS, and characters SQS refuses: hostile-values.test.ts). Through the real handlers
// against real (emulated) S3, SQS and DynamoDB: bad records land in the quarantine with their reason,
// the raw record and their pageId; the stream goes on; the good versions are applied. The replay runs the
// Lambda entry modules themselves (handler.ts), wired from process.env at import.
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { quarantineKey } from '../../functions/core/adapters/s3-quarantine.js';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import type { OutgoingMessage } from '../../functions/core/contract/order-version-message.js';
import type { QuarantinedRecord } from '../../functions/core/ingest/ports.js';
import { stringifyJsonExact } from '../../functions/core/model/int64.js';
import {
  type AwsClients,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  quarantinedKeys,
  scanOrders,
} from '../../tools/harness/pipeline.js';
import { feedOfEnvironment, singleFeedBatch, writeFeedRow } from '../../tools/harness/single-feed.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import {
  judgeQuarantined,
  listQuarantined,
  type RetryResult,
  retryQuarantined,
} from '../../tools/ops/quarantine.js';
import { sampleOrder } from '../fixtures/orders.js';
import { handlersFor, pipelineOnMoto } from '../support/handlers.js';
import { EMULATOR_ENV } from '../support/moto.js';
import { createStackWithOutputs, runOpsCaptured } from '../support/ops.js';
import { readQuarantined, receiveAll, scanHistory } from '../support/pipeline.js';
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
    // As a cold start does: the entry modules read process.env and wire the real clients at import. The
    // feed is a row of the cursor table; the dispatcher's batch names it.
    const env = pipelineEnv(resources, partner.url, { DOWNSTREAM_QUEUE_URLS: '{}' });
    for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
    const feed = feedOfEnvironment(env);
    await writeFeedRow(aws.dynamo, resources.cursorTable, feed);
    vi.resetModules();
    const poller = await import('../../functions/poller/handler.js');
    const consumer = await import('../../functions/consumer/handler.js');

    await poller.handler(singleFeedBatch(feed.feedId, 60_000), lambdaContext('poller', 60_000));
    // The partner answers the cursor with the same page.
    await poller.handler(singleFeedBatch(feed.feedId, 60_000), lambdaContext('poller', 60_000));
    await drainQueue(aws, resources.ordersQueueUrl, { consume: consumer.handler });

    expect(await quarantinedKeys(aws, resources.quarantineBucket)).toHaveLength(1);
    expect([...(await scanOrders(aws, resources.ordersTable)).keys()]).toEqual([1]);
  });
});

// `npm run ops -- quarantine retry` in-process (runOps) against a stack whose outputs name this pipeline's
// resources: each record of an object that holds several is judged, published and kept or moved on its own.
describe('quarantine retry of an object that holds several records', () => {
  const STACK = 'QuarantineRetry';
  const ops = (...argv: string[]) =>
    runOpsCaptured([...argv, '--stack-name', STACK, '--aws-endpoint', pipeline.moto.endpoint], {
      ...EMULATOR_ENV,
    });
  const several = (raw: unknown[], reason: string, records?: number): QuarantinedRecord => ({
    feedId: 'partner-feed',
    pageId: 'page-7',
    reason,
    issues: [],
    raw,
    ...(records === undefined ? {} : { records }),
    quarantinedAt: '2026-11-20T10:00:00.000Z',
  });
  const store = async (record: QuarantinedRecord) => {
    const key = quarantineKey(record);
    await aws.s3.send(
      new PutObjectCommand({
        Bucket: resources.quarantineBucket,
        Key: key,
        Body: stringifyJsonExact(record),
      }),
    );
    return key;
  };
  const objectKeys = async () => {
    const { Contents = [] } = await aws.s3.send(
      new ListObjectsV2Command({ Bucket: resources.quarantineBucket }),
    );
    return Contents.map((object) => object.Key ?? '').sort();
  };
  const orderIds = (bodies: string[]) => bodies.map((body) => parseOrderVersionMessage(body).order.id);

  beforeEach(async () => {
    await createStackWithOutputs(pipeline.moto, STACK, {
      OrdersTableName: resources.ordersTable,
      CursorTableName: resources.cursorTable,
      QuarantineBucketName: resources.quarantineBucket,
      OrdersQueueUrl: resources.ordersQueueUrl,
      DownstreamQueueUrlAnalytics: resources.downstreamQueueUrl,
    });
  });

  it('publishes the records that pass today to every queue, reports each that fails with its reason, keeps only those and moves an object whose records all passed to retried/', async () => {
    // As the poller wrote it before every record was validated: valid orders among them, unread.
    const older = several(
      [sampleOrder({ id: 5, version: 2 }), { id: 6 }, sampleOrder({ id: 7, version: 1 })],
      '3 more records of this page could not be published (beyond the 100 quarantined one by one, or the 10000 validated); raw lists them in page order',
    );
    const fixed = several([sampleOrder({ id: 8 }), sampleOrder({ id: 9 })], 'rejected by an older parser', 2);
    const [olderKey, fixedKey] = [await store(older), await store(fixed)];
    const handlers = handlersFor(aws, pipelineEnv(resources, 'http://127.0.0.1:9'));

    const plan = await ops('quarantine', 'retry', '--json');
    const retried = await ops('quarantine', 'retry', '--yes', '--json');
    const analytics = await receiveAll(aws, resources.downstreamQueueUrl, { remove: true });
    await drainQueue(aws, resources.ordersQueueUrl, handlers);
    const again = await ops('quarantine', 'retry', '--yes');

    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout).verdicts).toHaveLength(5);
    expect(retried.code, retried.stderr).toBe(0);
    const result = JSON.parse(retried.stdout) as RetryResult;
    expect(result.published.map(({ key, index, orderId }) => [key, index, orderId])).toEqual(
      expect.arrayContaining([
        [olderKey, 0, '5'],
        [olderKey, 2, '7'],
        [fixedKey, 0, '8'],
        [fixedKey, 1, '9'],
      ]),
    );
    expect(result.stillFailing).toEqual([
      { key: olderKey, index: 1, reason: expect.stringMatching(/^missing required field: version/) },
    ]);
    expect(orderIds(analytics).sort()).toEqual([5, 7, 8, 9]);
    const stored = await scanOrders(aws, resources.ordersTable);
    expect([...stored].map(([id, item]) => [id, item.version]).sort()).toEqual([
      [5, 2],
      [7, 1],
      [8, 3],
      [9, 3],
    ]);
    // The older object keeps only the record that still fails; what was published is kept under retried/.
    const path = (key: string) => key.slice('quarantine/'.length);
    expect(await objectKeys()).toEqual(
      [
        olderKey,
        `retried/${path(olderKey).replace(/\.json$/, '')}.${result.runId}.json`,
        `retried/${path(fixedKey)}`,
      ].sort(),
    );
    expect(await readQuarantined(aws, resources.quarantineBucket, olderKey)).toMatchObject({
      records: 1,
      raw: [{ id: 6 }],
      issues: [expect.stringMatching(/^1 × missing required field: version/)],
    });
    // A second retry publishes nothing again, and names the record that still fails with its reason.
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('0 record(s) published');
    expect(again.stdout).toMatch(new RegExp(`${olderKey}#0: missing required field: version`));
    expect(await receiveAll(aws, resources.ordersQueueUrl)).toEqual([]);
  });

  it('loses nothing when a retry stops after publishing, before the object is rewritten: the next one publishes again, absorbed by the version guard', async () => {
    const key = await store(several([sampleOrder({ id: 11 }), { id: 12 }], 'rejected by an older parser', 2));
    const handlers = handlersFor(aws, pipelineEnv(resources, 'http://127.0.0.1:9'));
    const sqs = new SqsFanoutPublisher(aws.sqs, [resources.ordersQueueUrl, resources.downstreamQueueUrl]);
    const crashing = {
      publish: async (messages: OutgoingMessage[]) => {
        await sqs.publish(messages);
        throw new Error('the process died here');
      },
    };
    const verdicts = judgeQuarantined(
      await listQuarantined(aws, resources.quarantineBucket, undefined),
      'run-crashed',
    );

    await expect(
      retryQuarantined(aws, resources.quarantineBucket, verdicts, crashing, 'run-crashed', () => {}),
    ).rejects.toThrow('the process died here');
    const afterCrash = await readQuarantined(aws, resources.quarantineBucket, key);
    const retried = await ops('quarantine', 'retry', '--yes');
    const drained = await drainQueue(aws, resources.ordersQueueUrl, handlers);

    expect(afterCrash).toMatchObject({ records: 2 });
    expect(retried.code, retried.stderr).toBe(0);
    expect(drained).toMatchObject({ succeeded: 2, failed: 0 });
    expect([...(await scanOrders(aws, resources.ordersTable)).keys()]).toEqual([11]);
    expect(
      (await scanHistory(aws, resources.historyTable)).map((entry) => [entry.orderId, entry.version]),
    ).toEqual([[11, 3]]);
    expect(orderIds(await receiveAll(aws, resources.downstreamQueueUrl))).toEqual([11, 11]);
    expect(await readQuarantined(aws, resources.quarantineBucket, key)).toMatchObject({
      records: 1,
      raw: [{ id: 12 }],
    });
  });
});
