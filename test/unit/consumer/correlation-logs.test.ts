// The consumer carries each message's correlation id on (issue 12 point 3): its log lines for a record
// name the run that produced it, also when the body fails validation (the id is read from the attribute).
import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createConsumerHandler } from '../../../functions/consumer/create-handler.js';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { MemoryOrdersTable, sqsRecord } from '../../support/fakes.js';

/** The JSON log lines the handler writes while `act` runs (Powertools writes them to stdout/stderr). */
async function logsOf(act: () => Promise<unknown>): Promise<Array<Record<string, unknown>>> {
  const written: string[] = [];
  const capture = (chunk: unknown) => {
    written.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  await act();
  vi.restoreAllMocks();
  return written
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

afterEach(() => vi.restoreAllMocks());

describe('consumer log lines carry the correlation id', () => {
  it('on each processed record (DEBUG) and on a failed one (ERROR)', async () => {
    const handler = createConsumerHandler({
      orders: new MemoryOrdersTable(),
      logger: new Logger({ serviceName: 'consumer-test', logLevel: 'DEBUG' }),
      metrics: { count: () => undefined, publish: () => undefined },
    });
    const good = buildOrderVersionMessage(toOrder(sampleOrder({ id: 9, version: 2 })), {
      feedId: 'f',
      pageId: null,
      fetchedAt: '2024-05-01T08:00:00.000Z',
      findings: [],
      correlationId: 'poll:req-1:3',
      origin: 'poll',
    });
    const event: SQSEvent = {
      Records: [
        sqsRecord('m-1', good.body, 'poll:req-1:3'),
        sqsRecord('m-2', '{"schemaVersion":1,"order":{}}', 'reconcile:req-2'),
      ],
    };

    let response: unknown;
    const lines = await logsOf(async () => {
      response = await handler(event, lambdaContext('consumer', 30_000));
    });

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-2' }] });
    expect(lines.find((line) => line.messageId === 'm-1')).toMatchObject({
      level: 'DEBUG',
      message: 'order version message processed',
      correlationId: 'poll:req-1:3',
      orderId: 9,
      version: 2,
      outcome: 'applied',
    });
    expect(lines.find((line) => line.messageId === 'm-2')).toMatchObject({
      level: 'ERROR',
      correlationId: 'reconcile:req-2',
    });
  });
});
