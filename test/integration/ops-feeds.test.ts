// `ops feeds …` and `ops status` in-process through runOps against emulated AWS (moto): the stack's tables,
// queues and bucket created from its template before each test (pipelineOnMoto), and stacks in the emulator whose
// outputs name them: a fleet's (a dispatcher function, output DispatcherFunctionName), one without that output,
// and one of a poller per feed (FeedPollers, as deployed today). What the rows hold is read back through the
// registry adapter the dispatcher scans with, and runs leave their cursor through the poller's cursor store.
// The flags, plans and texts alone: test/unit/ops/args.test.ts and formatting.test.ts.

import { Logger } from '@aws-lambda-powertools/logger';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import { budgetItemKey } from '../../functions/core/adapters/dynamo-request-budget.js';
import { LeaseLostError } from '../../functions/core/ingest/errors.js';
import { buildDispatcher } from '../../functions/dispatcher/build-dispatcher.js';
import { loadDispatcherConfig } from '../../functions/dispatcher/config.js';
import { buildPoller } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import type { AwsAt } from '../../tools/aws.js';
import type { PipelineResources } from '../../tools/harness/pipeline.js';
import { pipelineEnv } from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { dispatchRequestEvent } from '../../tools/ops/feeds.js';
import { startSimulator } from '../../tools/simulator/index.js';
import { pipelineOnMoto } from '../support/handlers.js';
import { EMULATOR_ENV, type RunningMoto } from '../support/moto.js';
import { createStackWithOutputs, runOpsCaptured } from '../support/ops.js';

const TOKEN = '/order-feed-ingester/eu-token';
const TOKEN_VALUE = 'eu-secret-token-4f1d9a77';
const MINUTE = 60_000;
const silent = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
const pipeline = pipelineOnMoto();
let moto: RunningMoto;
let aws: AwsAt;
let resources: PipelineResources;
let cursors: DynamoCursorStore;
let registry: DynamoFeedRegistry;

beforeEach(async () => {
  ({ moto, aws, resources } = pipeline);
  const outputs = {
    OrdersTableName: resources.ordersTable,
    HistoryTableName: resources.historyTable,
    CursorTableName: resources.cursorTable,
    QuarantineBucketName: resources.quarantineBucket,
    OrdersQueueUrl: resources.ordersQueueUrl,
    OrdersDeadLetterQueueUrl: resources.ordersDlqUrl,
  };
  const poller = { DOWNSTREAM_QUEUE_URLS: '{}' };
  await createStackWithOutputs(moto, 'Fleet', outputs, {
    DispatcherFunctionName: {},
    PollerFunctionName: poller,
  });
  await createStackWithOutputs(moto, 'FleetWithoutDispatcherOutput', outputs, { PollerFunctionName: poller });
  await createStackWithOutputs(moto, 'PerFeed', outputs, {
    PollerFunctionName: { ...poller, FEED_ID: 'orders' },
  });
  await aws.ssm.send(
    new PutParameterCommand({ Name: TOKEN, Type: 'SecureString', Value: TOKEN_VALUE, Overwrite: true }),
  );
  cursors = new DynamoCursorStore(aws.dynamo, resources.cursorTable);
  registry = new DynamoFeedRegistry(aws.dynamo, resources.cursorTable);
});

const ops = (stack: string, ...argv: string[]) =>
  runOpsCaptured([...argv, '--stack-name', stack, '--aws-endpoint', moto.endpoint], { ...EMULATOR_ENV });
const fleet = (...argv: string[]) => ops('Fleet', ...argv);

async function json<T>(...argv: string[]): Promise<T> {
  const ran = await fleet(...argv, '--json');
  expect(ran.code, ran.stderr).toBe(0);
  return JSON.parse(ran.stdout) as T;
}

async function itemOf(feedId: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await aws.dynamo.send(
    new GetItemCommand({ TableName: resources.cursorTable, Key: marshall({ feedId }), ConsistentRead: true }),
  );
  return Item && unmarshall(Item);
}

/** The revision a poller reads before it takes the lease. */
async function revisionOf(feedId: string): Promise<number> {
  return Number((await itemOf(feedId))?.revision ?? 0);
}

/** A run of the poller on the feed: leased, a page committed, released with `outcome`. */
async function run(feedId: string, caughtUpAt: number, outcome = 'caught-up') {
  const lease = await cursors.acquire(
    feedId,
    `run-${feedId}`,
    await revisionOf(feedId),
    caughtUpAt,
    caughtUpAt + MINUTE,
  );
  if (!lease) throw new Error('no lease');
  const committed = await cursors.commit(lease, {
    pageId: `cursor-of-${feedId}`,
    lastCaughtUpAt: new Date(caughtUpAt).toISOString(),
  });
  await cursors.release(committed, { outcome, at: caughtUpAt + 1_000 });
}

describe('ops feeds add', () => {
  it('writes the row the dispatcher scans, every default applied, and asks the dispatcher for a dispatch at once', async () => {
    const added = await fleet(
      'feeds',
      'add',
      'eu',
      '--token-parameter',
      TOKEN,
      '--vendor-ids',
      'v-eu-1, v-eu-2',
      '--schedule-minutes',
      '5',
      '--from-timestamp',
      '2026-01-01T01:00:00+01:00',
    );

    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('Asked the dispatcher');
    expect((await registry.scan()).find((row) => row.feedId === 'eu')).toMatchObject({
      registered: true,
      state: 'enabled',
      scheduleMinutes: 5,
      tokenParameterName: TOKEN,
    });
    expect((await itemOf('eu'))?.config).toEqual({
      tokenParameterName: TOKEN,
      vendorIds: ['v-eu-1', 'v-eu-2'],
      fromTimestamp: '2026-01-01T00:00:00.000Z',
      purpose: 'stream',
      pageSize: 100,
      scheduleMinutes: 5,
    });
    expect(`${added.stdout}${added.stderr}`).not.toContain(TOKEN_VALUE);
  });

  it('refuses a token parameter that does not exist or is not a SecureString, naming it, and writes nothing', async () => {
    await aws.ssm.send(
      new PutParameterCommand({ Name: '/plain/token', Type: 'String', Value: 'x', Overwrite: true }),
    );

    const missing = await fleet('feeds', 'add', 'eu', '--token-parameter', '/no/such/token', '--dry-run');
    const plain = await fleet('feeds', 'add', 'eu', '--token-parameter', '/plain/token');
    await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN);
    const changed = await fleet('feeds', 'set', 'eu', '--token-parameter', '/no/such/token');

    expect([missing.code, plain.code, changed.code]).toEqual([1, 1, 1]);
    expect(missing.stderr).toContain('no SSM parameter named "/no/such/token"');
    expect(plain.stderr).toContain('"/plain/token" is a String parameter; the token must be a SecureString');
    expect(changed.stderr).toContain('no SSM parameter named "/no/such/token"');
    expect((await itemOf('eu'))?.config).toMatchObject({ tokenParameterName: TOKEN });
  });

  it('with --dry-run prints the row and writes nothing; refuses a feed that exists; adopts a cursor item, keeping its cursor', async () => {
    const dry = await json<{ applied: boolean; config: { pageSize: number } }>(
      ...['feeds', 'add', 'eu', '--token-parameter', TOKEN, '--page-size', '50', '--dry-run'],
    );
    expect(dry).toMatchObject({ applied: false, config: { pageSize: 50 } });
    expect(await itemOf('eu')).toBeUndefined();

    await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN);
    const again = await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('feed "eu" already exists (state enabled)');

    await run('legacy', Date.now());
    const adopted = await fleet('feeds', 'add', 'legacy', '--token-parameter', TOKEN);
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(adopted.stdout).toContain('the cursor is kept');
    expect(await itemOf('legacy')).toMatchObject({ pageId: 'cursor-of-legacy', feedState: 'enabled' });
  });

  it('says when the feed is polled where there is no dispatcher to ask: at the next tick, or on a stack of a poller per feed, once it runs the fleet', async () => {
    const withoutOutput = await ops(
      'FleetWithoutDispatcherOutput',
      'feeds',
      'add',
      'a',
      '--token-parameter',
      TOKEN,
    );
    const perFeed = await ops('PerFeed', 'feeds', 'add', 'b', '--token-parameter', TOKEN, '--json');

    expect(withoutOutput.code, withoutOutput.stderr).toBe(0);
    expect(withoutOutput.stdout).toContain('The dispatcher polls it at its next tick (within a minute');
    expect(perFeed.code, perFeed.stderr).toBe(0);
    expect(JSON.parse(perFeed.stdout)).toMatchObject({ applied: true, dispatch: 'per-feed-stack' });
  });

  it('leads to the first poll without a deploy: the request it sends starts the dispatcher, whose batch polls the new feed', async () => {
    const sim = await startSimulator({
      token: TOKEN_VALUE,
      feed: { seed: 5, orders: 8, vendors: 2, currencies: ['EUR'] },
    });
    try {
      const added = await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN, '--vendor-ids', 'vendor-1');
      expect(added.stdout).toContain('Asked the dispatcher');
      // moto cannot run a function: the dispatcher and the poller it starts run here, on the event ops sends.
      const env = pipelineEnv(resources, sim.url, { DOWNSTREAM_QUEUE_URLS: '{}' });
      const poller = buildPoller(aws, loadPollerConfig(env), { logger: silent });
      const runs: Array<Promise<unknown>> = [];
      const dispatcher = buildDispatcher(
        { dynamo: aws.dynamo, ssm: aws.ssm, lambda: aws.lambda },
        loadDispatcherConfig({ CURSOR_TABLE_NAME: resources.cursorTable, POLLER_FUNCTION_NAME: 'poller' }),
        {
          startPoller: async (event) => void runs.push(poller(event, lambdaContext('poller', 60_000))),
          unreservedConcurrency: async () => undefined,
          logger: silent,
        },
      );
      await dispatcher(
        dispatchRequestEvent(Date.now(), 'ops feeds add'),
        lambdaContext('dispatcher', 60_000),
      );
      await Promise.all(runs);

      expect(runs).toHaveLength(1);
      const polled = sim.requests.filter((request) => request.status === 200);
      expect(polled.length).toBeGreaterThan(0);
      for (const request of polled)
        expect(new URL(request.url, sim.url).searchParams.getAll('vendorIds')).toEqual(['vendor-1']);
      expect(await itemOf('eu')).toMatchObject({ feedState: 'enabled', lastRunOutcome: 'caught-up' });
    } finally {
      await sim.close();
    }
  });
});

describe('ops feeds list and show', () => {
  it('lists every feed with its state, token, vendors, schedule, lag, last run and reason; --stalest the N most behind, paused and removed left out', async () => {
    const now = Date.now();
    for (const [id, lagMinutes] of [
      ['a', 5],
      ['b', 50],
      ['c', 500],
      ['d', 5000],
    ] as const) {
      await fleet('feeds', 'add', id, '--token-parameter', TOKEN, '--vendor-ids', `v-${id}`);
      await run(id, now - lagMinutes * MINUTE);
    }
    await fleet('feeds', 'pause', 'd', '--reason', 'partner asked us to stop');
    await run('legacy', now - 20 * MINUTE);

    const listed = await fleet('feeds', 'list');
    const stalest = await json<Array<{ feedId: string }>>('feeds', 'list', '--stalest', '2');
    const all = await json<Array<{ feedId: string; state: string }>>('feeds', 'list');

    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(
        `d\\s+paused\\s+${TOKEN}\\s+v-d\\s+1m\\s+3d 11h\\s+caught-up at \\S+\\s+partner asked us to stop`,
      ),
    );
    expect(listed.stdout).toMatch(/legacy\s+no row\s+-\s+-\s+-\s+20m/);
    expect(stalest.map((feed) => feed.feedId)).toEqual(['c', 'b']);
    expect(all.map((feed) => `${feed.feedId}:${feed.state}`)).toEqual([
      'a:enabled',
      'b:enabled',
      'c:enabled',
      'd:paused',
      'legacy:enabled',
    ]);
  });

  it('shows one feed: configuration, state, cursor, lease, auth backoff and last run; the token by its name only', async () => {
    await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN, '--vendor-ids', 'v-1,v-2');
    await run('eu', Date.now() - 2 * MINUTE, 'page-limit');
    await cursors.acquire('eu', 'run-in-progress', await revisionOf('eu'), Date.now(), Date.now() + MINUTE);

    const shown = await fleet('feeds', 'show', 'eu');
    const unknown = await fleet('feeds', 'show', 'nobody');

    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`token parameter\\s+${TOKEN}`));
    expect(shown.stdout).toMatch(/vendor ids\s+v-1, v-2/);
    expect(shown.stdout).toMatch(/last run\s+page-limit at /);
    expect(shown.stdout).toMatch(
      new RegExp(`cursor\\s+cursor-of-eu \\(revision ${(await itemOf('eu'))?.revision}\\)`),
    );
    expect(shown.stdout).toMatch(/lease\s+held by run-in-progress until /);
    expect(shown.stdout).toMatch(/auth backoff\s+none/);
    expect(shown.stdout).not.toContain(TOKEN_VALUE);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown feed "nobody"');
  });
});

describe('ops feeds set', () => {
  it('changes the configuration from the next run, leaving the cursor, the lease and the fencing revision as they are', async () => {
    await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN, '--vendor-ids', 'v-1');
    const lease = await cursors.acquire(
      'eu',
      'run-1',
      await revisionOf('eu'),
      Date.now(),
      Date.now() + MINUTE,
    );
    if (!lease) throw new Error('no lease');
    const before = await itemOf('eu');

    const set = await fleet('feeds', 'set', 'eu', '--page-size', '50', '--unset', 'vendor-ids');
    const after = await itemOf('eu');

    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('pageSize: 100 → 50');
    expect(set.stdout).toContain('vendorIds: v-1 → (unset)');
    const { config, configRevision, configUpdatedAt, ...rest } = after ?? {};
    expect(config).toMatchObject({ pageSize: 50 });
    expect(config).not.toHaveProperty('vendorIds');
    expect(configRevision).toBe(2);
    expect(configUpdatedAt).toBeDefined();
    expect({ ...rest, config: before?.config, configRevision: 1 }).toEqual(before);
    // The run in progress commits as usual.
    await expect(cursors.commit(lease, { pageId: 'p-2' })).resolves.toBeDefined();
  });

  it('checks the whole configuration (a rule across keys names its key), says when nothing changes, refuses a removed feed', async () => {
    await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN);

    const across = await fleet('feeds', 'set', 'eu', '--order-ids', '1,2');
    const same = await fleet('feeds', 'set', 'eu', '--page-size', '100');
    await fleet('feeds', 'remove', 'eu');
    const removed = await fleet('feeds', 'set', 'eu', '--page-size', '10');

    expect(across.code).toBe(1);
    expect(across.stderr).toContain('orderIds: is only for a feed whose purpose is "reconcile"');
    expect(same.stdout).toContain('Nothing to do');
    expect(removed.code).toBe(1);
    expect(removed.stderr).toContain('feed "eu" is removed: resume it first');
    expect((await itemOf('eu'))?.configRevision).toBe(1);
  });
});

describe('ops feeds pause, resume and remove', () => {
  it('pauses with a reason, resumes (asking for a dispatch), says when there is nothing to do, and never pauses a removed feed', async () => {
    await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN);

    const paused = await fleet('feeds', 'pause', 'eu', '--reason', 'merchant offboarding');
    const pausedItem = await itemOf('eu');
    const again = await fleet('feeds', 'pause', 'eu');
    const resumed = await json<{ to: string; dispatch: string }>('feeds', 'resume', 'eu');
    const resumedItem = await itemOf('eu');
    await fleet('feeds', 'remove', 'eu');
    const pauseRemoved = await fleet('feeds', 'pause', 'eu');

    expect(paused.code, paused.stderr).toBe(0);
    expect(pausedItem).toMatchObject({ feedState: 'paused', stateReason: 'merchant offboarding' });
    expect(again.stdout).toContain('Nothing to do: feed eu is already paused');
    expect(resumed).toMatchObject({ to: 'enabled', dispatch: 'requested' });
    expect(resumedItem?.feedState).toBe('enabled');
    expect(resumedItem?.stateReason).toBeUndefined();
    expect(pauseRemoved.code).toBe(1);
    expect(pauseRemoved.stderr).toContain('feed "eu" is removed: resume it first');
  });

  it('removes a feed keeping its cursor; --delete-cursor plans without --yes, is refused under a live lease unless --force, and deletes the cursor, fencing out the run', async () => {
    await fleet('feeds', 'add', 'eu', '--token-parameter', TOKEN);
    await run('eu', Date.now());

    const removed = await fleet('feeds', 'remove', 'eu', '--reason', 'contract ended');
    const afterRemove = await itemOf('eu');
    const planned = await fleet('feeds', 'remove', 'eu', '--delete-cursor');
    // A run still going (on AWS: one that started before the remove) commits a page.
    const lease = await cursors.acquire(
      'eu',
      'run-live',
      await revisionOf('eu'),
      Date.now(),
      Date.now() + MINUTE,
    );
    if (!lease) throw new Error('no lease');
    const committed = await cursors.commit(lease, { pageId: 'p-live' });
    const beforeRefused = await itemOf('eu');
    const refused = await fleet('feeds', 'remove', 'eu', '--delete-cursor', '--yes');
    const afterRefused = await itemOf('eu');
    const forced = await fleet('feeds', 'remove', 'eu', '--delete-cursor', '--yes', '--force');
    const afterForced = await itemOf('eu');

    expect(removed.code, removed.stderr).toBe(0);
    expect(afterRemove).toMatchObject({
      feedState: 'removed',
      stateReason: 'contract ended',
      pageId: 'cursor-of-eu',
    });
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toContain('cursor cursor-of-eu');
    expect(planned.stdout).toContain('Nothing changed: add --yes to do it.');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('leased by run-live');
    expect(afterRefused).toEqual(beforeRefused);
    expect(forced.code, forced.stderr).toBe(0);
    expect(afterForced?.pageId).toBeUndefined();
    expect(afterForced).toMatchObject({
      feedState: 'removed',
      revision: (beforeRefused?.revision as number) + 1,
    });
    await expect(cursors.commit(committed, { pageId: 'p-late' })).rejects.toThrow(LeaseLostError);
  });
});

describe('ops status', () => {
  it('counts every feed by state and shows the stalest few; with --feed, that feed in detail and its token’s budget', async () => {
    const now = Date.now();
    await aws.ssm.send(
      new PutParameterCommand({
        Name: '/other/token',
        Type: 'SecureString',
        Value: 'other',
        Overwrite: true,
      }),
    );
    for (let index = 1; index <= 8; index += 1) {
      await fleet('feeds', 'add', `feed-${index}`, '--token-parameter', index === 8 ? TOKEN : '/other/token');
      await run(`feed-${index}`, now - index * MINUTE);
    }
    await fleet('feeds', 'pause', 'feed-8');
    await fleet('feeds', 'remove', 'feed-7');
    // Each token's request budget, as the poller leaves it.
    for (const token of [TOKEN, '/other/token']) {
      await aws.dynamo.send(
        new PutItemCommand({
          TableName: resources.cursorTable,
          Item: marshall({ feedId: budgetItemKey(token), rate: 3, nextSlotAt: now, holdUntil: 0 }),
        }),
      );
    }

    const report = await json<{ fleet: Record<string, number>; feeds: Array<{ feedId: string }> }>('status');
    const text = await fleet('status');
    const one = await fleet('status', '--feed', 'feed-8');

    expect(report.fleet).toEqual({
      feeds: 8,
      enabled: 6,
      paused: 1,
      stopped: 0,
      removed: 1,
      unregistered: 0,
    });
    expect(report.feeds.map((feed) => feed.feedId)).toEqual([
      'feed-6',
      'feed-5',
      'feed-4',
      'feed-3',
      'feed-2',
    ]);
    expect(text.stdout).toContain('Feeds: 8 (enabled 6, paused 1, stopped 0, removed 1)');
    expect(text.stdout).toContain('The 5 stalest of those polled');
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/Feed feed-8\n\s+state\s+paused/);
    expect(one.stdout).toContain(TOKEN);
    expect(one.stdout).not.toContain('/other/token');
  });
});
