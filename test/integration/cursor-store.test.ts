// The DynamoDB cursor store against emulated DynamoDB: the items of a batch read at once, an idle poll recorded
// in one write fenced on the revision read, one lease holder at a time (taken on the revision read), and fencing
// that keeps a stale or overlapping invocation from moving the cursor; the ops CLI's fenced change; the token's
// request budget item beside the cursors (its conditional writes, several slots in one write, its deadline behind
// a slow DynamoDB, and the poller's wiring: a run ends only once its 429's hold is written). One moto, the cursor
// table alone.
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { cursorAttributesOf, DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import {
  budgetItemKey,
  budgetThrottlesKey,
  budgetViewOf,
  DynamoRequestBudgetStore,
} from '../../functions/core/adapters/dynamo-request-budget.js';
import { CURSOR_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import { LeaseLostError } from '../../functions/core/ingest/errors.js';
import { type BudgetState, intervalOf } from '../../functions/core/ingest/request-budget.js';
import type { FunctionMetrics } from '../../functions/core/observability/metric-names.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import { startInterceptingProxy } from '../../lab/aws-proxy.js';
import { type AwsClients, pipelineEnv, useEmulator } from '../../tools/harness/pipeline.js';
import { singleFeedPoller } from '../../tools/harness/single-feed.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { operatorUpdate } from '../../tools/ops/operator-update.js';
import { CountingMetrics } from '../support/fakes.js';
import { type RunningMoto, workerMoto } from '../support/moto.js';
import { startScriptedServer } from '../support/scripted-http-server.js';

let moto: RunningMoto;
let aws: AwsClients;
let store: DynamoCursorStore;
/** Only the cursor table (as the stack keys it): the rest of the pipeline's resources play no part here. */
const resources = { cursorTable: 'cursors' };
const NOW = 1_700_000_000_000;

/** The lease an acquisition returned, which the test expects it to have got. */
function granted<T>(lease: T | undefined): T {
  if (!lease) throw new Error('no lease');
  return lease;
}

/** The lease as a run takes it: on the revision it read of the item just before (none yet: 0). */
async function take(feedId: string, owner: string, nowMs: number, expiresAt: number, via = store) {
  const read = (await via.read([feedId])).get(feedId);
  return via.acquire(feedId, owner, read?.state.revision ?? 0, nowMs, expiresAt);
}

beforeAll(async () => {
  moto = await workerMoto();
  aws = useEmulator(moto);
});
afterAll(async () => moto?.stop());
beforeEach(async () => {
  await moto.reset();
  const { name, type } = CURSOR_TABLE_SCHEMA.partitionKey;
  await aws.dynamo.send(
    new CreateTableCommand({
      TableName: resources.cursorTable,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: name, AttributeType: type }],
      KeySchema: [{ AttributeName: name, KeyType: 'HASH' }],
    }),
  );
  store = new DynamoCursorStore(aws.dynamo, resources.cursorTable);
});

/** The cursor table's item of a feed (or the budget's key), as DynamoDB holds it. */
const itemOf = async (feedId = 'feed') =>
  (await aws.dynamo.send(new GetItemCommand({ TableName: resources.cursorTable, Key: marshall({ feedId }) })))
    .Item;

describe('DynamoCursorStore: the read, the idle record and the lease on the revision read', () => {
  const dispatch = { batchId: 'd1-1', dispatchedAt: NOW - 500 };

  it('reads the items of a batch in one consistent read each 100 keys, with their state, lease and row, leaving out the missing', async () => {
    for (let index = 0; index < 130; index += 1) {
      await store.record(`feed-${index}`, 0, { outcome: 'caught-up', at: NOW + index });
    }
    await aws.dynamo.send(
      new UpdateItemCommand({
        TableName: resources.cursorTable,
        Key: marshall({ feedId: 'feed-7' }),
        UpdateExpression: 'SET config = :config, feedState = :state',
        ExpressionAttributeValues: marshall({
          ':config': { tokenParameterName: '/t', pageSize: 5 },
          ':state': 'paused',
        }),
      }),
    );
    granted(await take('feed-8', 'run-1#feed-8', NOW, NOW + 60_000));

    const ids = [...Array.from({ length: 130 }, (_, index) => `feed-${index}`), 'missing'];
    const items = await store.read(ids);

    expect(items.size).toBe(130);
    expect(items.get('feed-7')).toMatchObject({
      feedId: 'feed-7',
      state: { revision: 1, createdAt: new Date(NOW + 7).toISOString() },
      config: { tokenParameterName: '/t', pageSize: 5 },
      feedState: 'paused',
    });
    expect(items.get('feed-8')).toMatchObject({ leaseOwner: 'run-1#feed-8', leaseExpiresAt: NOW + 60_000 });
    expect(items.get('feed-9')?.feedState).toBe('enabled');
  });

  it('records an idle poll in one write fenced on the revision read and no live lease; refused once anything moved', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 60_000));
    const committed = await store.commit(lease, {
      pageId: 'p-1',
      pageSize: 25,
      recentCursors: ['h1'],
      partialPage: { records: 100, digest: 'x' },
    });
    await store
      .recordAuthFailure(committed, { failures: 1, retryNotBefore: NOW + 1, tokenVersion: 2 })
      .then((failed) => store.release(failed, { outcome: 'auth-failed', at: NOW, stopReason: 'refused' }));
    const read = granted((await store.read(['feed'])).get('feed'));
    const idle = {
      outcome: 'caught-up',
      at: NOW + 1_000,
      dispatch,
      caughtUp: { lastCaughtUpAt: new Date(NOW + 1_000).toISOString(), paceDelayMs: 0, pageSize: 26 },
    };

    expect(await store.record('feed', read.state.revision, idle)).toBe(true);

    const item = unmarshall((await itemOf()) ?? {});
    expect(item).toMatchObject({
      pageId: 'p-1',
      revision: read.state.revision + 1,
      lastRunOutcome: 'caught-up',
      lastRunAt: new Date(NOW + 1_000).toISOString(),
      lastCaughtUpAt: new Date(NOW + 1_000).toISOString(),
      lastDispatchId: 'd1-1',
      lastDispatchedAt: NOW - 500,
      pageSize: 26,
    });
    for (const gone of ['recentCursors', 'partialPage', 'authFailures', 'authRetryNotBefore', 'stopReason'])
      expect(item).not.toHaveProperty(gone);
    // The same revision again (a duplicate run, a run that read before this record): nothing is written.
    expect(await store.record('feed', read.state.revision, { ...idle, at: NOW + 2_000 })).toBe(false);
    expect(unmarshall((await itemOf()) ?? {}).lastRunAt).toBe(new Date(NOW + 1_000).toISOString());
    // A live lease on the revision read: nothing is written either.
    const held = granted(await take('feed', 'b', NOW + 3_000, NOW + 60_000));
    expect(await store.record('feed', held.state.revision, { ...idle, at: NOW + 3_000 })).toBe(false);
  });

  it('refuses a lease on a revision that moved (an idle record, a commit, an operator) and while another holds it', async () => {
    // A run read the feed before any write (revision 0); an idle record lands first.
    expect((await store.read(['feed'])).size).toBe(0);
    expect(await store.record('feed', 0, { outcome: 'caught-up', at: NOW })).toBe(true);

    // The run's lease on what it read: refused, nothing written.
    expect(await store.acquire('feed', 'late', 0, NOW + 1, NOW + 60_000)).toBeUndefined();
    expect(unmarshall((await itemOf()) ?? {}).leaseOwner).toBeUndefined();

    const lease = granted(await take('feed', 'a', NOW + 2, NOW + 60_000));
    expect(await take('feed', 'b', NOW + 3, NOW + 60_000)).toBeUndefined();
    const committed = await store.commit(lease, { pageId: 'p-1' });
    await store.release(committed, { outcome: 'caught-up', at: NOW + 4 });
    // Free again, but on the revision the holder's commit left, not the one before it.
    expect(await store.acquire('feed', 'c', lease.state.revision, NOW + 5, NOW + 60_000)).toBeUndefined();
    const next = granted(
      await store.acquire('feed', 'd', committed.state.revision, NOW + 5, NOW + 60_000, dispatch),
    );
    expect(next.state.pageId).toBe('p-1');
    expect(unmarshall((await itemOf()) ?? {})).toMatchObject({ lastDispatchId: 'd1-1', leaseOwner: 'd' });
  });

  it('keeps the expiry it was taken with: commits do not extend it', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 80_000));
    const committed = await store.commit(lease, { pageId: 'p-1' });
    await store.commit(committed, { pageId: 'p-2' });
    expect((await itemOf())?.leaseExpiresAt).toEqual({ N: String(NOW + 80_000) });
  });

  it('keeps a reduced page size, the cursor memory and a page handed off in part, and removes them when a commit leaves them out', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 60_000));
    const partialPage = { records: 300, digest: 'Qm9va3M' };
    const kept = await store.commit(lease, {
      pageId: 'p-1',
      pageSize: 25,
      recentCursors: ['h1', 'h2'],
      partialPage,
    });

    expect(kept.state).toMatchObject({ pageSize: 25, recentCursors: ['h1', 'h2'], partialPage });
    expect(await itemOf()).toMatchObject({
      pageSize: { N: '25' },
      recentCursors: { S: 'h1 h2' },
      partialPage: { S: '300 Qm9va3M' },
    });
    await store.release(kept, { outcome: 'out-of-time', at: NOW });
    const next = await take('feed', 'b', NOW + 1, NOW + 60_000);
    expect(next?.state).toMatchObject({ pageSize: 25, recentCursors: ['h1', 'h2'], partialPage });

    const cleared = await store.commit(granted(next), { pageId: 'p-2' });
    expect(cleared.state.pageSize).toBeUndefined();
    expect(cleared.state.partialPage).toBeUndefined();
    expect(await itemOf()).not.toHaveProperty('pageSize');
    expect(await itemOf()).not.toHaveProperty('recentCursors');
    expect(await itemOf()).not.toHaveProperty('partialPage');
  });

  it('records a documented stop’s reason as the lease is given up, and removes it on the next release without one', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 60_000));
    await store.release(lease, { outcome: 'stuck-cursor', at: NOW, stopReason: 'the cursor repeats' });
    expect(unmarshall((await itemOf()) ?? {})).toMatchObject({ stopReason: 'the cursor repeats' });

    await store.release(granted(await take('feed', 'b', NOW + 1, NOW + 60_000)), {
      outcome: 'caught-up',
      at: NOW,
    });
    expect(await itemOf()).not.toHaveProperty('stopReason');
  });
});

describe('DynamoCursorStore', () => {
  it('grants the lease to exactly one of two invocations that ask at once', async () => {
    // Ten races, each on a feed nobody holds yet.
    for (let attempt = 0; attempt < 10; attempt++) {
      const [a, b] = await Promise.all([
        take(`feed-${attempt}`, 'invocation-a', NOW, NOW + 60_000),
        take(`feed-${attempt}`, 'invocation-b', NOW, NOW + 60_000),
      ]);
      expect([a, b].filter(Boolean)).toHaveLength(1);
    }
  });

  it('starts a new feed from the beginning, commits under the lease and hands the cursor to the next holder', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 60_000));
    expect(lease.state).toMatchObject({
      pageId: undefined,
      authFailures: 0,
      createdAt: new Date(NOW).toISOString(),
    });
    const committed = await store.commit(lease, {
      pageId: 'p-1',
      highWaterMark: '2024-01-01T00:00:00.000Z',
      lastCaughtUpAt: '2024-01-01T00:05:00.000Z',
      paceDelayMs: 250,
    });
    await store.release(committed, { outcome: 'caught-up', at: NOW });

    const next = await take('feed', 'b', NOW + 1, NOW + 1 + 60_000);

    expect(next?.state).toMatchObject({
      pageId: 'p-1',
      highWaterMark: '2024-01-01T00:00:00.000Z',
      lastCaughtUpAt: '2024-01-01T00:05:00.000Z',
      paceDelayMs: 250,
    });
    expect(next?.state.revision).toBeGreaterThan(committed.state.revision);
  });

  it('lets another invocation take an expired lease, after which the old holder cannot commit', async () => {
    const stale = granted(await take('feed', 'slow', NOW, NOW + 1_000));
    const fresh = granted(await take('feed', 'fresh', NOW + 2_000, NOW + 2_000 + 60_000));
    const advanced = await store.commit(fresh, { pageId: 'p-9' });

    await expect(store.commit(stale, { pageId: 'p-1' })).rejects.toBeInstanceOf(LeaseLostError);

    const after = await take('feed', 'probe', NOW + 10 * 60_000, NOW + 10 * 60_000 + 60_000);
    expect(after?.state.pageId).toBe('p-9');
    expect(after?.state.revision).toBeGreaterThan(advanced.state.revision);
  });

  it('records auth failures, their backoff and the refused token version (not the token), and clears them on the next good page', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 60_000));
    const failed = await store.recordAuthFailure(lease, {
      failures: 1,
      retryNotBefore: NOW + 300_000,
      tokenVersion: 3,
    });
    expect(failed.state).toMatchObject({
      authFailures: 1,
      authRetryNotBefore: NOW + 300_000,
      authFailedTokenVersion: 3,
    });
    const cleared = await store.commit(failed, { pageId: 'p-1', clearAuthFailures: true });
    expect(cleared.state).toMatchObject({ authFailures: 0, authRetryNotBefore: undefined });
    expect(cleared.state.authFailedTokenVersion).toBeUndefined();
    expect((await itemOf())?.authFailedTokenVersion).toBeUndefined();
  });

  it('does not release a lease it no longer holds', async () => {
    const stale = granted(await take('feed', 'slow', NOW, NOW + 1_000));
    await take('feed', 'fresh', NOW + 2_000, NOW + 2_000 + 60_000);
    await store.release(stale, { outcome: 'out-of-time', at: NOW + 2_500 });
    expect(await take('feed', 'third', NOW + 3_000, NOW + 3_000 + 60_000)).toBeUndefined();
    // Nor does it record its outcome over the holder's item.
    expect((await itemOf())?.lastRunOutcome).toBeUndefined();
  });

  it("records the run's outcome and end as it releases the lease", async () => {
    const lease = granted(await take('feed', 'run', NOW, NOW + 60_000));

    await store.release(lease, { outcome: 'caught-up', at: NOW + 1_000 });

    const item = await itemOf();
    expect(item?.lastRunOutcome).toEqual({ S: 'caught-up' });
    expect(item?.lastRunAt).toEqual({ S: new Date(NOW + 1_000).toISOString() });
    expect(item?.leaseOwner).toBeUndefined();
  });
});

describe('DynamoCursorStore with an answer lost on the way back (the write landed, the SDK retried)', () => {
  /** A store whose client talks to moto through a proxy that drops moto's answer to the next UpdateItem. */
  async function storeLosingOneAnswer() {
    let dropNext = false;
    const proxy = await startInterceptingProxy(moto.port, {
      onResponse: (call) => {
        if (call.operation !== 'UpdateItem' || !dropNext) return 'deliver';
        dropNext = false;
        return 'drop';
      },
    });
    const client = new DynamoDBClient({ endpoint: proxy.endpoint, maxAttempts: 3 });
    const lossy = new DynamoCursorStore(client, resources.cursorTable);
    const updates = () => proxy.calls.filter((call) => call.operation === 'UpdateItem');
    onTestFinished(async () => {
      client.destroy();
      await proxy.close();
    });
    return { lossy, updates, dropNextAnswer: () => (dropNext = true) };
  }

  it('recognises its own lease acquisition and holds the lease', async () => {
    const { lossy, updates, dropNextAnswer } = await storeLosingOneAnswer();
    dropNextAnswer();
    const lease = granted(await take('feed', 'invocation-a', NOW, NOW + 60_000, lossy));

    expect(updates().map((call) => [call.forwarded, call.delivered, call.errorType])).toEqual([
      [true, false, undefined],
      [true, true, 'ConditionalCheckFailedException'],
    ]);
    expect(lease.owner).toBe('invocation-a');
    // It really holds it: a commit under it succeeds, another invocation cannot take it.
    await expect(lossy.commit(lease, { pageId: 'p-1' })).resolves.toBeDefined();
    expect(await take('feed', 'invocation-b', NOW, NOW + 60_000)).toBeUndefined();
  });

  it('recognises its own idle record', async () => {
    const { lossy, updates, dropNextAnswer } = await storeLosingOneAnswer();
    dropNextAnswer();

    expect(await lossy.record('feed', 0, { outcome: 'caught-up', at: NOW })).toBe(true);
    expect(updates().at(-1)?.errorType).toBe('ConditionalCheckFailedException');
    expect(unmarshall((await itemOf()) ?? {})).toMatchObject({ revision: 1, lastRunOutcome: 'caught-up' });
  });

  it('recognises its own cursor commit and goes on from it', async () => {
    const { lossy, updates, dropNextAnswer } = await storeLosingOneAnswer();
    const lease = granted(await take('feed', 'invocation-a', NOW, NOW + 60_000, lossy));
    dropNextAnswer();
    const committed = await lossy.commit(lease, { pageId: 'p-1' });

    expect(updates().at(-1)?.errorType).toBe('ConditionalCheckFailedException');
    expect(committed.state).toMatchObject({ pageId: 'p-1', revision: lease.state.revision + 1 });
    const next = await lossy.commit(committed, { pageId: 'p-2' });
    expect(next.state.pageId).toBe('p-2');
  });
});

describe("the poller's request budget (buildPoller: the store, the interceptor, the log and the metric)", () => {
  it('returns from a run that a long 429 ended at once only with its hold written, logged and counted', async () => {
    const partner = await startScriptedServer();
    onTestFinished(() => partner.close());
    await aws.ssm.send(
      new PutParameterCommand({
        Name: '/budget/token',
        Type: 'SecureString',
        Value: 'token-7d1c',
        Overwrite: true,
      }),
    );
    // Only the cursor table and the token are real: the run ends at its first request.
    const unused = 'http://127.0.0.1:1/000000000000/unused';
    const env = pipelineEnv(
      {
        cursorTable: resources.cursorTable,
        tokenParameter: '/budget/token',
        ordersQueueUrl: unused,
        ordersDlqUrl: unused,
        downstreamQueueUrl: unused,
        ordersTable: 'unused',
        historyTable: 'unused',
        quarantineBucket: 'unused',
      },
      partner.url,
    );
    const { logger } = createObservability('order-feed-poller', env);
    const warn = vi.spyOn(logger, 'warn');
    const counts = new CountingMetrics();
    const metrics: FunctionMetrics = {
      count: (name, value) => counts.count(name, value),
      publish: () => {},
    };
    partner.script({ status: 429, headers: { 'retry-after': '120' } });
    // The budget's own client answers late (each write held 150 ms): the hold lands after the run's end.
    const proxy = await startInterceptingProxy(moto.port, {
      onRequest: async () => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        return 'forward' as const;
      },
    });
    const budgetDynamo = new DynamoDBClient({ endpoint: proxy.endpoint });
    onTestFinished(async () => {
      budgetDynamo.destroy();
      await proxy.close();
    });
    const poller = singleFeedPoller({ ...aws, budgetDynamo }, env, { logger, metrics });

    const result = await poller.poll(lambdaContext('poller', 60_000));

    const key = budgetItemKey('/budget/token');
    expect(result.kind).toBe('retry-later');
    expect(unmarshall((await itemOf(key)) ?? {}).holdUntil).toBeGreaterThan(Date.now() + 100_000);
    expect(
      Object.keys((await itemOf(budgetThrottlesKey(key))) ?? {}).filter((name) => /^m\d+$/.test(name)),
    ).toHaveLength(1);
    expect(counts.counts.LongRateLimitHolds).toBe(1);
    expect(warn).toHaveBeenCalledWith(
      'partner API asked every feed on the token to wait over a minute',
      expect.objectContaining({ askedMs: 120_000, heldMs: 120_000, retryAfter: '120' }),
    );
  });
});

describe('operatorUpdate (the ops CLI change)', () => {
  const change = (expectRevision: number | undefined) => ({
    feedId: 'feed',
    set: { pageId: 'replay-from' },
    remove: ['highWaterMark' as const],
    expectRevision,
    itemExists: true,
    requireNoLease: false,
  });

  it('moves the cursor and bumps the revision, so the running holder cannot commit over it', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 60_000));
    const held = await store.commit(lease, { pageId: 'p-1', highWaterMark: '2026-01-01T00:00:00.000Z' });

    const output = await aws.dynamo.send(
      new UpdateItemCommand(operatorUpdate(resources.cursorTable, change(held.state.revision), NOW)),
    );

    const written = cursorAttributesOf(unmarshall(output.Attributes ?? {}));
    expect(written).toMatchObject({
      pageId: 'replay-from',
      revision: held.state.revision + 1,
      leaseOwner: 'a',
    });
    expect(written.highWaterMark).toBeUndefined();
    await expect(store.commit(held, { pageId: 'p-2' })).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('changes nothing when the revision moved after the operator read it, or a live lease is held', async () => {
    const lease = granted(await take('feed', 'a', NOW, NOW + 60_000));
    const stale = operatorUpdate(resources.cursorTable, change(lease.state.revision - 1), NOW);
    const leased = operatorUpdate(
      resources.cursorTable,
      { ...change(lease.state.revision), requireNoLease: true },
      NOW,
    );

    for (const input of [stale, leased]) {
      await expect(aws.dynamo.send(new UpdateItemCommand(input))).rejects.toBeInstanceOf(
        ConditionalCheckFailedException,
      );
    }
    await expect(store.commit(lease, { pageId: 'p-1' })).resolves.toBeDefined();
  });
});

describe('DynamoRequestBudgetStore (the token budget item in the cursor table)', () => {
  const KEY = budgetItemKey('/partner/token');
  let budget: DynamoRequestBudgetStore;
  beforeEach(() => {
    budget = new DynamoRequestBudgetStore(aws.dynamo, resources.cursorTable);
  });
  const initial = (rate: number): BudgetState => ({
    nextSlotAt: NOW,
    rate,
    intervalMs: intervalOf(rate),
    holdUntil: 0,
    adjustedAt: NOW,
    taken: 0,
    takenAtAdjust: 0,
    slotAtAdjust: NOW,
    step: 0,
  });
  const read = async (key = KEY) => unmarshall((await itemOf(key)) ?? {});

  it('hands out one slot per request, an interval apart, and the present one after idle', async () => {
    const slots = [];
    for (let i = 0; i < 3; i += 1) slots.push((await budget.reserve(KEY, NOW, 1, 500, initial(10))).slotAt);
    expect(slots).toEqual([NOW, NOW + 100, NOW + 200]);
    const later = await budget.reserve(KEY, NOW + 10_000, 1, 500, initial(10));
    expect(later.slotAt).toBe(NOW + 10_000);
    expect(later.state.taken).toBe(4);
  });

  it('never gives two feeds asking at once the same slot', async () => {
    await budget.reserve(KEY, NOW, 1, 500, initial(10));
    const slots = await Promise.all(
      Array.from({ length: 8 }, () => budget.reserve(KEY, NOW, 1, 500, initial(10)).then((r) => r.slotAt)),
    );
    expect(new Set(slots).size).toBe(8);
    expect(Math.max(...slots)).toBe(NOW + 800);
  });

  it('takes several slots in one write for the requests of a process waiting at once, at the interval it saw', async () => {
    await budget.reserve(KEY, NOW, 1, 500, initial(10));
    const several = await budget.reserve(KEY, NOW, 3, 500, initial(10), true, { slots: 3, intervalMs: 100 });
    expect(several).toMatchObject({ slotAt: NOW + 100, slots: 3 });
    expect(several.state).toMatchObject({ nextSlotAt: NOW + 400, taken: 4 });
    // Idle since: the slots start now.
    const idle = await budget.reserve(KEY, NOW + 10_000, 2, 500, initial(10), true, {
      slots: 2,
      intervalMs: 100,
    });
    expect(idle).toMatchObject({ slotAt: NOW + 10_000, slots: 2, state: { nextSlotAt: NOW + 10_200 } });
    // The interval changed since the process saw it: one slot only (the others ask again).
    const changed = await budget.reserve(KEY, NOW + 10_000, 2, 500, initial(10), true, {
      slots: 2,
      intervalMs: 50,
    });
    expect(changed.slots).toBeUndefined();
    expect(changed).toMatchObject({ slotAt: NOW + 10_200, state: { nextSlotAt: NOW + 10_300, taken: 8 } });
  });

  it('only counts while unlimited (rate 0), the requests a feed took since its last write included', async () => {
    const { slotAt, state } = await budget.reserve(KEY, NOW, 5, 500, initial(0), false);
    expect(slotAt).toBe(NOW);
    expect(state).toMatchObject({ rate: 0, intervalMs: 0, taken: 5 });
  });

  it('cuts the rate once per hold, extends the hold for a later Retry-After, and counts every 429', async () => {
    await budget.reserve(KEY, NOW, 1, 500, initial(10));
    await budget.hold(KEY, NOW, NOW + 2_000, 7, 0.5);
    await budget.hold(KEY, NOW + 10, NOW + 3_000, 4.9, 0.35);
    await budget.hold(KEY, NOW + 20, NOW + 1_000, 4.9, 0.35);
    expect(await read()).toMatchObject({
      rate: 7,
      intervalMs: 142.857,
      step: 0.5,
      holdUntil: NOW + 3_000,
      nextSlotAt: NOW + 3_000,
      // The used rate is counted from the hold's end.
      adjustedAt: NOW + 3_000,
      slotAtAdjust: NOW + 3_000,
    });
    const after = await budget.reserve(KEY, NOW + 50, 1, 500, initial(10));
    expect(after.slotAt).toBe(NOW + 3_000);
    expect(
      budgetViewOf(await read(), await read(budgetThrottlesKey(KEY)), NOW + 60_000).throttlesLastHour,
    ).toBe(3);
  });

  it('keeps the slots booked past a new hold (no slot given twice), and never raises the rate by a cut', async () => {
    // Three slots a second apart: booked up to NOW + 3 s.
    for (let i = 0; i < 3; i += 1) await budget.reserve(KEY, NOW, 1, 500, initial(1));
    await budget.hold(KEY, NOW + 10, NOW + 1_010, 0.7, 0.05);
    expect(await read()).toMatchObject({ rate: 0.7, holdUntil: NOW + 1_010, nextSlotAt: NOW + 3_000 });
    const next = await budget.reserve(KEY, NOW + 20, 1, 500, initial(1));
    expect(next.slotAt).toBe(NOW + 3_000);
    // After the hold, a feed that decreased from an older state (a higher rate) holds but does not raise it.
    await budget.hold(KEY, NOW + 5_000, NOW + 6_000, 0.9, 0.06);
    expect(await read()).toMatchObject({ rate: 0.7, step: 0.05, holdUntil: NOW + 6_000 });
  });

  it('forgets the 429s of minutes more than an hour old', async () => {
    await budget.reserve(KEY, NOW, 1, 500, initial(10));
    await budget.hold(KEY, NOW, NOW + 1_000, 7, 0.5);
    await budget.hold(KEY, NOW + 2 * 3_600_000, NOW + 2 * 3_600_000 + 1_000, 4.9, 0.35);
    const throttles = await read(budgetThrottlesKey(KEY));
    expect(Object.keys(throttles).filter((name) => name.startsWith('m'))).toHaveLength(1);
    expect(budgetViewOf(await read(), throttles, NOW + 2 * 3_600_000).throttlesLastHour).toBe(1);
  });

  it('gives up at its own deadline when DynamoDB is slow, saying so, and sends nothing more', async () => {
    let settled = () => {};
    const delivered = new Promise<void>((resolve) => (settled = resolve));
    // DynamoDB answering after 1.5 s (the proxy holds each request that long before moto sees it).
    const proxy = await startInterceptingProxy(moto.port, {
      onRequest: async () => {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        return 'forward' as const;
      },
      onSettled: () => settled(),
    });
    const client = new DynamoDBClient({ endpoint: proxy.endpoint, maxAttempts: 3 });
    onTestFinished(async () => {
      client.destroy();
      await proxy.close();
    });
    const slow = new DynamoRequestBudgetStore(client, resources.cursorTable, 200);

    await expect(slow.reserve(KEY, NOW, 1, 500, initial(10))).rejects.toThrow(
      `request budget ${KEY}: DynamoDB did not answer within 200 ms`,
    );
    // A retry after the deadline would reach the proxy within its 1.5 s hold of the first: wait that long at
    // most. On a loaded machine the aborted first attempt may never reach the proxy at all (then none settles).
    await Promise.race([delivered, new Promise((resolve) => setTimeout(resolve, 3_000))]);
    // At most one attempt, no retry after the deadline.
    expect(proxy.calls.map((call) => call.operation)).toEqual(proxy.calls.length === 0 ? [] : ['UpdateItem']);
  });

  it('reads an item written before the window kept its slot time as counted by the clock', async () => {
    const { slotAtAdjust, ...older } = initial(10);
    await aws.dynamo.send(
      new PutItemCommand({
        TableName: resources.cursorTable,
        Item: marshall({ feedId: KEY, ...older, adjustedAt: NOW - 5_000 }),
      }),
    );
    const { state } = await budget.reserve(KEY, NOW, 1, 500, initial(10));
    expect(state.slotAtAdjust).toBe(NOW - 5_000);
  });

  it('raises the rate only over the state it saw, and not during a hold', async () => {
    const { state } = await budget.reserve(KEY, NOW, 1, 500, initial(5));
    await budget.adjust(KEY, NOW + 1_000, 5.5, state.adjustedAt);
    await budget.adjust(KEY, NOW + 1_000, 9, state.adjustedAt);
    expect((await read()).rate).toBe(5.5);
    await budget.hold(KEY, NOW + 2_000, NOW + 4_000, 3.85, 0.25);
    await budget.adjust(KEY, NOW + 3_000, 9, NOW + 4_000);
    expect((await read()).rate).toBe(3.85);
  });
});
