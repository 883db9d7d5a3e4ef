// In-memory fakes of the use cases' ports, for unit tests, and pollFeed over them (pollFeedFixture). The
// cursor store keeps the same fencing rules as the DynamoDB adapter (owner + revision), so lease behaviour is
// tested here too.

import type { Logger } from '@aws-lambda-powertools/logger';
import type { LogItemExtraInput, LogItemMessage } from '@aws-lambda-powertools/logger/types';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  type PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import type { OrdersTable } from '../../functions/core/apply/apply-order-version.js';
import type { OutgoingMessage } from '../../functions/core/contract/order-version-message.js';
import { LeaseLostError, PublishError } from '../../functions/core/ingest/errors.js';
import { pollFeed } from '../../functions/core/ingest/poll-feed.js';
import type {
  AuthFailure,
  ChainLink,
  CursorCommit,
  CursorState,
  CursorStore,
  Lease,
  OrderVersionPublisher,
  Quarantine,
  QuarantinedRecord,
} from '../../functions/core/ingest/ports.js';
import type { FunctionMetrics } from '../../functions/core/observability/metric-names.js';
import type {
  CallOptions,
  OrderUpdatesQuery,
  PartnerApi,
  RawPage,
} from '../../functions/core/partner/types.js';
import type { PollerConfig } from '../../functions/poller/config.js';
import { sampleOrder } from '../fixtures/orders.js';
import { pollerConfig } from './poller-config.js';

interface StoredCursor extends CursorState {
  leaseOwner?: string;
  leaseExpiresAt?: number;
  chainId?: string;
  chainStep?: number;
}

/** A cursor item's state as a new feed starts it, with `overrides`. */
export function cursorState(overrides: Partial<CursorState> = {}): CursorState {
  return {
    pageId: undefined,
    revision: 0,
    highWaterMark: undefined,
    lastCaughtUpAt: undefined,
    createdAt: '2026-01-01T00:00:00.000Z',
    authFailures: 0,
    authRetryNotBefore: undefined,
    ...overrides,
  };
}

const handOverOwner = (link: ChainLink) => `continuation:${link.chainId}:${link.step}`;

export class MemoryCursorStore implements CursorStore {
  readonly items = new Map<string, StoredCursor>();
  /** Every operation, in order, for asserting that commits follow publishing. */
  constructor(private readonly journal: string[] = []) {}

  async acquire(
    feedId: string,
    owner: string,
    nowMs: number,
    expiresAt: number,
    chain?: ChainLink,
  ): Promise<Lease | undefined> {
    const item: StoredCursor =
      this.items.get(feedId) ?? cursorState({ createdAt: new Date(nowMs).toISOString() });
    const lapsed = item.leaseOwner === undefined || (item.leaseExpiresAt ?? 0) < nowMs;
    if (chain) {
      const current = item.chainId === chain.chainId && item.chainStep === chain.step;
      if (!current || (item.leaseOwner !== handOverOwner(chain) && !lapsed)) return undefined;
    } else if (!lapsed) {
      return undefined;
    }
    const next: StoredCursor = {
      ...item,
      leaseOwner: owner,
      leaseExpiresAt: expiresAt,
      revision: item.revision + 1,
    };
    if (!chain) {
      delete next.chainId;
      delete next.chainStep;
    }
    this.items.set(feedId, next);
    this.journal.push(`acquire ${owner}`);
    return { feedId, owner, state: stateOf(next) };
  }

  async commit(lease: Lease, commit: CursorCommit): Promise<Lease> {
    const item = this.fenced(lease);
    const next: StoredCursor = {
      ...item,
      pageId: commit.pageId,
      revision: item.revision + 1,
      ...(commit.highWaterMark === undefined ? {} : { highWaterMark: commit.highWaterMark }),
      ...(commit.lastCaughtUpAt === undefined ? {} : { lastCaughtUpAt: commit.lastCaughtUpAt }),
      ...(commit.clearAuthFailures
        ? { authFailures: 0, authRetryNotBefore: undefined, authFailedTokenVersion: undefined }
        : {}),
      ...(commit.paceDelayMs === undefined ? {} : { paceDelayMs: commit.paceDelayMs }),
      // As the DynamoDB adapter: undefined removes them.
      pageSize: commit.pageSize,
      recentCursors: commit.recentCursors,
      partialPage: commit.partialPage,
    };
    this.items.set(lease.feedId, next);
    this.journal.push(`commit ${commit.pageId ?? '<start>'}`);
    return { ...lease, state: stateOf(next) };
  }

  async recordAuthFailure(lease: Lease, failure: AuthFailure): Promise<Lease> {
    const item = this.fenced(lease);
    const next = {
      ...item,
      revision: item.revision + 1,
      authFailures: failure.failures,
      authRetryNotBefore: failure.retryNotBefore,
      authFailedTokenVersion: failure.tokenVersion,
    };
    this.items.set(lease.feedId, next);
    return { ...lease, state: stateOf(next) };
  }

  /** The last run recorded by each release, per feed. */
  readonly lastRuns = new Map<string, { outcome: string; at: number }>();

  async release(
    lease: Lease,
    lastRun?: { outcome: string; at: number },
    handOver?: ChainLink & { expiresAt: number },
  ): Promise<void> {
    const item = this.items.get(lease.feedId);
    if (!item || item.leaseOwner !== lease.owner || item.revision !== lease.state.revision) return;
    this.items.set(
      lease.feedId,
      handOver
        ? {
            ...item,
            leaseOwner: handOverOwner(handOver),
            leaseExpiresAt: handOver.expiresAt,
            chainId: handOver.chainId,
            chainStep: handOver.step,
          }
        : {
            ...item,
            leaseOwner: undefined,
            leaseExpiresAt: undefined,
            chainId: undefined,
            chainStep: undefined,
          },
    );
    if (lastRun) this.lastRuns.set(lease.feedId, lastRun);
    this.journal.push('release');
  }

  /** Simulates another invocation stealing the lease (e.g. after this one overran it). */
  steal(feedId: string, owner: string): void {
    const item = this.items.get(feedId);
    if (item) this.items.set(feedId, { ...item, leaseOwner: owner, revision: item.revision + 1 });
  }

  private fenced(lease: Lease): StoredCursor {
    const item = this.items.get(lease.feedId);
    if (!item || item.leaseOwner !== lease.owner || item.revision !== lease.state.revision) {
      throw new LeaseLostError(lease.feedId);
    }
    return item;
  }
}

function stateOf(item: StoredCursor): CursorState {
  const { leaseOwner: _owner, leaseExpiresAt: _expires, chainId: _chain, chainStep: _step, ...state } = item;
  return state;
}

/** A partner whose answers are scripted per call: a page, or an error to throw. */
export class ScriptedPartner implements PartnerApi {
  readonly calls: OrderUpdatesQuery[] = [];
  /** `answer` may report the waits the real client would have made through `options.onRetry`. */
  constructor(
    private readonly answer: (
      query: OrderUpdatesQuery,
      call: number,
      options: CallOptions,
    ) => RawPage | Error,
  ) {}

  async getOrderUpdates(query: OrderUpdatesQuery, options: CallOptions): Promise<RawPage> {
    this.calls.push(query);
    const result = this.answer(query, this.calls.length, options);
    if (result instanceof Error) throw result;
    return result;
  }

  async getOrder(): Promise<unknown> {
    throw new Error('not scripted');
  }
}

export class RecordingPublisher implements OrderVersionPublisher {
  readonly published: OutgoingMessage[] = [];
  failNext = 0;
  constructor(private readonly journal: string[] = []) {}

  async publish(messages: OutgoingMessage[]): Promise<void> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new PublishError('queue unavailable');
    }
    this.published.push(...messages);
    this.journal.push(`publish ${messages.length}`);
  }
}

export class MemoryQuarantine implements Quarantine {
  readonly records: QuarantinedRecord[] = [];
  /** The most writes in flight at once (each write yields to the event loop once, as an S3 call would). */
  maxInFlight = 0;
  #inFlight = 0;
  async put(record: QuarantinedRecord): Promise<string> {
    this.maxInFlight = Math.max(this.maxInFlight, ++this.#inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    this.#inFlight -= 1;
    this.records.push(record);
    return `quarantine/${record.feedId}/${record.orderId ?? 'unidentified'}`;
  }
}

export class CountingMetrics implements Pick<FunctionMetrics, 'count'> {
  readonly counts: Record<string, number> = {};
  count(name: string, value = 1): void {
    this.counts[name] = (this.counts[name] ?? 0) + value;
  }
}

/** Records what the use case logs (it takes Powertools Logger's info, warn and error). */
export class MemoryLog implements Pick<Logger, 'info' | 'warn' | 'error'> {
  readonly lines: Array<{ level: string; message: string; attributes?: Record<string, unknown> }> = [];
  readonly info = this.#recorder('info');
  readonly warn = this.#recorder('warn');
  readonly error = this.#recorder('error');

  #recorder(level: string) {
    return (input: LogItemMessage, ...extra: LogItemExtraInput): void => {
      const message = typeof input === 'string' ? input : input.message;
      const attributes = extra[0] as Record<string, unknown> | undefined;
      this.lines.push({ level, message, ...(attributes ? { attributes } : {}) });
    };
  }
}

/**
 * The orders table in memory: a client whose PutItem keeps the version guard the consumer's conditional put
 * asks for (key absent or stored version lower) and returns the replaced item; the real table is tested
 * against moto.
 */
export class MemoryOrdersTable implements OrdersTable {
  readonly tableName = 'orders';
  readonly #items = new Map<string, Record<string, AttributeValue>>();
  readonly client = {
    send: async (command: PutItemCommand) => {
      const { Item: item = {}, ExpressionAttributeNames: names } = command.input;
      const key = item[names?.['#key'] ?? 'orderId']?.N ?? '';
      const stored = this.#items.get(key);
      if (stored && BigInt(stored.version?.N ?? '0') >= BigInt(item.version?.N ?? '0')) {
        throw new ConditionalCheckFailedException({
          message: 'The conditional request failed',
          $metadata: {},
          Item: stored,
        });
      }
      this.#items.set(key, item);
      return { $metadata: {}, ...(stored ? { Attributes: stored } : {}) };
    },
  } as unknown as DynamoDBClient;

  /** The stored items, unmarshalled (int64 exact). */
  items(): Array<Record<string, unknown>> {
    return [...this.#items.values()].map(unmarshallExact);
  }
}

/** An SQS record as the event source hands it to the consumer (the correlationId attribute when given). */
export function sqsRecord(messageId: string, body: string, correlationId?: string): SQSRecord {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '0',
      SenderId: 'poller',
      ApproximateFirstReceiveTimestamp: '0',
    },
    messageAttributes:
      correlationId === undefined
        ? {}
        : {
            correlationId: {
              dataType: 'String',
              stringValue: correlationId,
              binaryListValues: [],
              stringListValues: [],
            },
          },
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:orders',
    awsRegion: 'us-east-1',
  };
}

type PollDepsOf = Parameters<typeof pollFeed>[0];
type PollRunOf = Parameters<typeof pollFeed>[2];

type FixtureOptions = { clock?: { now: number }; settings?: PollerConfig };

/**
 * pollFeed over the in-memory ports, a ScriptedPartner answering `answer`, and a clock that only sleeps and the
 * test move (`sleeps` lists them). `run` gives each run a minute before its deadline; `journal` interleaves
 * the store's and the publisher's operations.
 */
export function pollFeedFixture(
  answer: ConstructorParameters<typeof ScriptedPartner>[0],
  options?: FixtureOptions,
) {
  return pollFeedFixtureFor(new ScriptedPartner(answer), options);
}

/** The same with a partner of the test's own. */
export function pollFeedFixtureFor<P extends PartnerApi>(
  partner: P,
  { clock = { now: 1_000_000 }, settings = pollerConfig() }: FixtureOptions = {},
) {
  const journal: string[] = [];
  const sleeps: number[] = [];
  const deps: PollDepsOf & {
    cursorStore: MemoryCursorStore;
    partner: P;
    publisher: RecordingPublisher;
    quarantine: MemoryQuarantine;
    metrics: CountingMetrics;
    log: MemoryLog;
  } = {
    cursorStore: new MemoryCursorStore(journal),
    partner,
    publisher: new RecordingPublisher(journal),
    quarantine: new MemoryQuarantine(),
    metrics: new CountingMetrics(),
    log: new MemoryLog(),
    now: () => clock.now,
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.now += ms;
    },
  };
  const run = (owner = 'run-1', runSettings: PollerConfig = settings, extra: Partial<PollRunOf> = {}) =>
    pollFeed(deps, runSettings, {
      owner,
      deadline: clock.now + 60_000,
      leaseExpiresAt: clock.now + 120_000,
      ...extra,
    });
  return { deps, journal, sleeps, clock, run, stored: () => deps.cursorStore.items.get(settings.feedId) };
}

/** Pages c0 → c1 → c2 (the last), two orders each (ids 1, 2 / 11, 12 / 21, 22), chained by c1, c2, c3. */
export function threePages(query: OrderUpdatesQuery): RawPage {
  const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
  const data = [sampleOrder({ id: index * 10 + 1 }), sampleOrder({ id: index * 10 + 2 })];
  return { data, hasMore: index < 2, nextPageId: `c${index + 1}` };
}
