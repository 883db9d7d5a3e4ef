// The consumer built by its factory over an in-memory orders table. Of several versions of one order in one
// batch only the highest is written (no charged conditional write that applies nothing), the lower ones are
// stale once it is written, and fail with it if its write fails, so SQS redelivers them all. Its log lines
// carry each message's correlation id: per record (DEBUG; ERROR on a failure, the id then read from the
// attribute since the body failed validation), and one INFO line per batch naming at most 10 runs.
import { Logger } from '@aws-lambda-powertools/logger';
import type { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type BatchCounts, buildConsumer } from '../../../functions/consumer/build-consumer.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { MemoryOrdersTable, sqsRecord } from '../../support/fakes.js';
import { recordOf } from '../../support/messages.js';

/**
 * Runs one batch (and `alongside`, at the same time, if given) through a consumer logging at DEBUG; what it
 * answered, wrote (`orderId@version` per PutItem; `failVersion`'s write throws) and logged, and its counts.
 */
async function consume(records: SQSRecord[], failVersion?: number, alongside?: SQSRecord[]) {
  const orders = new MemoryOrdersTable();
  const puts: string[] = [];
  const send = orders.client.send.bind(orders.client) as (command: PutItemCommand) => Promise<unknown>;
  Object.assign(orders.client, {
    send: async (command: PutItemCommand) => {
      const version = command.input.Item?.version?.N ?? '';
      puts.push(`${command.input.Item?.orderId?.N}@${version}`);
      if (version === String(failVersion)) throw new Error('throttled');
      return send(command);
    },
  });
  const counts: BatchCounts[] = [];
  const handler = buildConsumer(
    { dynamo: orders.client },
    { ordersTableName: orders.tableName },
    {
      orders,
      logger: new Logger({ serviceName: 'consumer-test', logLevel: 'DEBUG' }),
      onBatchSettled: (batch) => counts.push(batch),
    },
  );
  const written: string[] = [];
  const capture = (chunk: unknown) => written.push(String(chunk)) > 0;
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const context = lambdaContext('consumer', 30_000);
  const [response, alongsideResponse] = await Promise.all([
    handler({ Records: records }, context),
    alongside && handler({ Records: alongside }, context),
  ]);
  vi.restoreAllMocks();
  const lines: Array<Record<string, unknown>> = written
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
  const batchLines = lines.filter((line) => line.message === 'order version batch processed');
  const stored = orders.items().map((item) => `${item.orderId}@${item.version}`);
  return { response, alongsideResponse, puts: puts.sort(), stored: stored.sort(), counts, lines, batchLines };
}

afterEach(() => vi.restoreAllMocks());

describe('several versions of one order in one batch', () => {
  it('writes only the highest and acknowledges the others as stale', async () => {
    const { response, puts, stored, counts } = await consume([
      recordOf('a', 7, 1),
      recordOf('b', 7, 3),
      recordOf('c', 8, 1),
      recordOf('d', 7, 2),
      recordOf('e', 7, 3),
    ]);

    expect(response).toEqual({ batchItemFailures: [] });
    expect([puts, stored]).toEqual([
      ['7@3', '8@1'],
      ['7@3', '8@1'],
    ]);
    expect(counts).toEqual([{ applied: 2, stale: 3, failed: 0 }]);
  });

  it('fails the lower versions with the highest when its write fails, so all are redelivered', async () => {
    const { response, puts, stored, counts } = await consume(
      [recordOf('a', 7, 1), recordOf('b', 7, 3), recordOf('c', 8, 1)],
      3,
    );

    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(['a', 'b']);
    expect([puts, stored]).toEqual([['7@3', '8@1'], ['8@1']]);
    expect(counts).toEqual([{ applied: 1, stale: 0, failed: 2 }]);
  });
});

describe('invocations overlapping in one process (local mode runs two at once)', () => {
  it('report each batch its own failures: a failed record is never acknowledged', async () => {
    const { response, alongsideResponse } = await consume(
      [recordOf('a', 1, 1), recordOf('b', 2, 1), sqsRecord('poison', 'poison')],
      undefined,
      [recordOf('c', 3, 1), recordOf('d', 4, 1)],
    );

    expect([response, alongsideResponse]).toEqual([
      { batchItemFailures: [{ itemIdentifier: 'poison' }] },
      { batchItemFailures: [] },
    ]);
  });
});

describe('consumer log lines', () => {
  it('name the correlation id per record (DEBUG, ERROR) and the distinct ones once per batch (INFO)', async () => {
    const { response, lines, batchLines } = await consume([
      recordOf('m-1', 9, 2, 'poll:req-1:3'),
      recordOf('m-2', 9, 1, 'poll:req-1:2'),
      recordOf('m-3', 10, 5, 'poll:req-1:3'),
      sqsRecord('m-4', '{"schemaVersion":1,"order":{}}', 'reconcile:req-2'),
    ]);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-4' }] });
    expect(lines.find((line) => line.messageId === 'm-1')).toMatchObject({
      level: 'DEBUG',
      message: 'order version message processed',
      correlationId: 'poll:req-1:3',
      orderId: 9,
      version: 2,
      outcome: 'applied',
    });
    expect(lines.find((line) => line.messageId === 'm-2')).toMatchObject({ outcome: 'stale' });
    expect(lines.find((line) => line.messageId === 'm-4')).toMatchObject({
      level: 'ERROR',
      correlationId: 'reconcile:req-2',
    });
    expect(batchLines).toEqual([
      expect.objectContaining({
        level: 'INFO',
        applied: 2,
        stale: 1,
        failed: 1,
        correlationIds: ['poll:req-1:3', 'poll:req-1:2', 'reconcile:req-2'],
      }),
    ]);
    expect(batchLines[0]).not.toHaveProperty('moreCorrelationIds');
  });

  it('names at most 10 correlation ids in the batch line, and how many more there were', async () => {
    const records = Array.from({ length: 12 }, (_, page) =>
      recordOf(`m-${page}`, 100 + page, 1, `poll:req-1:${page + 1}`),
    );

    const { batchLines } = await consume([...records, sqsRecord('m-none', '{}')]);

    expect(batchLines[0]).toMatchObject({
      applied: 12,
      failed: 1,
      correlationIds: Array.from({ length: 10 }, (_, page) => `poll:req-1:${page + 1}`),
      moreCorrelationIds: 2,
    });
  });
});
