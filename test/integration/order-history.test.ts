// The order history against emulated DynamoDB (moto), with the tables created from the stack's template:
// whatever happens to the messages (duplicates, reordering, a crash between the orders write and the history
// write, two feeds serving the same versions), exactly one entry per (orderId, version), holding the content
// of its first delivery; int64 versions beyond 2^53 stored and sorted exactly.
import type { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { applyOrderVersion, type OrdersTable } from '../../functions/core/apply/apply-order-version.js';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import type { MessageSource } from '../../functions/core/contract/order-version-message.js';
import type { Int64 } from '../../functions/core/model/int64.js';
import {
  type AwsClients,
  type PipelineResources,
  pipelineEnv,
  scanOrders,
} from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { sampleOrder, toOrder } from '../fixtures/orders.js';
import { sqsRecord } from '../support/fakes.js';
import { handlersFor, pipelineOnMoto } from '../support/handlers.js';
import { FETCHED_AT, messageOf } from '../support/messages.js';
import { scanHistory } from '../support/pipeline.js';

const pipeline = pipelineOnMoto();
let aws: AwsClients;
let resources: PipelineResources;
let tables: OrdersTable;

beforeEach(() => {
  ({ aws, resources } = pipeline);
  tables = {
    client: aws.dynamo,
    tableName: resources.ordersTable,
    history: { tableName: resources.historyTable, retentionDays: 400 },
  };
});

function message(id: Int64, version: Int64, status: string, source: Partial<MessageSource> = {}) {
  // The fixture's raw type says number; the parser reads bigints beyond 2^53 as the exact JSON reader gives them.
  const order = toOrder(sampleOrder({ id: id as number, version: version as number, status }));
  // Read back as the consumer reads it (int64 exact).
  return parseOrderVersionMessage(messageOf(order, { feedId: 'eu', ...source }).body);
}

describe('the consumer keeps each order version once in the history', () => {
  it('keeps every version once, the first copy of it, under duplicates, reordering and two overlapping feeds', async () => {
    // Order 7's versions out of order, each also served by a second feed; order 8 in order.
    const uk = { feedId: 'uk', fetchedAt: '2024-05-01T09:00:00.000Z', correlationId: 'poll:run-2:1' };
    const deliveries = [
      message(7, 2, 'accepted'),
      message(7, 2, 'accepted', uk),
      message(7, 1, 'placed', uk),
      message(7, 3, 'cancelled'),
      message(7, 1, 'placed'),
      message(7, 3, 'cancelled', uk),
      message(8, 1, 'placed'),
      message(8, 2, 'accepted'),
      message(8, 1, 'placed', uk),
    ];

    for (const delivery of deliveries) await applyOrderVersion(tables, delivery);
    // Both feeds deliver everything again, at the same time.
    await Promise.all(deliveries.map((delivery) => applyOrderVersion(tables, delivery)));

    const history = await scanHistory(aws, resources.historyTable);
    expect(
      history.map((entry) => [
        `${entry.orderId}/${entry.version}`,
        entry.status,
        entry.arrivedAfterVersion,
        entry.feedId,
        entry.fetchedAt,
        entry.correlationId,
      ]),
    ).toEqual([
      ['7/1', 'placed', 2, 'uk', uk.fetchedAt, uk.correlationId],
      ['7/2', 'accepted', undefined, 'eu', FETCHED_AT, 'poll:run-1:1'],
      ['7/3', 'cancelled', undefined, 'eu', FETCHED_AT, 'poll:run-1:1'],
      ['8/1', 'placed', undefined, 'eu', FETCHED_AT, 'poll:run-1:1'],
      ['8/2', 'accepted', undefined, 'eu', FETCHED_AT, 'poll:run-1:1'],
    ]);
  });

  it('stores the orders table item plus fetchedAt, storedAt, feedId, correlationId and expiresAt (none when kept forever)', async () => {
    const before = Math.floor(Date.now() / 1000);
    const forever = { ...tables, history: { tableName: resources.historyTable, retentionDays: 0 } };

    await applyOrderVersion(tables, message(7, 2, 'accepted', { correlationId: 'poll:run-9:4' }));
    await applyOrderVersion(forever, message(8, 1, 'placed'));

    const [entry, keptForever] = await scanHistory(aws, resources.historyTable);
    expect(keptForever).not.toHaveProperty('expiresAt');
    const stored = (await scanOrders(aws, resources.ordersTable)).get(7);
    const { fetchedAt, storedAt, feedId, expiresAt, ...sameAsOrdersItem } = entry ?? {};
    expect(sameAsOrdersItem).toEqual(stored);
    expect({ fetchedAt, feedId, correlationId: entry?.correlationId }).toEqual({
      fetchedAt: FETCHED_AT,
      feedId: 'eu',
      correlationId: 'poll:run-9:4',
    });
    expect(Date.parse(String(storedAt))).toBeGreaterThanOrEqual(before * 1000 - 1000);
    expect(Number(expiresAt) - before).toBeGreaterThanOrEqual(400 * 86_400 - 5);
    expect(Number(expiresAt) - before).toBeLessThanOrEqual(400 * 86_400 + 5);
  });

  it('after a crash between the orders write and the history write, the redelivery writes the entry once', async () => {
    // Prepare: the history PutItem fails once (the Lambda dies after the orders write).
    let failNextHistoryWrite = true;
    const crashing = {
      send: (command: PutItemCommand) => {
        if (command.input.TableName === resources.historyTable && failNextHistoryWrite) {
          failNextHistoryWrite = false;
          return Promise.reject(new Error('Lambda timed out'));
        }
        return aws.dynamo.send(command);
      },
    } as unknown as DynamoDBClient;
    const delivery = message(7, 2, 'accepted');

    // Act
    await expect(applyOrderVersion({ ...tables, client: crashing }, delivery)).rejects.toThrow('timed out');
    const afterCrash = await scanHistory(aws, resources.historyTable);
    const redelivered = await applyOrderVersion({ ...tables, client: crashing }, delivery);
    await applyOrderVersion({ ...tables, client: crashing }, delivery);

    // Assess
    expect(afterCrash).toEqual([]);
    expect(redelivered.outcome).toBe('stale');
    const history = await scanHistory(aws, resources.historyTable);
    expect(history.map((entry) => `${entry.orderId}/${entry.version}`)).toEqual(['7/2']);
    // It arrived in order: the stored version it met on redelivery was its own, not a higher one.
    expect(history[0]).not.toHaveProperty('arrivedAfterVersion');
  });

  it('keeps the versions a batch supersedes (only its highest is written to the orders table)', async () => {
    // Prepare: v4 stored; then one batch holds v2, v5 and v3 of the same order, and v1 and v3 of another.
    await applyOrderVersion(tables, message(7, 4, 'accepted'));
    const { consume } = handlersFor(aws, pipelineEnv(resources, 'http://127.0.0.1:1'));
    const deliveries = [message(7, 2, 'placed'), message(7, 5, 'cancelled'), message(7, 3, 'accepted')];
    deliveries.push(message(8, 1, 'placed'), message(8, 3, 'accepted'));
    const records = deliveries.map((m, index) => sqsRecord(`m-${index}`, messageOf(m.order).body));

    // Act
    const response = await consume({ Records: records }, lambdaContext('consumer', 30_000));

    // Assess: every version kept once; those the table already had a higher version of are marked.
    expect(response.batchItemFailures).toEqual([]);
    const history = await scanHistory(aws, resources.historyTable);
    expect(history.map((entry) => [`${entry.orderId}/${entry.version}`, entry.arrivedAfterVersion])).toEqual([
      ['7/2', 4],
      ['7/3', 4],
      ['7/4', undefined],
      ['7/5', undefined],
      ['8/1', undefined],
      ['8/3', undefined],
    ]);
  });

  // DynamoDB's Query sorting such versions, as ops history reads them: ops-history.test.ts.
  it('stores int64 ids and versions beyond 2^53 exactly, and tells their arrival order exactly', async () => {
    const id = 2n ** 60n + 7n;
    const versions = [2n ** 53n + 2n, 2n ** 53n + 1n, 2n ** 62n, 2n ** 53n + 3n];

    for (const version of versions) await applyOrderVersion(tables, message(id, version, 'placed'));

    const history = await scanHistory(aws, resources.historyTable);
    expect(history.map((entry) => [entry.orderId, entry.version, entry.arrivedAfterVersion])).toEqual([
      [id, 2n ** 53n + 1n, 2n ** 53n + 2n],
      [id, 2n ** 53n + 2n, undefined],
      [id, 2n ** 53n + 3n, 2n ** 62n],
      [id, 2n ** 62n, undefined],
    ]);
  });
});
