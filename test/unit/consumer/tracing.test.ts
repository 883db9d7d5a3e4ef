// The consumer's spans and batch line (issue 12 point 3), through the tracing port with a recording fake:
// one span per batch, one per record inside it annotated with the order id and version (strings: int64
// exact) and the correlation id of the run that produced it; and one INFO line per batch naming those runs.
import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createConsumerHandler } from '../../../functions/consumer/create-handler.js';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import type { Int64 } from '../../../functions/core/model/int64.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { MemoryOrdersTable, RecordingTracing, sqsRecord } from '../../support/fakes.js';

/** A message of order `id` at `version` from the run and page `correlationId` (body and attribute). */
function message(messageId: string, id: Int64, version: Int64, correlationId: string): SQSRecord {
  const built = buildOrderVersionMessage(
    { ...toOrder(sampleOrder()), id, version },
    {
      feedId: 'f',
      pageId: null,
      fetchedAt: '2024-05-01T08:00:00.000Z',
      findings: [],
      correlationId,
      origin: 'poll',
    },
  );
  return sqsRecord(messageId, built.body, correlationId);
}

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

const MAX_INT64 = 2n ** 63n - 1n;

function build() {
  const tracing = new RecordingTracing();
  const handler = createConsumerHandler({
    orders: new MemoryOrdersTable(),
    logger: new Logger({ serviceName: 'consumer-test', logLevel: 'INFO' }),
    metrics: { count: () => undefined, publish: () => undefined },
    tracing,
  });
  return { handler, tracing };
}

/** v2 and v1 of order 9 (v1 found stale: v2 is written first), order 2^63-1, and a body that fails validation. */
const batch: SQSEvent = {
  Records: [
    message('m-1', 9, 2, 'poll:req-1:3'),
    message('m-2', 9, 1, 'poll:req-1:2'),
    message('m-3', MAX_INT64, 5, 'poll:req-1:3'),
    sqsRecord('m-4', '{"schemaVersion":1,"order":{}}', 'reconcile:req-2'),
  ],
};

describe('consumer spans', () => {
  it('one per batch, with one per record inside it: order id and version as exact strings, correlation id', async () => {
    const { handler, tracing } = build();

    await logsOf(() => handler(batch, lambdaContext('consumer', 30_000)));

    const [batchSpan, ...others] = tracing.named('## order batch');
    expect(others).toEqual([]);
    expect(batchSpan).toMatchObject({
      annotations: {},
      details: { records: 4, applied: 2, stale: 1, failed: 1 },
      parent: undefined,
      ended: true,
    });
    const records = tracing.named('### order version');
    expect(records.map((span) => [span.annotations, span.details, span.error])).toEqual(
      expect.arrayContaining([
        [{ orderId: '9', version: '2', correlationId: 'poll:req-1:3' }, { outcome: 'applied' }, undefined],
        [{ orderId: '9', version: '1', correlationId: 'poll:req-1:2' }, { outcome: 'stale' }, undefined],
        [
          { orderId: '9223372036854775807', version: '5', correlationId: 'poll:req-1:3' },
          { outcome: 'applied' },
          undefined,
        ],
        // No valid body: the correlation id comes from the attribute, and the span carries the error.
        [{ correlationId: 'reconcile:req-2' }, {}, expect.stringMatching(/^OrderVersionMessageError: /)],
      ]),
    );
    expect(records).toHaveLength(4);
    for (const span of records) expect(span.parent).toBe(batchSpan);
  });

  it('writes one INFO line per batch with its counts and the distinct correlation ids of its records', async () => {
    const { handler } = build();

    const lines = await logsOf(() => handler(batch, lambdaContext('consumer', 30_000)));

    const batchLines = lines.filter((line) => line.message === 'order version batch processed');
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

  it('names at most 10 correlation ids in that line, and how many more there were', async () => {
    const { handler } = build();
    const records = Array.from({ length: 12 }, (_, page) =>
      message(`m-${page}`, 100 + page, 1, `poll:req-1:${page + 1}`),
    );

    const lines = await logsOf(() =>
      handler({ Records: [...records, sqsRecord('m-none', '{}')] }, lambdaContext('consumer', 30_000)),
    );

    const batchLine = lines.find((line) => line.message === 'order version batch processed');
    expect(batchLine).toMatchObject({
      applied: 12,
      failed: 1,
      correlationIds: Array.from({ length: 10 }, (_, page) => `poll:req-1:${page + 1}`),
      moreCorrelationIds: 2,
    });
  });
});
