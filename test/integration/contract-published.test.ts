// What the pipeline really publishes matches the AsyncAPI document (issue 12 point 4) and names the run
// that produced it (point 3): the real poller handler against the partner simulator over HTTP and moto,
// every message on the orders queue and a downstream queue checked against the document's payload schema
// (its `$ref` to the JSON Schema) and headers (the SQS attributes); then the consumer applies them and each
// orders table item carries the correlation id of the version it holds.
import { ChangeMessageVisibilityCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import {
  type AwsClients,
  createPipelineResources,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  scanOrders,
  TEST_TOKEN,
  useEmulator,
} from '../../tools/harness/pipeline.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { headersOf, validateHeaders, validatePayload } from '../support/asyncapi.js';
import { handlersFor } from '../support/handlers.js';
import { type RunningMoto, startMoto } from '../support/moto.js';

let moto: RunningMoto;
let aws: AwsClients;
let sim: RunningSimulator;
let resources: PipelineResources;

beforeAll(async () => {
  moto = await startMoto();
  aws = useEmulator(moto);
  sim = await startSimulator({ token: TEST_TOKEN, feed: { seed: 5, orders: 25, vendors: 2 } });
});
afterAll(async () => {
  await sim?.close();
  await moto?.stop();
});
beforeEach(async () => {
  await moto.reset();
  resources = await createPipelineResources(aws);
});

/** Every message on the queue, with its attributes; hidden until `release` makes them visible again. */
async function receiveWithAttributes(queueUrl: string): Promise<Message[]> {
  const messages: Message[] = [];
  for (;;) {
    const output = await aws.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 60,
        MessageAttributeNames: ['All'],
      }),
    );
    if (!output.Messages?.length) return messages;
    messages.push(...output.Messages);
  }
}

async function release(queueUrl: string, messages: readonly Message[]): Promise<void> {
  for (const message of messages) {
    await aws.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: message.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
  }
}

const POLL_CORRELATION = /^poll:([0-9a-f-]{36}):(\d+)$/;

describe('messages the pipeline published', () => {
  it('match the AsyncAPI document and name the poll run and page that fetched them', async () => {
    // Three pages per run: the feed takes more than one run, so run ids and page numbers both vary.
    const handlers = handlersFor(aws, pipelineEnv(resources, sim.url, { MAX_PAGES_PER_RUN: '3' }));
    const outcomes = [];
    for (let run = 0; run < 10; run++) {
      const outcome = await handlers.poll();
      outcomes.push(outcome);
      if (outcome.kind === 'caught-up') break;
    }
    expect(outcomes.at(-1)?.kind).toBe('caught-up');
    expect(outcomes.length).toBeGreaterThan(1);

    const ordersQueue = await receiveWithAttributes(resources.ordersQueueUrl);
    const downstream = await receiveWithAttributes(resources.downstreamQueueUrl);
    const published = outcomes.reduce((sum, outcome) => sum + outcome.versionsPublished, 0);
    expect(ordersQueue).toHaveLength(published);
    expect(downstream).toHaveLength(published);

    for (const message of [...ordersQueue, ...downstream]) {
      const headers = headersOf(message.MessageAttributes ?? {});
      // JSON.parse suffices for the schema: the simulator's ids fit in 2^53 (int64 exactness is tested elsewhere).
      const body = JSON.parse(message.Body ?? '');
      expect(validatePayload(body), JSON.stringify(validatePayload.errors)).toBe(true);
      expect(validateHeaders(headers), JSON.stringify(validateHeaders.errors)).toBe(true);
      expect(body.source.origin).toBe('poll');
      expect(headers.correlationId).toBe(body.source.correlationId);
      expect(body.source.correlationId).toMatch(POLL_CORRELATION);
    }

    // One run id per invocation; its pages numbered 1, 2, … as many as the run fetched with data.
    const pagesByRun = new Map<string, Set<number>>();
    for (const message of ordersQueue) {
      const [, runId = '', page = ''] =
        POLL_CORRELATION.exec(message.MessageAttributes?.correlationId?.StringValue ?? '') ?? [];
      pagesByRun.set(runId, (pagesByRun.get(runId) ?? new Set()).add(Number(page)));
    }
    const runsWithData = outcomes.filter((outcome) => outcome.versionsPublished > 0);
    expect(pagesByRun.size).toBe(runsWithData.length);
    for (const pages of pagesByRun.values()) {
      expect([...pages].sort((a, b) => a - b)).toEqual(
        Array.from({ length: pages.size }, (_, index) => index + 1),
      );
    }

    // The consumer applies them: each row names the run and page of the version it holds.
    await release(resources.ordersQueueUrl, ordersQueue);
    await drainQueue(aws, resources.ordersQueueUrl, handlers);
    const sentByVersion = new Map(
      ordersQueue.map((message) => {
        const { order, source } = parseOrderVersionMessage(message.Body ?? '');
        return [`${order.id}/${order.version}`, source.correlationId];
      }),
    );
    const rows = [...(await scanOrders(aws, resources.ordersTable)).values()];
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.correlationId, `order ${row.id}`).toBe(sentByVersion.get(`${row.id}/${row.version}`));
    }
  });
});
