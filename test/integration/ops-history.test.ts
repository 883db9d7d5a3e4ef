// `ops history` and `ops backfill --all-versions` run in-process through runOps against emulated AWS
// (moto): a stack whose outputs name an order history table with the shared key schema (orderId N,
// version N), holding history items as the consumer writes them (the orders table item of the version
// plus version, fetchedAt, storedAt, feedId, correlationId, arrivedAfterVersion); and a stack without
// the HistoryTableName output (history off).
import { CreateTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import { parseJsonExact } from '../../functions/core/model/int64.js';
import type { Order } from '../../functions/core/model/types.js';
import { type AwsClients, useEmulator } from '../../tools/harness/pipeline.js';
import { EXIT_FAILED, EXIT_OK } from '../../tools/ops/cli.js';
import { sampleOrder, toOrder } from '../fixtures/orders.js';
import { EMULATOR_ENV, type RunningMoto, workerMoto } from '../support/moto.js';
import { createStackWithOutputs, historyItem, runOpsCaptured } from '../support/ops.js';
import { receiveAll } from '../support/pipeline.js';

const BIG_ID = 2n ** 63n - 2n;
const LOW = 2n ** 53n;

let moto: RunningMoto;
let aws: AwsClients;
let subscriberQueueUrl: string;

async function createTable(name: string, keys: Array<[string, 'N' | 'S', 'HASH' | 'RANGE']>) {
  await aws.dynamo.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: keys.map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
      KeySchema: keys.map(([AttributeName, , KeyType]) => ({ AttributeName, KeyType })),
    }),
  );
}

const ops = (...argv: string[]) =>
  runOpsCaptured([...argv, '--aws-endpoint', moto.endpoint], { ...EMULATOR_ENV });

beforeAll(async () => {
  moto = await workerMoto();
  aws = useEmulator(moto);
  await createTable('history', [
    ['orderId', 'N', 'HASH'],
    ['version', 'N', 'RANGE'],
  ]);
  await createTable('orders', [['orderId', 'N', 'HASH']]);
  await createTable('cursor', [['feedId', 'S', 'HASH']]);
  await aws.s3.send(new CreateBucketCommand({ Bucket: 'quarantine' }));
  const queue = async (QueueName: string) =>
    (await aws.sqs.send(new CreateQueueCommand({ QueueName }))).QueueUrl as string;
  const outputs = {
    OrdersTableName: 'orders',
    CursorTableName: 'cursor',
    QuarantineBucketName: 'quarantine',
    OrdersQueueUrl: await queue('orders-queue'),
    DownstreamQueueUrlBilling: await queue('billing-queue'),
  };
  subscriberQueueUrl = outputs.DownstreamQueueUrlBilling;
  await createStackWithOutputs(moto, 'WithHistory', { ...outputs, HistoryTableName: 'history' });
  await createStackWithOutputs(moto, 'WithoutHistory', outputs);

  const { acceptedAt: _, ...sample } = toOrder(sampleOrder());
  const base: Order = { ...sample, id: BIG_ID, status: 'placed' };
  const versions: Array<[Order, string, bigint?]> = [
    [
      { ...base, version: LOW + 2n, status: 'accepted', acceptedAt: '2026-03-01T11:05:00.000Z' },
      '2026-03-01T11:06:00.000Z',
    ],
    [
      {
        ...base,
        version: LOW + 5n,
        status: 'cancelled',
        acceptedAt: '2026-03-01T11:05:00.000Z',
        cancelledAt: '2026-03-01T11:20:00.000Z',
      },
      '2026-03-01T11:21:00.000Z',
    ],
    // Arrived last, after v(2^53 + 5) was stored.
    [{ ...base, version: LOW + 1n }, '2026-03-01T11:30:00.000Z', LOW + 5n],
    // Another order, for backfill --all-versions.
    [{ ...base, id: 7, version: 1 }, '2026-03-01T10:00:00.000Z'],
  ];
  for (const [order, fetchedAt, after] of versions) {
    await aws.dynamo.send(
      new PutItemCommand({
        TableName: 'history',
        Item: historyItem(order, { fetchedAt, arrivedAfterVersion: after }),
      }),
    );
  }
}, 120_000);

afterAll(async () => {
  await moto?.stop();
});

describe('ops history and ops backfill --all-versions (moto)', () => {
  it('history reads every stored version back exactly, in ascending order (the Query), as text and as --json', async () => {
    const text = await ops('history', String(BIG_ID), '--stack-name', 'WithHistory');
    const json = await ops('history', String(BIG_ID), '--stack-name', 'WithHistory', '--json');

    expect(text.stderr).toBe('');
    expect(text.code).toBe(EXIT_OK);
    expect(text.stdout).toContain('order 9223372036854775806: 3 stored version(s)');
    // The rows, the out-of-order note and the gap as rendered: history.test.ts (renderHistory).
    expect(json.code).toBe(EXIT_OK);
    const report = parseJsonExact(json.stdout) as { orderId: string; versions: Array<{ version: bigint }> };
    expect(report.orderId).toBe('9223372036854775806');
    expect(report.versions.map((entry) => entry.version)).toEqual([LOW + 1n, LOW + 2n, LOW + 5n]);
  });

  it('backfill --all-versions sends every stored version of every order, each order ascending, resuming where a stopped run ended', async () => {
    const allVersions = (...extra: string[]) =>
      ops(
        'backfill',
        '--subscriber',
        'billing',
        '--all-versions',
        '--yes',
        '--stack-name',
        'WithHistory',
        ...extra,
      );
    // Stopped after two messages, inside the big order's versions: the second run must go on from its
    // checkpoint (kept apart from the latest-version backfill's), not start over.
    const first = await allVersions('--max-messages', '2');
    expect(first.code, first.stderr).toBe(EXIT_OK);
    expect(first.stdout).not.toContain('finished: every stored version was sent');
    const { code, stdout } = await allVersions();

    expect(code).toBe(EXIT_OK);
    expect(stdout).toContain('finished: every stored version was sent');
    const messages = (await receiveAll(aws, subscriberQueueUrl)).map((body) =>
      parseOrderVersionMessage(body),
    );
    const byOrder = new Map<string, bigint[]>();
    for (const message of messages) {
      const id = String(message.order.id);
      byOrder.set(id, [...(byOrder.get(id) ?? []), BigInt(message.order.version)]);
      expect(message.source.origin).toBe('backfill');
    }
    expect(Object.fromEntries(byOrder)).toEqual({
      '7': [1n],
      '9223372036854775806': [LOW + 1n, LOW + 2n, LOW + 5n],
    });
  });

  it('exits 1 for an unknown order, and for either command when the stack has no history table', async () => {
    const unknown = await ops('history', '42', '--stack-name', 'WithHistory');
    const off = [
      await ops('history', String(BIG_ID), '--stack-name', 'WithoutHistory'),
      await ops('backfill', '--subscriber', 'billing', '--all-versions', '--stack-name', 'WithoutHistory'),
    ];

    expect(unknown.code).toBe(EXIT_FAILED);
    expect(unknown.stderr).toContain('order 42 has no stored history');
    for (const ran of off) {
      expect(ran.code).toBe(EXIT_FAILED);
      expect(ran.stderr).toContain('history is off for stack WithoutHistory');
    }
  });
});
