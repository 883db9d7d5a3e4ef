// Reconciliation by order id against emulated AWS (moto) and the partner simulator over real HTTP: the table
// is left behind on purpose once (one short poller run), then `ops reconcile` (in-process, as the CLI runs it)
// reports it, repairs it through the queues and the real consumer, and finds it in sync.

import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import { parseFeedConfig } from '../../functions/core/fleet/feed-config.js';
import type { Int64 } from '../../functions/core/model/int64.js';
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
import { FeedRegistryAdmin } from '../../tools/ops/feed-registry-admin.js';
import { DynamoStoredOrders } from '../../tools/ops/reconcile/dynamo-stored-orders.js';
import type { ReconcileReport, ResultKind } from '../../tools/ops/reconcile/reconcile-orders.js';
import { type ExpectedState, type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { type Handlers, handlersFor } from '../support/handlers.js';
import { type RunningMoto, workerMoto } from '../support/moto.js';
import { createStackWithOutputs, runOpsCaptured } from '../support/ops.js';
import { readLedger, receiveAll } from '../support/pipeline.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

let moto: RunningMoto;
let aws: AwsClients;
let sim: RunningSimulator;
let scripted: ScriptedServer;
let resources: PipelineResources;
let expected: ExpectedState;
let handlers: Handlers;
/** What reconcile should say for each feed order, from the table as the partial run left it. */
let want: Map<number, ResultKind>;

beforeAll(async () => {
  moto = await workerMoto();
  aws = useEmulator(moto);
  sim = await startSimulator({ token: TEST_TOKEN, feed: { seed: 5, orders: 30, vendors: 3 } });
  scripted = await startScriptedServer();
  expected = sim.expected();
  resources = await createPipelineResources(aws);
  // One poller run limited to 2 pages of 10, drained by the consumer: the table holds some orders at their
  // latest version, some at an older one, and lacks the rest. Only the orders queue is subscribed, so the
  // downstream queue receives nothing but repairs.
  handlers = handlersFor(
    aws,
    pipelineEnv(resources, sim.url, { PAGE_SIZE: '10', MAX_PAGES_PER_RUN: '2', DOWNSTREAM_QUEUE_URLS: '{}' }),
  );
  expect((await handlers.poll()).kind).toBe('page-limit');
  await drainQueue(aws, resources.ordersQueueUrl, handlers);
  const table = await scanOrders(aws, resources.ordersTable);
  want = new Map(
    [...expected.orders].map(([id, order]) => {
      const stored = table.get(id);
      if (stored === undefined) return [id, 'missing'];
      return [id, Number(stored.version) < order.version ? 'behind' : 'in-sync'];
    }),
  );
});
afterAll(async () => {
  await scripted?.close();
  await sim?.close();
  await moto?.stop();
});

/** `npm run ops -- reconcile …`; the token only as the environment (or the stack) gives it. */
const reconcile = (args: string[], env: NodeJS.ProcessEnv = { PARTNER_API_TOKEN: TEST_TOKEN }) =>
  runOpsCaptured(['reconcile', '--aws-endpoint', moto.endpoint, ...args], env);

/** The table, queues and API as explicit flags (no stack). */
const where = (apiUrl = sim.url) => [
  '--orders-table',
  resources.ordersTable,
  '--queue-url',
  resources.ordersQueueUrl,
  '--queue-url',
  resources.downstreamQueueUrl,
  '--api-url',
  apiUrl,
];

function resultsOf(report: ReconcileReport): Map<Int64, ResultKind> {
  return new Map(report.orders.map((entry) => [entry.id, entry.result]));
}

describe('reconcile against the simulator and moto', () => {
  it('samples ids from the table and reads stored versions in chunks of 100, a 64-bit id beyond 2^53 exactly', async () => {
    // Apart from its rounding neighbour; both are gone again when the test ends.
    const big = 2n ** 62n + 7n;
    const put = (id: bigint, version: number) =>
      aws.dynamo.send(
        new PutItemCommand({
          TableName: resources.ordersTable,
          Item: { orderId: { N: String(id) }, version: { N: String(version) }, status: { S: 'accepted' } },
        }),
      );
    await put(big, 3);
    await put(big + 1n, 9);
    const table = await scanOrders(aws, resources.ordersTable);
    const stored = new DynamoStoredOrders(aws.dynamo, resources.ordersTable);

    const sample = await stored.sampleIds(5);
    const all = await stored.sampleIds(1000);

    expect(sample).toHaveLength(5);
    expect(new Set(sample).size).toBe(5);
    expect(sample.every((id) => table.has(id))).toBe(true);
    expect(new Set(all)).toEqual(new Set(table.keys()));
    const absent = Array.from({ length: 150 }, (_, index) => index + 1);
    const versions = await stored.getVersions([...absent, ...table.keys()]);
    expect(new Map([...versions].map(([id, v]) => [id, v.version]))).toEqual(
      new Map([...table].map(([id, item]) => [id, item.version])),
    );
    const bigVersions = await stored.getVersions([big, big + 1n]);
    expect(all).toEqual(expect.arrayContaining([big, big + 1n]));
    expect([bigVersions.get(big)?.version, bigVersions.get(big + 1n)?.version]).toEqual([3, 9]);
    for (const id of [big, big + 1n]) {
      const Key = { orderId: { N: String(id) } };
      await aws.dynamo.send(new DeleteItemCommand({ TableName: resources.ordersTable, Key }));
    }
  });

  it('exits 1 while orders are behind or missing; --repair (from the stack) publishes to every queue and exits 0; once applied, all are in sync', async () => {
    const ids = [...expected.orders.keys()].join(',');
    // The deployed stack's output names, and a poller function carrying its environment.
    await createStackWithOutputs(
      moto,
      'order-feed',
      {
        OrdersTableName: resources.ordersTable,
        OrdersQueueUrl: resources.ordersQueueUrl,
        DownstreamQueueUrlAnalytics: resources.downstreamQueueUrl,
      },
      {
        PollerFunctionName: {
          FEED_ID: 'feed-from-stack',
          PARTNER_BASE_URL: sim.url,
          PARTNER_TOKEN_PARAMETER: resources.tokenParameter,
          ORDERS_QUEUE_URL: resources.ordersQueueUrl,
          DOWNSTREAM_QUEUE_URLS: JSON.stringify({ analytics: resources.downstreamQueueUrl }),
        },
      },
    );

    const check = await reconcile([...where(), '--ids', ids, '--json']);
    // Table, queues, API, token and feed id from the stack's outputs and its poller's environment.
    const repair = await reconcile(['--stack-name', 'order-feed', '--ids', ids, '--repair'], {});

    expect(check.stderr).toBe('');
    expect(check.code).toBe(1);
    const report = JSON.parse(check.stdout) as ReconcileReport;
    // Without --repair nothing is written: the downstream queue below holds the repairs only.
    expect(resultsOf(report)).toEqual(want);
    expect(report.counts.behind).toBeGreaterThan(0);
    expect(report.counts.missing).toBeGreaterThan(0);
    expect(report.counts['in-sync']).toBeGreaterThan(0);
    const behind = report.orders.find((entry) => entry.result === 'behind');
    expect(behind?.partnerVersion).toBe(expected.orders.get(Number(behind?.id ?? -1))?.version);
    const repaired = report.counts.behind + report.counts.missing;
    expect(repair.stderr).toBe('');
    expect(repair.code).toBe(0);
    expect(repair.stdout).toMatch(/^ID\s+STORED\s+PARTNER\s+RESULT\s+DETAIL$/m);
    expect(repair.stdout).toContain(`repairs: ${repaired} published, 0 failed`);
    expect(repair.stdout).toMatch(/; 0 need attention$/m);
    // Each repair names this reconcile run, on every queue and then on the table item it updates.
    const correlationId = /carry correlationId (reconcile:\S+)$/m.exec(repair.stdout)?.[1];
    expect(correlationId).toMatch(/^reconcile:[0-9a-f-]{36}$/);
    const downstream = (await receiveAll(aws, resources.downstreamQueueUrl)).map(parseOrderVersionMessage);
    expect(downstream).toHaveLength(repaired);
    for (const message of downstream) {
      expect(message.source).toMatchObject({ feedId: 'feed-from-stack', correlationId, origin: 'reconcile' });
    }

    await drainQueue(aws, resources.ordersQueueUrl, handlers);

    const table = await scanOrders(aws, resources.ordersTable);
    for (const [id, result] of want) {
      if (result !== 'in-sync') expect(table.get(id)?.correlationId, `order ${id}`).toBe(correlationId);
    }
    for (const [id, order] of expected.orders) {
      expect(table.get(id), `order ${id}`).toMatchObject({
        version: order.version,
        status: order.status,
        total: order.total,
      });
    }
    expect(await readLedger(aws, resources.ordersTable)).toEqual(expected.sales);
    const sample = await reconcile([...where(), '--sample', '100', '--json']);
    expect(sample.code).toBe(0);
    expect((JSON.parse(sample.stdout) as ReconcileReport).counts['in-sync']).toBe(expected.orders.size);
    for (const run of [check, repair, sample]) expect(run.stdout + run.stderr).not.toContain(TEST_TOKEN);
  });
});

describe("a fleet's stack: the feed's registry row names the partner's URL and the token", () => {
  it('takes them from the one feed, or from the row of --feed-id; feeds on several tokens or URLs need --feed-id', async () => {
    const stack = 'order-feed-fleet';
    // The poller of a fleet serves every feed: no FEED_ID or PARTNER_TOKEN_PARAMETER in its environment.
    await createStackWithOutputs(
      moto,
      stack,
      {
        OrdersTableName: resources.ordersTable,
        OrdersQueueUrl: resources.ordersQueueUrl,
        CursorTableName: resources.cursorTable,
        DispatcherFunctionName: 'order-feed-fleet-dispatcher',
      },
      { PollerFunctionName: { PARTNER_BASE_URL: sim.url, ORDERS_QUEUE_URL: resources.ordersQueueUrl } },
    );
    const ids = [...expected.orders.keys()].slice(0, 5).join(',');
    const check = (...args: string[]) =>
      reconcile(['--stack-name', stack, '--ids', ids, '--json', ...args], {});
    const errors = (run: { stdout: string }) => (JSON.parse(run.stdout) as ReconcileReport).counts.error;

    // The registry's one feed (the poller run above registered partner-feed) names the token parameter.
    const one = await check();
    expect(one.stderr).toBe('');
    expect(errors(one)).toBe(0);

    // A second feed on another partner URL (one that answers nothing), with the same token parameter.
    await new FeedRegistryAdmin(aws.dynamo, resources.cursorTable).add(
      'merchant-a',
      parseFeedConfig({ tokenParameterName: resources.tokenParameter, partnerBaseUrl: 'http://127.0.0.1:9' }),
      Date.now(),
    );
    onTestFinished(async () => {
      const Key = { feedId: { S: 'merchant-a' } };
      await aws.dynamo.send(new DeleteItemCommand({ TableName: resources.cursorTable, Key }));
    });
    const several = await check();
    expect(several.code).toBe(2);
    expect(several.stderr).toContain('pass --feed-id (feeds: merchant-a, partner-feed)');
    const named = await check('--feed-id', 'partner-feed');
    expect(named.stderr).toBe('');
    expect(errors(named)).toBe(0);
    // merchant-a's own URL is asked: every call fails.
    expect(errors(await check('--feed-id', 'merchant-a'))).toBe(5);
    const unknown = await check('--feed-id', 'merchant-c');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('--feed-id merchant-c: the stack has no such feed');
    for (const run of [one, several, named, unknown])
      expect(run.stdout + run.stderr).not.toContain(TEST_TOKEN);
  });
});

describe('a partner that rejects the token (scripted server)', () => {
  it('stops at a 401 without further calls and exits 1 naming it, never printing the token', async () => {
    scripted.setFallback({ status: 401, body: { message: 'Unauthorized' } });
    const ids = Array.from({ length: 20 }, (_, index) => index + 1).join(',');

    const rejected = await reconcile([...where(scripted.url), '--ids', ids, '--concurrency', '2'], {
      PARTNER_API_TOKEN: 'not-the-token',
    });

    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toMatch(/401 Unauthorized/);
    expect(rejected.stdout + rejected.stderr).not.toContain('not-the-token');
    expect(scripted.requests.length).toBeLessThanOrEqual(2);
  });
});
