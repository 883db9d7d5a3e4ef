// backfill: sends the latest stored version of every order to one subscriber's queue, so a service that
// joins late gets the current state before (and alongside) the live stream. Each message follows the
// contract (functions/core/contract/order-version-message.ts) with origin "backfill" and correlationId
// `backfill:<runId>`; duplicates and interleaving with live versions are already part of the contract
// (consumers apply by version).
//
// Flow: scan the orders table (exact int64 reads) → rebuild each order from its item → send in batches of
// up to 10 at the chosen rate → after every batch, write a checkpoint (the last order id sent) into the
// cursor table under `#backfill/<subscriber>`, a key no feed id can take. Ctrl-C, a crash or
// --max-messages stop the run; the next run resumes after the checkpoint with the same runId (a batch sent
// but not checkpointed is sent again: a duplicate, never a gap). A finished backfill starts afresh.
//
// --all-versions scans the order history table instead (key orderId + version): a scan returns each
// order's versions together in ascending version, so every stored version is sent, each order's versions
// ascending, with the fetchedAt and feedId it was stored with. Its checkpoint (the last orderId and version
// sent) is kept under `#backfill/<subscriber>/all-versions`, apart from the latest-version backfill's.
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { ORDERS_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import {
  buildOrderVersionMessage,
  type OutgoingMessage,
  runCorrelationId,
} from '../../functions/core/contract/order-version-message.js';
import type { OrderVersionPublisher } from '../../functions/core/ingest/ports.js';
import type { AwsAt } from '../aws.js';
import { orderOfStoredItem, UnreadableItemError } from '../store/stored-order.js';

const KEY = ORDERS_TABLE_SCHEMA.partitionKey.name;
/** The order history table's sort key (its partition key is the orders table's). */
const VERSION = 'version';
/** SendMessageBatch's limit. */
const MAX_BATCH = 10;
const SCAN_PAGE = 100;

export interface Checkpoint {
  runId: string;
  status: 'running' | 'done';
  /** The orders table key (orderId, as its exact decimal text) of the last order sent. */
  lastOrderId: string | undefined;
  /** --all-versions: the history table's sort key (version, exact decimal text) of the last version sent. */
  lastVersion?: string | undefined;
  sent: number;
  startedAt: string;
  updatedAt: string;
}

export interface BackfillPorts {
  /**
   * Up to `limit` items after `afterOrderId` (and, in the history table, `afterVersion`) in scan order, and
   * whether the scan has more.
   */
  scan(
    afterOrderId: string | undefined,
    limit: number,
    afterVersion?: string,
  ): Promise<{ items: Array<Record<string, AttributeValue>>; more: boolean }>;
  readCheckpoint(): Promise<Checkpoint | undefined>;
  writeCheckpoint(checkpoint: Checkpoint): Promise<void>;
  publisher: OrderVersionPublisher;
  /** Approximate number of orders, for the progress line. */
  estimateTotal(): Promise<number | undefined>;
  now(): number;
  sleep(ms: number): Promise<void>;
}

export interface BackfillRequest {
  subscriber: string;
  feedId: string;
  /** Messages per second. */
  rate: number;
  maxMessages: number | undefined;
  restart: boolean;
  /** The ports read the order history table: messages keep each version's fetchedAt and feedId. */
  allVersions?: boolean;
  signal?: AbortSignal;
  progress: (line: string) => void;
}

export interface BackfillSummary {
  subscriber: string;
  runId: string;
  correlationId: string;
  resumed: boolean;
  /** Sent by this invocation. */
  sent: number;
  /** Sent by the whole backfill run, over all its invocations. */
  sentTotal: number;
  /** Items that could not be read back into an order (named in `skippedIds`). */
  skipped: number;
  skippedIds: string[];
  finished: boolean;
  /** Why it stopped before the end, if it did. */
  stoppedBy: 'interrupt' | 'max-messages' | undefined;
  elapsedMs: number;
}

export async function runBackfill(ports: BackfillPorts, request: BackfillRequest): Promise<BackfillSummary> {
  const startedMs = ports.now();
  const previous = await ports.readCheckpoint();
  // Only a latest-version run's own checkpoint is resumed by one: before 2026-11-25 an unfinished
  // `--all-versions` run wrote its checkpoint (with `lastVersion`) under this key, and resuming it would
  // skip every order before its `lastOrderId`.
  const resumed =
    previous?.status === 'running' &&
    !request.restart &&
    (request.allVersions === true || previous.lastVersion === undefined);
  const checkpoint: Checkpoint = resumed
    ? { ...previous }
    : {
        runId: randomUUID(),
        status: 'running',
        lastOrderId: undefined,
        sent: 0,
        startedAt: new Date(startedMs).toISOString(),
        updatedAt: new Date(startedMs).toISOString(),
      };
  if (!resumed) await ports.writeCheckpoint(checkpoint);
  const correlationId = runCorrelationId('backfill', checkpoint.runId);
  const total = await ports.estimateTotal();
  const batchSize = Math.min(MAX_BATCH, request.rate);
  const summary: BackfillSummary = {
    subscriber: request.subscriber,
    runId: checkpoint.runId,
    correlationId,
    resumed,
    sent: 0,
    sentTotal: checkpoint.sent,
    skipped: 0,
    skippedIds: [],
    finished: false,
    stoppedBy: undefined,
    elapsedMs: 0,
  };
  const fetchedAt = new Date(startedMs).toISOString();
  const toMessage = (raw: Record<string, AttributeValue>): OutgoingMessage | undefined => {
    try {
      const { order, findings } = orderOfStoredItem(raw);
      const stored = request.allVersions ? raw : {};
      return buildOrderVersionMessage(order, {
        feedId: stored.feedId?.S ?? request.feedId,
        pageId: null,
        fetchedAt: stored.fetchedAt?.S ?? fetchedAt,
        findings,
        correlationId,
        origin: 'backfill',
      });
    } catch (error) {
      if (!(error instanceof UnreadableItemError)) throw error;
      summary.skipped += 1;
      if (summary.skippedIds.length < 20) summary.skippedIds.push(raw[KEY]?.N ?? '?');
      return undefined;
    }
  };

  outer: for (;;) {
    const page = await ports.scan(checkpoint.lastOrderId, SCAN_PAGE, checkpoint.lastVersion);
    for (let start = 0; start < page.items.length; start += batchSize) {
      if (request.signal?.aborted) {
        summary.stoppedBy = 'interrupt';
        break outer;
      }
      let chunk = page.items.slice(start, start + batchSize);
      if (request.maxMessages !== undefined) {
        const left = request.maxMessages - summary.sent;
        if (left <= 0) {
          summary.stoppedBy = 'max-messages';
          break outer;
        }
        chunk = chunk.slice(0, left);
      }
      const messages = chunk.map(toMessage).filter((message) => message !== undefined);
      await ports.publisher.publish(messages);
      summary.sent += messages.length;
      checkpoint.sent += messages.length;
      const last = chunk[chunk.length - 1];
      if (last !== undefined) {
        checkpoint.lastOrderId = last[KEY]?.N ?? checkpoint.lastOrderId;
        if (request.allVersions) checkpoint.lastVersion = last[VERSION]?.N;
      }
      checkpoint.updatedAt = new Date(ports.now()).toISOString();
      await ports.writeCheckpoint(checkpoint);
      const elapsed = ports.now() - startedMs;
      request.progress(
        `backfill ${request.subscriber}: ${checkpoint.sent}${total === undefined ? '' : ` of ~${total}`} sent` +
          ` (${elapsed > 0 ? Math.round((summary.sent * 1000) / elapsed) : summary.sent}/s)`,
      );
      // Pace: this invocation's sends never run ahead of `rate` per second on average.
      const due = startedMs + (summary.sent * 1000) / request.rate;
      const wait = due - ports.now();
      if (wait > 0) await ports.sleep(wait);
      if (chunk.length < Math.min(batchSize, page.items.length - start)) {
        summary.stoppedBy = 'max-messages';
        break outer;
      }
    }
    if (!page.more) {
      summary.finished = true;
      checkpoint.status = 'done';
      checkpoint.updatedAt = new Date(ports.now()).toISOString();
      await ports.writeCheckpoint(checkpoint);
      break;
    }
  }
  summary.sentTotal = checkpoint.sent;
  summary.elapsedMs = ports.now() - startedMs;
  return summary;
}

/** The checkpoint's key in the cursor table: `#` can never start a feed id. */
export const checkpointKey = (subscriber: string, allVersions = false): string =>
  `#backfill/${subscriber}${allVersions ? '/all-versions' : ''}`;

/**
 * The AWS side of the ports: the orders table (or with `historyTable`, the order history table), the
 * cursor table and the subscriber's queue.
 */
export function awsBackfillPorts(
  aws: AwsAt,
  tables: { ordersTable: string; cursorTable: string; historyTable?: string | undefined },
  subscriber: string,
  publisher: OrderVersionPublisher,
): BackfillPorts {
  const allVersions = tables.historyTable !== undefined;
  const table = tables.historyTable ?? tables.ordersTable;
  const key = marshall({ feedId: checkpointKey(subscriber, allVersions) });
  return {
    async scan(afterOrderId, limit, afterVersion) {
      // A scan may resume from any item's key: the last order (and version) sent is enough.
      const start: Record<string, AttributeValue> | undefined =
        afterOrderId === undefined
          ? undefined
          : allVersions
            ? { [KEY]: { N: afterOrderId }, [VERSION]: { N: afterVersion ?? '0' } }
            : { [KEY]: { N: afterOrderId } };
      const output = await aws.dynamo.send(
        new ScanCommand({
          TableName: table,
          Limit: limit,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      return { items: output.Items ?? [], more: output.LastEvaluatedKey !== undefined };
    },
    async readCheckpoint() {
      const { Item } = await aws.dynamo.send(
        new GetItemCommand({ TableName: tables.cursorTable, Key: key, ConsistentRead: true }),
      );
      if (Item === undefined) return undefined;
      const item = unmarshall(Item);
      return {
        runId: String(item.runId),
        status: item.status === 'done' ? 'done' : 'running',
        lastOrderId: typeof item.lastOrderId === 'string' ? item.lastOrderId : undefined,
        ...(typeof item.lastVersion === 'string' ? { lastVersion: item.lastVersion } : {}),
        sent: typeof item.sent === 'number' ? item.sent : 0,
        startedAt: String(item.startedAt),
        updatedAt: String(item.updatedAt),
      };
    },
    async writeCheckpoint(checkpoint) {
      await aws.dynamo.send(
        new PutItemCommand({
          TableName: tables.cursorTable,
          Item: marshall({ ...unmarshall(key), subscriber, ...checkpoint }, { removeUndefinedValues: true }),
        }),
      );
    },
    publisher,
    async estimateTotal() {
      const { Table } = await aws.dynamo.send(new DescribeTableCommand({ TableName: table }));
      return Table?.ItemCount;
    },
    now: Date.now,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}
