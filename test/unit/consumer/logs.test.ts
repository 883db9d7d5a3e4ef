// The consumer's log lines carry each message's correlation id: per record (DEBUG, and ERROR on a failure,
// the id then read from the attribute since the body failed validation), and one INFO line per batch with
// its counts and the distinct runs its messages came from, at most 10 of them.
import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildConsumer } from '../../../functions/consumer/build-consumer.js';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { MemoryOrdersTable, sqsRecord } from '../../support/fakes.js';

/** A message of order `id` at `version` from the run and page `correlationId` (body and attribute). */
function message(messageId: string, id: number, version: number, correlationId: string): SQSRecord {
  const built = buildOrderVersionMessage(toOrder(sampleOrder({ id, version })), {
    feedId: 'f',
    pageId: null,
    fetchedAt: '2024-05-01T08:00:00.000Z',
    findings: [],
    correlationId,
    origin: 'poll',
  });
  return sqsRecord(messageId, built.body, correlationId);
}

/** Runs one batch through a consumer logging at DEBUG; its response and the JSON lines it wrote. */
async function consume(records: SQSRecord[]) {
  const orders = new MemoryOrdersTable();
  const handler = buildConsumer(
    { dynamo: orders.client },
    { ordersTableName: orders.tableName },
    {
      orders,
      logger: new Logger({ serviceName: 'consumer-test', logLevel: 'DEBUG' }),
    },
  );
  const written: string[] = [];
  const capture = (chunk: unknown) => written.push(String(chunk)) > 0;
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const response = await handler({ Records: records }, lambdaContext('consumer', 30_000));
  vi.restoreAllMocks();
  const lines: Array<Record<string, unknown>> = written
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
  return {
    response,
    lines,
    batchLines: lines.filter((line) => line.message === 'order version batch processed'),
  };
}

afterEach(() => vi.restoreAllMocks());

describe('consumer log lines', () => {
  it('name the correlation id per record (DEBUG, ERROR) and the distinct ones once per batch (INFO)', async () => {
    const { response, lines, batchLines } = await consume([
      message('m-1', 9, 2, 'poll:req-1:3'),
      message('m-2', 9, 1, 'poll:req-1:2'),
      message('m-3', 10, 5, 'poll:req-1:3'),
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
      message(`m-${page}`, 100 + page, 1, `poll:req-1:${page + 1}`),
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
