// The dispatcher built by its factory with fake ports: its loop (lock, scan, seed, plan, start the poller per
// batch, unlock, gauges) and what it does when another dispatch holds the lock, when a request was already
// answered, when a batch cannot start, and within the account's concurrency. The decision itself:
// test/unit/fleet/dispatch.test.ts; the lock's conditions on DynamoDB: test/integration/feed-registry.test.ts.
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import type { DispatchLock } from '../../../functions/core/adapters/dynamo-feed-registry.js';
import {
  type BatchEvent,
  DISPATCH_DEFAULTS,
  type FeedRow,
  type InFlightBatch,
} from '../../../functions/core/fleet/dispatch.js';
import { type InitialFeed, parseFeedConfig } from '../../../functions/core/fleet/feed-config.js';
import { FLEET_GAUGES, type FunctionMetrics } from '../../../functions/core/observability/metric-names.js';
import type { DispatcherClients } from '../../../functions/dispatcher/build-dispatcher.js';
import {
  buildDispatcher,
  type DispatcherOverrides,
  DispatchFailedError,
} from '../../../functions/dispatcher/build-dispatcher.js';
import type { DispatcherConfig } from '../../../functions/dispatcher/config.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { feedRow, MINUTE, NOW } from '../../support/feed-row.js';

const row = feedRow;

/** The registry in memory, with the DynamoDB adapter's rules for the lock (dynamo-feed-registry.ts). */
class MemoryRegistry {
  rows: FeedRow[] = [];
  lock: {
    owner?: string;
    expiresAt?: number;
    lastScanAt?: number;
    rerunRequestedAt?: number;
    inFlight: InFlightBatch[];
    waiting: number;
  } = { inFlight: [], waiting: 0 };
  readonly journal: string[] = [];
  /** Runs while a scan is on its way (a request arriving meanwhile, say). */
  duringScan: (() => Promise<void>) | undefined;

  async scan(): Promise<FeedRow[]> {
    this.journal.push('scan');
    const during = this.duringScan;
    this.duringScan = undefined;
    await during?.();
    return this.rows.map((one) => ({ ...one }));
  }

  async seedMissing(
    initial: readonly InitialFeed[],
    rows: readonly FeedRow[],
    now: number,
  ): Promise<string[]> {
    const seeded = initial.filter(
      (feed) => !rows.some((one) => one.feedId === feed.feedId && one.registered),
    );
    for (const feed of seeded)
      this.rows.push(
        row(feed.feedId, {
          state: feed.state,
          createdAt: now,
          lastDispatchedAt: undefined,
          lastRunAt: undefined,
          lastRunOutcome: undefined,
          lastCaughtUpAt: undefined,
        }),
      );
    if (seeded.length > 0) this.journal.push(`seed ${seeded.map((feed) => feed.feedId).join(' ')}`);
    return seeded.map((feed) => feed.feedId);
  }

  async lockDispatch(
    owner: string,
    now: number,
    ttlMs: number,
    requestedAt: number,
  ): Promise<DispatchLock | 'held' | 'redundant'> {
    const { lock } = this;
    const free = lock.owner === undefined || (lock.expiresAt ?? 0) < now;
    const unanswered = lock.lastScanAt === undefined || lock.lastScanAt <= requestedAt;
    if (free && unanswered) {
      Object.assign(lock, { owner, expiresAt: now + ttlMs, lastScanAt: now });
      this.journal.push('lock');
      return { inFlight: lock.inFlight, ended: [] };
    }
    if (lock.lastScanAt !== undefined && lock.lastScanAt > requestedAt) return 'redundant';
    lock.rerunRequestedAt = Math.max(lock.rerunRequestedAt ?? 0, requestedAt);
    return 'held';
  }

  async unlockDispatch(owner: string, inFlight: readonly InFlightBatch[], waiting: number): Promise<boolean> {
    const { lock } = this;
    if (lock.owner !== owner) throw new Error('not the lock holder');
    Object.assign(lock, { owner: undefined, expiresAt: undefined, inFlight: [...inFlight], waiting });
    this.journal.push(`unlock ${inFlight.length} ${waiting}`);
    return (lock.rerunRequestedAt ?? -1) > (lock.lastScanAt ?? 0);
  }
}

const config = (more: Partial<DispatcherConfig> = {}): DispatcherConfig => ({
  cursorTableName: 'cursors',
  pollerFunctionName: 'poller',
  initialFeeds: [],
  dispatch: { ...DISPATCH_DEFAULTS },
  accountConcurrencyShare: 0.3,
  ...more,
});

function build(more: { config?: Partial<DispatcherConfig>; overrides?: DispatcherOverrides } = {}) {
  const registry = new MemoryRegistry();
  const started: BatchEvent[] = [];
  const recorded: Array<[string, number]> = [];
  const metrics: FunctionMetrics = {
    count: (name, value = 1) => recorded.push([name, value]),
    publish: () => recorded.push(['(flush)', 0]),
  };
  const clock = { now: NOW };
  const versionsRead: string[] = [];
  const handler = buildDispatcher({} as DispatcherClients, config(more.config), {
    registry,
    startPoller: async (event) => void started.push(event),
    tokenVersion: async (name) => {
      versionsRead.push(name);
      return 4;
    },
    unreservedConcurrency: async () => 1000,
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    metrics,
    now: () => clock.now,
    ...more.overrides,
  });
  return { handler, registry, started, recorded, clock, versionsRead };
}

const context = () => lambdaContext('dispatcher', 60_000);
const feedsOf = (events: BatchEvent[]) => events.flatMap((event) => event.batch.feedIds).sort();

describe('buildDispatcher', () => {
  it('locks, scans, seeds the initial set, starts the poller per batch, unlocks with the batches on their way, and publishes the gauges once', async () => {
    const initial: InitialFeed[] = [
      { feedId: 'a', config: parseFeedConfig({ tokenParameterName: '/t/a' }), state: 'enabled' },
      { feedId: 'new', config: parseFeedConfig({ tokenParameterName: '/t/a' }), state: 'enabled' },
    ];
    const { handler, registry, started, recorded } = build({ config: { initialFeeds: initial } });
    registry.rows = [row('a'), row('b'), row('paused', { state: 'paused' })];
    const invocation = context();

    const result = await handler({ source: 'aws.events', 'detail-type': 'Scheduled Event' }, invocation);

    expect(result).toMatchObject({
      outcome: 'dispatched',
      rounds: 1,
      batches: 2,
      feeds: 3,
      waiting: 0,
      seeded: ['new'],
    });
    expect(registry.journal).toEqual(['lock', 'scan', 'seed new', 'scan', 'unlock 2 0']);
    // The new feed (its backlog unknown) in a batch of its own, as a feed behind; the idle ones together.
    const batch = (n: number, feedIds: string[]) => ({
      batch: {
        batchId: `${NOW.toString(36)}-${n}`,
        dispatchedAt: NOW,
        sliceMs: expect.any(Number),
        feedIds,
        dispatcher: invocation.invokedFunctionArn,
      },
    });
    expect(started).toEqual([batch(1, ['a', 'b']), batch(2, ['new'])]);
    expect(registry.lock.inFlight).toEqual([
      { batchId: `${NOW.toString(36)}-1`, dispatchedAt: NOW, feedIds: ['a', 'b'] },
      { batchId: `${NOW.toString(36)}-2`, dispatchedAt: NOW, feedIds: ['new'] },
    ]);
    const gauges = Object.fromEntries(recorded.filter(([name]) => name !== '(flush)'));
    expect(Object.keys(gauges).sort()).toEqual([...Object.values(FLEET_GAUGES), 'FeedsSeeded'].sort());
    expect(gauges).toMatchObject({
      StaleFeeds: 0,
      StoppedFeeds: 0,
      AuthFailingFeeds: 0,
      UnregisteredFeeds: 0,
      FeedsSeeded: 1,
    });
    expect(recorded.filter(([name]) => name === '(flush)')).toHaveLength(1);
  });

  it('runs once more when a request comes while it holds the lock; the request itself does nothing', async () => {
    const { handler, registry, started, clock } = build();
    registry.rows = [row('a')];
    let requested: Awaited<ReturnType<typeof handler>> | undefined;
    registry.duringScan = async () => {
      // A poller ends while this dispatch scans, and asks for a dispatch.
      clock.now += 100;
      requested = await handler({ dispatchRequest: { requestedAt: clock.now, by: 'run-9' } }, context());
      registry.rows = [
        row('a', { lastRunOutcome: 'slice-end', lastRunAt: clock.now, leaseOwner: undefined }),
      ];
    };

    const result = await handler({ source: 'aws.events' }, context());

    expect(requested).toMatchObject({ outcome: 'held', rounds: 0, batches: 0 });
    expect(result).toMatchObject({ outcome: 'dispatched', rounds: 2 });
    expect(registry.journal.filter((entry) => entry === 'scan')).toHaveLength(2);
    expect(started).toHaveLength(1);
  });

  it('drops a request that a scan begun after it already answered', async () => {
    const { handler, registry, started } = build();
    registry.lock.lastScanAt = NOW;

    const result = await handler({ dispatchRequest: { requestedAt: NOW - 1 } }, context());

    expect(result).toMatchObject({ outcome: 'redundant', rounds: 0 });
    expect(registry.journal).toEqual([]);
    expect(started).toEqual([]);
  });

  it('keeps the feeds of a batch that could not start waiting, starts the others, and fails the invocation after unlocking', async () => {
    let starts = 0;
    const { handler, registry, started, recorded } = build({
      config: { dispatch: { ...DISPATCH_DEFAULTS, batchSize: 2 } },
      overrides: {
        startPoller: async (event) => {
          starts += 1;
          if (starts === 1) throw new Error('Rate exceeded');
          started.push(event);
        },
      },
    });
    registry.rows = ['a', 'b', 'c', 'd'].map((feedId) => row(feedId));

    await expect(handler({}, context())).rejects.toBeInstanceOf(DispatchFailedError);

    expect(feedsOf(started)).toHaveLength(2);
    expect(registry.lock).toMatchObject({ owner: undefined, waiting: 2 });
    expect(registry.lock.inFlight.flatMap((batch) => batch.feedIds).sort()).toEqual(feedsOf(started));
    expect(recorded).toContainEqual(['PollerInvokeFailures', 1]);
    expect(recorded.filter(([name]) => name === '(flush)')).toHaveLength(1);
  });

  it('starts no more pollers than 30 % of what the account leaves unreserved, below maxConcurrentPollers', async () => {
    const { handler, registry, started } = build({
      overrides: { unreservedConcurrency: async () => 10 },
    });
    registry.rows = Array.from({ length: 20 }, (_, index) =>
      row(`f${index}`, { lastRunOutcome: 'slice-end' }),
    );

    const result = await handler({}, context());

    expect(started).toHaveLength(3);
    expect(result.waiting).toBe(20 - 3 * DISPATCH_DEFAULTS.behindBatchSize);
  });

  it('reads the version of a token only for feeds in a 401 backoff, and a new version ends the backoff', async () => {
    const { handler, registry, started, versionsRead } = build();
    const backoff = {
      authRetryNotBefore: NOW + 5 * MINUTE,
      authFailedTokenVersion: 3,
      lastRunOutcome: 'auth-failed',
    };
    registry.rows = [row('ok'), row('rotated', { ...backoff, tokenParameterName: '/t/rotated' })];

    await handler({}, context());

    expect(versionsRead).toEqual(['/t/rotated']);
    expect(feedsOf(started)).toEqual(['ok', 'rotated']);
  });

  it('releases the lock as it found it when the scan fails, and fails', async () => {
    const { handler, registry } = build();
    registry.lock.inFlight = [{ batchId: 'b0', dispatchedAt: NOW - 1_000, feedIds: ['x'] }];
    registry.scan = async () => {
      throw new Error('ProvisionedThroughputExceededException');
    };

    await expect(handler({}, context())).rejects.toThrow('ProvisionedThroughputExceededException');
    expect(registry.lock).toMatchObject({ owner: undefined, inFlight: [{ batchId: 'b0' }] });
  });
});
