// Versions of one order in one batch: only the highest is written (the cost per version stays at its floor:
// no charged conditional write that applies nothing), the lower ones are acknowledged as stale once it is
// written, and if its write fails they fail with it, so SQS redelivers them all and nothing is lost.
import { Logger } from '@aws-lambda-powertools/logger';
import type { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { buildConsumer } from '../../../functions/consumer/build-consumer.js';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { MemoryOrdersTable, sqsRecord } from '../../support/fakes.js';

function record(messageId: string, id: number, version: number): SQSRecord {
  const { body } = buildOrderVersionMessage(toOrder(sampleOrder({ id, version })), {
    feedId: 'f',
    pageId: null,
    fetchedAt: '2024-05-01T08:00:00.000Z',
    findings: [],
    correlationId: 'poll:run:1',
    origin: 'poll',
  });
  return sqsRecord(messageId, body);
}

/** The in-memory table, counting the PutItems it is sent; `failVersion` makes that version's write throw. */
function table(failVersion?: number) {
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
  return { orders, puts };
}

function handlerFor(orders: MemoryOrdersTable, counts: Array<Record<string, number>>) {
  return buildConsumer(
    { dynamo: orders.client },
    { ordersTableName: orders.tableName },
    {
      orders,
      logger: new Logger({ serviceName: 'consumer-test', logLevel: 'SILENT' }),
      onBatchSettled: (batch) => counts.push({ ...batch }),
    },
  );
}

describe('several versions of one order in one batch', () => {
  it('writes only the highest and acknowledges the others as stale', async () => {
    const { orders, puts } = table();
    const counts: Array<Record<string, number>> = [];
    const event: SQSEvent = {
      Records: [
        record('a', 7, 1),
        record('b', 7, 3),
        record('c', 8, 1),
        record('d', 7, 2),
        record('e', 7, 3),
      ],
    };

    const response = await handlerFor(orders, counts)(event, lambdaContext('consumer', 30_000));

    expect(response).toEqual({ batchItemFailures: [] });
    expect(puts.sort()).toEqual(['7@3', '8@1']);
    expect(counts).toEqual([{ applied: 2, stale: 3, failed: 0 }]);
    expect(
      orders
        .items()
        .map((item) => [item.orderId, item.version])
        .sort(),
    ).toEqual([
      [7, 3],
      [8, 1],
    ]);
  });

  it('fails the lower versions with the highest when its write fails, so all are redelivered', async () => {
    const { orders, puts } = table(3);
    const counts: Array<Record<string, number>> = [];
    const event: SQSEvent = { Records: [record('a', 7, 1), record('b', 7, 3), record('c', 8, 1)] };

    const response = await handlerFor(orders, counts)(event, lambdaContext('consumer', 30_000));

    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(['a', 'b']);
    expect(puts.sort()).toEqual(['7@3', '8@1']);
    expect(counts).toEqual([{ applied: 1, stale: 0, failed: 2 }]);
    expect(orders.items().map((item) => item.orderId)).toEqual([8]);
  });
});
