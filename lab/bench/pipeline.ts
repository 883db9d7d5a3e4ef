// Sections 2 and 5 (and the measured inputs of 3 and 6): the real handlers against moto and the
// partner simulator, with every AWS call of the handlers and of the emulated SQS event source going
// through the intercepting proxy, and the emulator's own ceiling for the same work measured alongside.
//
// moto's SQS scans the whole queue on every send and receive (measured here: a 10-message send takes
// 24 ms on an empty queue, 180 ms at 1,000 messages, 440 ms at 2,000), so a backlog left in a queue
// would make the emulator, not the code, the subject of the bench. Both runs therefore go one page
// at a time, and the queues never hold more than one page:
//   pipeline, per page: one poller invocation (MAX_PAGES_PER_RUN=1: lease, GET, publish to both queues,
//                       commit, release), then the emulated event source drains the orders queue
//                       (Receive 10 → consumer handler → DeleteMessageBatch)
//   ceiling,  per page: SendMessageBatch of the same messages to both queues (10 per call, all at once),
//                       then Receive 10 → the same conditional PutItems of the same items (10 in
//                       parallel) → DeleteMessageBatch on the orders queue, until it is empty
// In both, the downstream queue is then emptied by the harness, directly against moto (a subscriber's
// work: not timed, not counted). moto serves one request at a time, so nothing is gained by overlap.
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { type Item, itemSize } from '../../functions/core/adapters/dynamo-item-size.js';
import { toBatches } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { ORDERS_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import type { OutgoingMessage } from '../../functions/core/contract/order-version-message.js';
import type { PollOutcome } from '../../functions/core/ingest/poll-feed.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import { createAwsClients } from '../../tools/aws.js';
import {
  type AwsClients,
  createPipelineResources,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  scanOrders,
} from '../../tools/harness/pipeline.js';
import { singleFeedPoller } from '../../tools/harness/single-feed.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { EMULATOR_ENV, type RunningMoto } from '../../tools/local/moto.js';
import type { RunningSimulator } from '../../tools/simulator/index.js';
import { type AwsCall, countByOperation, meanMsByOperation, startInterceptingProxy } from '../aws-proxy.js';
import type { PreparedFeed } from './cpu.js';
import { type IndexShape, putWriteUnits, writeUnits } from './write-units.js';

export interface PipelineSettings {
  pageSize: number;
  maxPagesPerRun: number;
  pollerTimeoutMs: number;
  consumerTimeoutMs: number;
  consumerBatchSize: number;
}

export interface PhaseCalls {
  calls: AwsCall[];
  counts: Record<string, number>;
  meanMs: Record<string, number>;
}

function phaseCalls(calls: AwsCall[]): PhaseCalls {
  return { calls, counts: countByOperation(calls), meanMs: meanMsByOperation(calls) };
}

export interface PipelineMeasurement {
  versions: number;
  queues: number;
  publish: {
    /** Sum of the poller handler's durations (one page per run). */
    wallMs: number;
    runs: number;
    outcomes: Record<string, number>;
    pages: number;
    partnerGets: number;
    logBytes: number;
    calls: PhaseCalls;
  };
  consume: {
    /** Sum of the event source's drain loops (receive, handler, delete). */
    wallMs: number;
    invocations: number;
    handlerMs: number;
    receives: number;
    emptyReceives: number;
    logBytes: number;
    calls: PhaseCalls;
  };
  writes: {
    putItems: number;
    applied: number;
    conditionFailed: number;
    tableWriteUnits: number;
    indexWriteUnits: number;
    floorWriteUnits: number;
    meanStoredItemBytes: number;
    /** The history table's conditional PutItems (0 with history off). */
    historyPutItems: number;
    historyWriteUnits: number;
    /** One more conditional write per version: each version's orders table item, written once more. */
    historyFloorWriteUnits: number;
    /** Mean size of a history item (DynamoDB's rules), for its storage cost. */
    meanHistoryItemBytes: number;
  };
  /** Chunks of 64 KB billed for the handlers' and the event source's SQS calls (empty receives excluded). */
  sqsBilledRequests: number;
  dynamoReadUnits: number;
}

export interface CeilingMeasurement {
  versions: number;
  publishMs: number;
  consumeMs: number;
  wallMs: number;
  /** Mean time of one batch's parallel conditional PutItems (the floor of a consumer invocation here). */
  putGroupMs: number;
  putGroups: number;
  counts: Record<string, number>;
  meanMs: Record<string, number>;
}

const ORDERS_INDEXES: IndexShape[] = [
  {
    keyAttributes: [
      ORDERS_TABLE_SCHEMA.salesIndex.partitionKey.name,
      ORDERS_TABLE_SCHEMA.salesIndex.sortKey.name,
    ],
    projected: [ORDERS_TABLE_SCHEMA.partitionKey.name, ...ORDERS_TABLE_SCHEMA.salesIndex.nonKeyAttributes],
  },
];

/** SDK clients bound to one endpoint explicitly (never through AWS_ENDPOINT_URL, which the handlers use). */
function harnessClients(endpoint: string): AwsClients {
  // Dummy credentials and region for every client in this process, the handlers' included.
  Object.assign(process.env, EMULATOR_ENV);
  return createAwsClients(endpoint, EMULATOR_ENV);
}

/** Counts (and swallows) what the handlers print to stdout/stderr: their logs and EMF metrics. */
function captureOutput(): { stop(): number } {
  let bytes = 0;
  const originals = { out: process.stdout.write, err: process.stderr.write };
  const counter = (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
    bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    const callback = rest.find((arg): arg is () => void => typeof arg === 'function');
    callback?.();
    return true;
  };
  process.stdout.write = counter as typeof process.stdout.write;
  process.stderr.write = counter as typeof process.stderr.write;
  return {
    stop() {
      process.stdout.write = originals.out;
      process.stderr.write = originals.err;
      return bytes;
    },
  };
}

function sqsChunks(calls: readonly AwsCall[], chunkBytes: number): number {
  return calls
    .filter((call) => call.service === 'sqs')
    .reduce(
      (sum, call) =>
        sum + Math.max(1, Math.ceil(Math.max(call.requestBytes, call.responseBytes) / chunkBytes)),
      0,
    );
}

const CONDITION = {
  ConditionExpression: 'attribute_not_exists(orderId) OR #version < :version',
  ExpressionAttributeNames: { '#version': 'version' },
  ReturnValues: 'ALL_OLD',
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
} as const;

async function putItem(
  dynamo: DynamoDBClient,
  table: string,
  itemByVersion: ReadonlyMap<string, Item>,
  record: SQSRecord,
): Promise<void> {
  const key = `${record.messageAttributes.orderId?.stringValue}#${record.messageAttributes.version?.stringValue}`;
  const item = itemByVersion.get(key);
  if (!item) throw new Error(`ceiling: no item for ${key}`);
  try {
    await dynamo.send(
      new PutItemCommand({
        TableName: table,
        Item: item,
        ...CONDITION,
        ExpressionAttributeValues: { ':version': item.version ?? { N: '0' } },
      }),
    );
  } catch (error) {
    if (!(error instanceof Error && error.name === 'ConditionalCheckFailedException')) throw error;
  }
}

/** The event source as the stack configures it, failed records back at once. */
function eventSource(settings: PipelineSettings) {
  return { batchSize: settings.consumerBatchSize, timeoutMs: settings.consumerTimeoutMs };
}

/** Receives and deletes until the queue is empty (the stand-in for a downstream subscriber). */
function emptyQueue(aws: AwsClients, queueUrl: string): Promise<unknown> {
  return drainQueue(aws, queueUrl, { consume: async () => ({ batchItemFailures: [] }) });
}

/** The emulator doing the pipeline's AWS work with no processing: see the module comment. */
export async function measureCeiling(
  moto: RunningMoto,
  pages: ReadonlyArray<readonly OutgoingMessage[]>,
  items: ReadonlyArray<Record<string, unknown>>,
  settings: PipelineSettings,
): Promise<CeilingMeasurement> {
  await moto.reset();
  const proxy = await startInterceptingProxy(moto.port);
  try {
    const harness = harnessClients(moto.endpoint);
    const resources = await createPipelineResources(harness);
    const endpoint = `http://127.0.0.1:${proxy.port}`;
    const dynamo = new DynamoDBClient({ endpoint });
    const sqs = new SQSClient({ endpoint, useQueueUrlAsEndpoint: false });
    const queueUrls = [resources.ordersQueueUrl, resources.downstreamQueueUrl];
    const itemByVersion = new Map<string, Item>();
    for (const item of items) {
      itemByVersion.set(
        `${String(item.orderId)}#${String(item.version)}`,
        marshall(item, { removeUndefinedValues: true }),
      );
    }

    let publishMs = 0;
    let consumeMs = 0;
    let putGroupMs = 0;
    let putGroups = 0;
    for (const page of pages) {
      const published = performance.now();
      const batches = toBatches(page);
      await Promise.all(
        queueUrls.flatMap((queueUrl) =>
          batches.map((batch) =>
            sqs.send(
              new SendMessageBatchCommand({
                QueueUrl: queueUrl,
                Entries: batch.map((message, index) => ({
                  Id: String(index),
                  MessageBody: message.body,
                  MessageAttributes: message.attributes,
                })),
              }),
            ),
          ),
        ),
      );
      const consumed = performance.now();
      publishMs += consumed - published;
      // The event source's receive → delete cycle around the bare PutItems of the batch.
      const putBatch = async (event: SQSEvent) => {
        const groupStarted = performance.now();
        await Promise.all(
          event.Records.map((record) => putItem(dynamo, resources.ordersTable, itemByVersion, record)),
        );
        putGroupMs += performance.now() - groupStarted;
        putGroups += 1;
        return { batchItemFailures: [] };
      };
      await drainQueue({ sqs }, resources.ordersQueueUrl, { consume: putBatch }, eventSource(settings));
      consumeMs += performance.now() - consumed;
      await emptyQueue(harness, resources.downstreamQueueUrl);
    }
    return {
      versions: pages.reduce((sum, page) => sum + page.length, 0),
      publishMs,
      consumeMs,
      wallMs: publishMs + consumeMs,
      putGroupMs: putGroupMs / Math.max(1, putGroups),
      putGroups,
      counts: countByOperation(proxy.calls),
      meanMs: meanMsByOperation(proxy.calls),
    };
  } finally {
    await proxy.close();
  }
}

export interface PipelineInputs {
  moto: RunningMoto;
  sim: RunningSimulator;
  token: string;
  feed: PreparedFeed;
  settings: PipelineSettings;
  sqsChunkBytes: number;
  /** Whether the consumer keeps the history (the stack's default: on). */
  history?: boolean;
}

/**
 * The real pipeline: the handlers built by their factories from the environment the stack gives them,
 * with AWS clients that talk to moto through the intercepting proxy.
 */
export async function measurePipeline(inputs: PipelineInputs): Promise<PipelineMeasurement> {
  const { moto, sim, feed, settings } = inputs;
  await moto.reset();
  const proxy = await startInterceptingProxy(moto.port);
  try {
    const harness = harnessClients(moto.endpoint);
    const resources = await createPipelineResources(harness, { token: inputs.token });
    const endpoint = `http://127.0.0.1:${proxy.port}`;
    const env = handlerEnv(resources, sim.url, settings);
    if (inputs.history === false) delete env.HISTORY_TABLE_NAME;
    const clients = harnessClients(endpoint);
    // As deployed (handlerEnv): INFO logs and EMF metrics on stdout (their bytes are the log ingestion cost).
    const fleetPoller = singleFeedPoller(clients, env, createObservability('order-feed-poller', env));
    const poller = (_event: unknown, context: Context) => fleetPoller.poll(context);
    const consumer = buildConsumer(
      clients,
      loadConsumerConfig(env),
      createObservability('order-feed-consumer', env),
    );
    const eventSourceSqs = new SQSClient({ endpoint, useQueueUrlAsEndpoint: false });

    const simBefore = sim.requests.length;
    const publishCalls: AwsCall[] = [];
    const consumeCalls: AwsCall[] = [];
    const outcomes: PollOutcome[] = [];
    const poll = { ms: 0, logBytes: 0 };
    const consume = { ms: 0, handlerMs: 0, invocations: 0, receives: 0, emptyReceives: 0, logBytes: 0 };
    const timedConsumer = async (event: SQSEvent, context: Context) => {
      const output = captureOutput();
      const invoked = performance.now();
      try {
        return await consumer(event, context);
      } finally {
        consume.handlerMs += performance.now() - invoked;
        consume.invocations += 1;
        consume.logBytes += output.stop();
      }
    };
    while (outcomes.at(-1)?.kind !== 'caught-up') {
      if (outcomes.length > 10_000) throw new Error('poller did not catch up within 10,000 runs');
      // One scheduled run (one page: see the module comment).
      let from = proxy.calls.length;
      const output = captureOutput();
      const invoked = performance.now();
      let outcome: PollOutcome;
      try {
        outcome = await poller({}, lambdaContext('poller', settings.pollerTimeoutMs));
      } finally {
        poll.ms += performance.now() - invoked;
        poll.logBytes += output.stop();
      }
      if (outcome.failed) throw new Error(`poller run failed: ${outcome.kind}`);
      outcomes.push(outcome);
      publishCalls.push(...proxy.calls.slice(from));

      // The emulated event source until the orders queue is empty.
      from = proxy.calls.length;
      const consumed = performance.now();
      const drained = await drainQueue(
        { sqs: eventSourceSqs },
        resources.ordersQueueUrl,
        { consume: timedConsumer },
        eventSource(settings),
      );
      // Every batch received, and the empty receive that ended the drain.
      consume.receives += drained.batches + 1;
      consume.emptyReceives += 1;
      if (drained.failed > 0 || drained.crashes > 0)
        throw new Error('consumer failed a message in a fault-free run');
      consume.ms += performance.now() - consumed;
      consumeCalls.push(...proxy.calls.slice(from));
      await emptyQueue(harness, resources.downstreamQueueUrl);
    }
    const partnerGets = sim.requests.length - simBefore;

    await checkFinalState(harness, resources, sim, feed);
    const writes = writeUnitsOf([...publishCalls, ...consumeCalls], resources, feed);
    const allCalls = [...publishCalls, ...consumeCalls];
    const otherDynamo = allCalls.filter(
      (call) =>
        call.service === 'dynamodb' &&
        !(
          call.operation === 'PutItem' &&
          (call.table === resources.ordersTable || call.table === resources.historyTable)
        ),
    );
    return {
      versions: feed.versions,
      queues: 2,
      publish: {
        wallMs: poll.ms,
        runs: outcomes.length,
        outcomes: countOutcomes(outcomes),
        pages: outcomes.reduce((sum, outcome) => sum + outcome.pages, 0),
        partnerGets,
        logBytes: poll.logBytes,
        calls: phaseCalls(publishCalls),
      },
      consume: {
        wallMs: consume.ms,
        invocations: consume.invocations,
        handlerMs: consume.handlerMs,
        receives: consume.receives,
        emptyReceives: consume.emptyReceives,
        logBytes: consume.logBytes,
        calls: phaseCalls(consumeCalls),
      },
      writes,
      // Less the empty receive that ends each of the bench's drains (on AWS the event source long-polls
      // continuously; what an idle queue costs is per hour, not per version).
      sqsBilledRequests: sqsChunks(allCalls, inputs.sqsChunkBytes) - consume.emptyReceives,
      // The cursor store only writes (UpdateItem on an item far below 1 KB); nothing in the pipeline reads.
      dynamoReadUnits: otherDynamo.filter((call) => /^(Get|Query|Scan|BatchGet)/.test(call.operation)).length,
    };
  } finally {
    await proxy.close();
  }
}

function countOutcomes(outcomes: readonly PollOutcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[outcome.kind] = (counts[outcome.kind] ?? 0) + 1;
  return counts;
}

function handlerEnv(
  resources: PipelineResources,
  partnerUrl: string,
  settings: PipelineSettings,
): Record<string, string> {
  const env = pipelineEnv(resources, partnerUrl, {
    PAGE_SIZE: String(settings.pageSize),
    MAX_PAGES_PER_RUN: '1',
    // As deployed: INFO logs and EMF metrics on stdout (their bytes are the log ingestion cost).
    POWERTOOLS_LOG_LEVEL: 'INFO',
    POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedIngester',
  });
  delete env.POWERTOOLS_METRICS_DISABLED;
  return env;
}

/**
 * Write units of the orders and history tables' PutItems, from the items as sent, in the order moto applied
 * them.
 */
function writeUnitsOf(
  calls: readonly AwsCall[],
  resources: Pick<PipelineResources, 'ordersTable' | 'historyTable'>,
  feed: PreparedFeed,
): PipelineMeasurement['writes'] {
  const table = resources.ordersTable;
  const history = historyWriteUnitsOf(calls, resources.historyTable);
  const stored = new Map<string, Item>();
  let tableUnits = 0;
  let indexUnits = 0;
  let applied = 0;
  let conditionFailed = 0;
  let putItems = 0;
  for (const call of calls) {
    const item = call.body?.Item as Item | undefined;
    if (call.service !== 'dynamodb' || call.operation !== 'PutItem' || call.table !== table || !item)
      continue;
    putItems += 1;
    const key = item.orderId?.N ?? '';
    const before = stored.get(key);
    if (call.status === 200) {
      applied += 1;
      const units = putWriteUnits(before, item, ORDERS_INDEXES);
      tableUnits += units.table;
      indexUnits += units.indexes;
      stored.set(key, item);
    } else {
      // A failed condition is charged the size of the item it was evaluated against.
      conditionFailed += 1;
      tableUnits += writeUnits(before ? itemSize(before) : 0);
    }
  }
  // Floor: each version's normalised order, stored once, alone (no ledger attributes, no index entry).
  let floorUnits = 0;
  for (const body of feed.bodies) {
    const { order } = JSON.parse(body) as { order: Record<string, unknown> };
    floorUnits += writeUnits(itemSize(marshall(order, { removeUndefinedValues: true })));
  }
  const storedSizes = [...stored.values()].map(itemSize);
  return {
    putItems,
    applied,
    conditionFailed,
    tableWriteUnits: tableUnits,
    indexWriteUnits: indexUnits,
    floorWriteUnits: floorUnits,
    meanStoredItemBytes: storedSizes.reduce((a, b) => a + b, 0) / Math.max(1, storedSizes.length),
    ...history,
  };
}

/** The history's conditional PutItems: a write per new (orderId, version); a failed condition is charged too. */
function historyWriteUnitsOf(calls: readonly AwsCall[], historyTable: string) {
  const kept = new Map<string, Item>();
  let historyPutItems = 0;
  let historyWriteUnits = 0;
  for (const call of calls) {
    const item = call.body?.Item as Item | undefined;
    if (call.service !== 'dynamodb' || call.operation !== 'PutItem' || call.table !== historyTable || !item)
      continue;
    const key = `${item.orderId?.N}#${item.version?.N}`;
    historyPutItems += 1;
    const existing = kept.get(key);
    historyWriteUnits += writeUnits(itemSize(existing ?? item));
    if (call.status === 200 && !existing) kept.set(key, item);
  }
  const sizes = [...kept.values()].map(itemSize);
  // Floor: each version's orders table item (the history item less what only the history adds), written once.
  const ordersItemUnits = [...kept.values()].map((item) => {
    const { fetchedAt, storedAt, feedId, expiresAt, arrivedAfterVersion, ...ordersItem } = item;
    return writeUnits(itemSize(ordersItem));
  });
  return {
    historyPutItems,
    historyWriteUnits,
    historyFloorWriteUnits: ordersItemUnits.reduce((a, b) => a + b, 0),
    meanHistoryItemBytes: sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length),
  };
}

/** A bench of a broken pipeline means nothing: the table must hold the feed's latest versions. */
async function checkFinalState(
  aws: AwsClients,
  resources: PipelineResources,
  sim: RunningSimulator,
  feed: PreparedFeed,
): Promise<void> {
  const expected = sim.expected();
  const orders = await scanOrders(aws, resources.ordersTable);
  if (expected.distinctVersions !== feed.versions + feed.quarantined) {
    throw new Error(`feed has ${expected.distinctVersions} versions, the bench prepared ${feed.versions}`);
  }
  for (const [id, order] of expected.orders) {
    if (orders.get(id)?.version !== order.version) {
      throw new Error(
        `order ${id}: stored version ${String(orders.get(id)?.version)}, expected ${order.version}`,
      );
    }
  }
  if (orders.size !== expected.orders.size) {
    throw new Error(`orders table has ${orders.size} orders, expected ${expected.orders.size}`);
  }
}
