// The feed registry on the cursor table, against emulated DynamoDB: rows seeded from the initial set onto
// today's cursor items (the migration keeps every cursor), a scan over pages, operator changes that never
// conflict with a run's fenced commits (the operator's, tools/ops/feed-registry-admin.ts), state moves and the
// tombstone, and the dispatch lock.
import { GetItemCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import {
  DynamoFeedRegistry,
  FeedRegistryConflictError,
} from '../../functions/core/adapters/dynamo-feed-registry.js';
import { budgetItemKey } from '../../functions/core/adapters/dynamo-request-budget.js';
import { type InitialFeed, parseFeedConfig } from '../../functions/core/fleet/feed-config.js';
import { LeaseLostError } from '../../functions/core/ingest/errors.js';
import { type AwsClients, useEmulator } from '../../tools/harness/pipeline.js';
import { FeedRegistryAdmin } from '../../tools/ops/feed-registry-admin.js';
import { createCursorTable } from '../support/cursor-table.js';
import { type RunningMoto, workerMoto } from '../support/moto.js';

const TABLE = 'cursors';
const NOW = 1_800_000_000_000;
const TOKEN = '/order-feed-ingester/partner-token';
let moto: RunningMoto;
let aws: AwsClients;
let registry: DynamoFeedRegistry;
let admin: FeedRegistryAdmin;
let cursors: DynamoCursorStore;

const config = (fields: Record<string, unknown> = {}) =>
  parseFeedConfig({ tokenParameterName: TOKEN, ...fields });
const initial = (feedId: string, fields: Record<string, unknown> = {}): InitialFeed => ({
  feedId,
  config: config(fields),
  state: 'enabled',
});
const itemOf = async (feedId: string) => {
  const output = await aws.dynamo.send(
    new GetItemCommand({ TableName: TABLE, Key: marshall({ feedId }), ConsistentRead: true }),
  );
  return output.Item && unmarshall(output.Item);
};

/** A feed's cursor item as today's poller leaves it: leased, a page committed, released with its outcome. */
async function todaysCursorItem(feedId: string) {
  const lease = await cursors.acquire(feedId, `run-${feedId}`, 0, NOW, NOW + 60_000);
  if (!lease) throw new Error('no lease');
  const committed = await cursors.commit(lease, {
    pageId: `cursor-of-${feedId}`,
    lastCaughtUpAt: new Date(NOW).toISOString(),
    pageSize: 25,
  });
  await cursors.release(committed, { outcome: 'caught-up', at: NOW + 1_000 });
  return itemOf(feedId);
}

beforeAll(async () => {
  moto = await workerMoto();
  aws = useEmulator(moto);
});
afterAll(async () => moto?.stop());
beforeEach(async () => {
  await moto.reset();
  await createCursorTable(aws.dynamo, TABLE);
  registry = new DynamoFeedRegistry(aws.dynamo, TABLE);
  admin = new FeedRegistryAdmin(aws.dynamo, TABLE);
  cursors = new DynamoCursorStore(aws.dynamo, TABLE);
});

describe('the initial set on a deployed stack (the migration)', () => {
  it('writes a row onto each existing cursor item, keeping every cursor attribute, and creates the missing', async () => {
    const before = await todaysCursorItem('eu');
    const seeded = await registry.seedMissing(
      [initial('eu', { vendorIds: ['v-eu'] }), initial('uk')],
      [],
      NOW,
    );

    expect(seeded).toEqual(['eu', 'uk']);
    const after = await itemOf('eu');
    expect(after).toEqual({
      ...before,
      config: config({ vendorIds: ['v-eu'] }),
      feedState: 'enabled',
      configRevision: 1,
      stateChangedAt: new Date(NOW).toISOString(),
    });
    expect(await itemOf('uk')).toMatchObject({ feedState: 'enabled', config: config() });
  });

  it('never overwrites a row: a changed initial set, or a removed feed, stays as the registry has it', async () => {
    await registry.seedMissing([initial('eu'), initial('uk')], [], NOW);
    await registry.setState('uk', 'removed', NOW);
    const seeded = await registry.seedMissing([initial('eu', { pageSize: 10 }), initial('uk')], [], NOW + 1);

    expect(seeded).toEqual([]);
    expect((await admin.get('eu'))?.config?.pageSize).toBe(100);
    expect((await admin.get('uk'))?.state).toBe('removed');
  });

  it('does not disturb a run in progress: its commits go on under the same lease and revision', async () => {
    const lease = await cursors.acquire('eu', 'run-1', 0, NOW, NOW + 60_000);
    if (!lease) throw new Error('no lease');
    await registry.seedMissing([initial('eu')], [], NOW);
    await admin.setConfig('eu', config({ vendorIds: ['v-1'] }), 1, NOW);
    await registry.setState('eu', 'paused', NOW);

    const committed = await cursors.commit(lease, { pageId: 'p-2' });
    expect(committed.state.revision).toBe(lease.state.revision + 1);
  });
});

describe('what the dispatcher scans', () => {
  it('reads every page of a table over 1 MB, each row with its schedule and token, leaving out the budget and lock items', async () => {
    // 140 cursor items of about 8 KB (a long cursor memory): past a scan page's 1 MB.
    const feeds = Array.from({ length: 140 }, (_, i) =>
      initial(`feed-${i}`, { scheduleMinutes: (i % 5) + 1 }),
    );
    for (const { feedId } of feeds) {
      await aws.dynamo.send(
        new PutItemCommand({
          TableName: TABLE,
          Item: marshall({
            feedId,
            pageId: 'p',
            recentCursors: 'h'.repeat(8_000),
            createdAt: new Date(NOW).toISOString(),
          }),
        }),
      );
    }
    await registry.seedMissing(feeds, [], NOW);
    await todaysCursorItem('unregistered');
    await aws.dynamo.send(
      new PutItemCommand({ TableName: TABLE, Item: marshall({ feedId: budgetItemKey(TOKEN), rate: 5 }) }),
    );
    await registry.lockDispatch('dispatch-1', NOW, 30_000, NOW);
    const firstPage = await aws.dynamo.send(new ScanCommand({ TableName: TABLE }));
    expect(firstPage.LastEvaluatedKey).toBeDefined();

    const rows = await registry.scan();
    expect(rows).toHaveLength(141);
    expect(rows.find((row) => row.feedId === 'feed-7')).toEqual({
      feedId: 'feed-7',
      registered: true,
      state: 'enabled',
      scheduleMinutes: 3,
      tokenParameterName: TOKEN,
      createdAt: NOW,
    });
    expect(rows.find((row) => row.feedId === 'unregistered')).toMatchObject({
      registered: false,
      lastRunOutcome: 'caught-up',
      lastRunAt: NOW + 1_000,
      lastCaughtUpAt: NOW,
    });
  });
});

describe("an operator's changes", () => {
  it('replace the configuration only if unchanged since read; a commit never touches it', async () => {
    await admin.add('eu', config({ pageSize: 50 }), NOW);
    // The poller keeps a reduced page size of its own (`pageSize`) and removes it: not the configured one.
    const lease = await cursors.acquire('eu', 'run-1', 0, NOW, NOW + 60_000);
    if (!lease) throw new Error('no lease');
    await cursors.commit(lease, { pageId: 'p-1', pageSize: undefined });
    expect((await admin.get('eu'))?.config?.pageSize).toBe(50);

    await admin.setConfig('eu', config({ pageSize: 20 }), 1, NOW);
    await expect(admin.setConfig('eu', config({ pageSize: 30 }), 1, NOW)).rejects.toThrow(
      FeedRegistryConflictError,
    );
    expect(await admin.get('eu')).toMatchObject({ configRevision: 2, config: { pageSize: 20 } });
  });

  it('add a feed, adopt a cursor item without a row, and refuse one that exists', async () => {
    await todaysCursorItem('legacy');
    await admin.add('legacy', config(), NOW);
    await admin.add('new', config(), NOW);

    expect(await itemOf('legacy')).toMatchObject({ pageId: 'cursor-of-legacy', feedState: 'enabled' });
    await expect(admin.add('new', config(), NOW)).rejects.toThrow(
      'feed "new" already exists (state enabled)',
    );
  });

  it('move a feed between states only where allowed, with the reason of a stop', async () => {
    await admin.add('eu', config(), NOW);
    await registry.setState('eu', 'stopped', NOW, 'a single order is over the page body cap');
    expect(await itemOf('eu')).toMatchObject({
      feedState: 'stopped',
      stateReason: 'a single order is over the page body cap',
    });
    await registry.setState('eu', 'enabled', NOW);
    expect((await itemOf('eu'))?.stateReason).toBeUndefined();
    await registry.setState('eu', 'paused', NOW);
    await expect(registry.setState('eu', 'stopped', NOW, 'why')).rejects.toThrow(
      'feed "eu" cannot become stopped from its state',
    );
    await expect(registry.setState('nobody', 'paused', NOW)).rejects.toThrow(FeedRegistryConflictError);
  });

  it('delete a removed feed’s cursor, keeping its tombstone and fencing out a stale run', async () => {
    await admin.add('eu', config(), NOW);
    const stale = await cursors.acquire('eu', 'run-1', 0, NOW, NOW + 60_000);
    if (!stale) throw new Error('no lease');
    const committed = await cursors.commit(stale, { pageId: 'p-9' });
    await registry.setState('eu', 'removed', NOW);
    await expect(admin.deleteCursor('eu', NOW)).rejects.toThrow(/no run in progress/);

    await admin.deleteCursor('eu', NOW + 61_000);
    const item = await itemOf('eu');
    expect(item?.pageId).toBeUndefined();
    expect(item).toMatchObject({ feedState: 'removed', config: config() });
    await expect(cursors.commit(committed, { pageId: 'p-10' })).rejects.toThrow(LeaseLostError);
    expect(await registry.seedMissing([initial('eu')], await registry.scan(), NOW)).toEqual([]);
  });
});

describe('the dispatch lock', () => {
  it('lets one dispatch run at a time, runs it once more for a request that came meanwhile, and keeps its batches', async () => {
    expect(await registry.lockDispatch('d-1', NOW, 30_000, NOW)).toEqual({ inFlight: [], ended: [] });
    expect(await registry.lockDispatch('d-2', NOW + 100, 30_000, NOW + 100)).toBe('held');
    const inFlight = [{ batchId: 'd-1-1', dispatchedAt: NOW, feedIds: ['a', 'b'] }];

    expect(await registry.unlockDispatch('d-1', inFlight, 3)).toBe(true);
    // A poller's last write says its batch ended, and reads back the due feeds the dispatch left waiting.
    expect(await registry.endBatch('d-1-1')).toBe(3);
    // A request older than the last scan was answered by it.
    expect(await registry.lockDispatch('d-3', NOW + 200, 30_000, NOW - 1)).toBe('redundant');
    expect(await registry.lockDispatch('d-4', NOW + 300, 30_000, NOW + 300)).toEqual({
      inFlight,
      ended: ['d-1-1'],
    });
    // A batch that ends while the lock is held stays for the next dispatch; the ones read are consumed.
    expect(await registry.endBatch('d-4-1')).toBe(3);
    expect(await registry.unlockDispatch('d-4', [], 0, ['d-1-1'])).toBe(false);
    expect(await registry.endBatch('d-4-2')).toBe(0);
    // A holder that crashed: its lock lapses.
    await registry.lockDispatch('d-5', NOW + 400, 30_000, NOW + 400);
    expect(await registry.lockDispatch('d-6', NOW + 31_000, 30_000, NOW + 31_000)).toEqual({
      inFlight: [],
      ended: ['d-4-1', 'd-4-2'],
    });
  });
});
