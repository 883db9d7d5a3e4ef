// Reconciliation by order id against emulated AWS (moto) and the partner simulator over real HTTP:
// the table is left behind on purpose (one short poller run), then reconcile reports it, repairs it
// through the queues and the real consumer, and the CLI is run as an operator would run it.

import { execFile } from 'node:child_process';
import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSqsClient } from '../../functions/core/adapters/aws-clients.js';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import type { Int64 } from '../../functions/core/model/int64.js';
import { createPartnerClient } from '../../functions/core/partner/client.js';
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
import { runCli } from '../../tools/reconcile/cli.js';
import { DynamoStoredOrders } from '../../tools/reconcile/dynamo-stored-orders.js';
import {
  ReconcileAuthError,
  type ReconcileReport,
  type ResultKind,
  reconcileOrders,
} from '../../tools/reconcile/reconcile-orders.js';
import { type ExpectedState, type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { sampleOrder } from '../fixtures/orders.js';
import { type Handlers, handlersFor } from '../support/handlers.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { readLedger, receiveAll } from '../support/pipeline.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

const UNKNOWN_ID = 42;

let moto: RunningMoto;
let aws: AwsClients;
let sim: RunningSimulator;
let scripted: ScriptedServer;
let resources: PipelineResources;
let expected: ExpectedState;

beforeAll(async () => {
  moto = await startMoto();
  aws = useEmulator(moto);
  sim = await startSimulator({ token: TEST_TOKEN, feed: { seed: 5, orders: 30, vendors: 3 } });
  scripted = await startScriptedServer();
  expected = sim.expected();
});
afterAll(async () => {
  await scripted?.close();
  await sim?.close();
  await moto?.stop();
});
beforeEach(async () => {
  await moto.reset();
  resources = await createPipelineResources(aws);
  scripted.reset();
});

/**
 * One poller run limited to 2 pages of 10, drained by the consumer: the table holds some orders at
 * their latest version, some at an older one, and lacks the rest. Only the orders queue is subscribed,
 * so the downstream queue receives nothing but repairs.
 */
async function ingestPartially(): Promise<Handlers> {
  const handlers = handlersFor(
    aws,
    pipelineEnv(resources, sim.url, { PAGE_SIZE: '10', MAX_PAGES_PER_RUN: '2', DOWNSTREAM_QUEUE_URLS: '{}' }),
  );
  const outcome = await handlers.poll();
  expect(outcome.kind).toBe('page-limit');
  await drainQueue(aws, resources.ordersQueueUrl, handlers);
  return handlers;
}

function useCase(partnerUrl = sim.url) {
  return {
    stored: new DynamoStoredOrders(aws.dynamo, resources.ordersTable),
    partner: createPartnerClient({
      baseUrl: partnerUrl,
      token: async () => TEST_TOKEN,
      retryPolicy: { maxAttempts: 1 },
    }),
    publisher: new SqsFanoutPublisher(createSqsClient(), [
      resources.ordersQueueUrl,
      resources.downstreamQueueUrl,
    ]),
    now: Date.now,
  };
}

async function queueDepth(queueUrl: string): Promise<number> {
  const output = await aws.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(output.Attributes?.ApproximateNumberOfMessages ?? 'NaN');
}

/** What reconcile should say for each feed order, from the table as it is and the simulator's truth. */
async function expectedResults(): Promise<Map<number, ResultKind>> {
  const table = await scanOrders(aws, resources.ordersTable);
  const results = new Map<number, ResultKind>();
  for (const [id, order] of expected.orders) {
    const stored = table.get(id);
    if (stored === undefined) results.set(id, 'missing');
    else if (Number(stored.version) < order.version) results.set(id, 'behind');
    else results.set(id, 'in-sync');
  }
  return results;
}

function resultsOf(report: ReconcileReport): Map<Int64, ResultKind> {
  return new Map(report.orders.map((entry) => [entry.id, entry.result]));
}

async function tableVersions(): Promise<Map<Int64, unknown>> {
  const table = await scanOrders(aws, resources.ordersTable);
  return new Map(
    [...table].map(([id, item]) => [id, { version: item.version, status: item.status, total: item.total }]),
  );
}

const feedIds = () => [...expected.orders.keys()];

describe('reconcileOrders against the simulator and moto', () => {
  it('reports behind, missing, in-sync and not-found without writing anything', async () => {
    await ingestPartially();
    const want = await expectedResults();
    const before = await tableVersions();

    const report = await reconcileOrders(useCase(), {
      ids: [...feedIds(), UNKNOWN_ID],
      feedId: 'partner-feed',
    });

    expect(resultsOf(report)).toEqual(new Map([...want, [UNKNOWN_ID, 'not-found']]));
    expect(report.counts.behind).toBeGreaterThan(0);
    expect(report.counts.missing).toBeGreaterThan(0);
    expect(report.counts['in-sync']).toBeGreaterThan(0);
    expect(report.unresolved).toBe(report.counts.behind + report.counts.missing);
    const behind = report.orders.find((entry) => entry.result === 'behind');
    expect(behind?.partnerVersion).toBe(expected.orders.get(Number(behind?.id ?? -1))?.version);
    expect(await tableVersions()).toEqual(before);
    expect(await queueDepth(resources.ordersQueueUrl)).toBe(0);
    expect(await queueDepth(resources.downstreamQueueUrl)).toBe(0);
  });

  it('repairs through every queue: after the consumer drains, the table and ledger equal the partner', async () => {
    const handlers = await ingestPartially();

    const report = await reconcileOrders(useCase(), { ids: feedIds(), feedId: 'partner-feed', repair: true });

    const repaired = report.counts.behind + report.counts.missing;
    expect(repaired).toBeGreaterThan(0);
    expect(report.repairs).toEqual({ published: repaired, failed: 0 });
    expect(report.unresolved).toBe(0);
    const downstream = (await receiveAll(aws, resources.downstreamQueueUrl)).map(parseOrderVersionMessage);
    expect(downstream).toHaveLength(repaired);
    expect(downstream.every((message) => message.source.feedId === 'partner-feed')).toBe(true);
    // Each repair names this reconcile run, on the queue and then on the table item it updates.
    const correlationId = `reconcile:${report.runId}`;
    expect(downstream.every((message) => message.source.correlationId === correlationId)).toBe(true);
    expect(downstream.every((message) => message.source.origin === 'reconcile')).toBe(true);

    await drainQueue(aws, resources.ordersQueueUrl, handlers);

    const table = await scanOrders(aws, resources.ordersTable);
    const repairedIds = report.orders
      .filter((entry) => entry.repair === 'published')
      .map((entry) => entry.id);
    for (const id of repairedIds) expect(table.get(id)?.correlationId, `order ${id}`).toBe(correlationId);
    for (const [id, order] of expected.orders) {
      expect(table.get(id), `order ${id}`).toMatchObject({
        version: order.version,
        status: order.status,
        total: order.total,
      });
    }
    expect(await readLedger(aws, resources.ordersTable)).toEqual(expected.sales);
    const again = await reconcileOrders(useCase(), { ids: feedIds(), feedId: 'partner-feed' });
    expect(again.counts['in-sync']).toBe(expected.orders.size);
  });

  it('samples ids from the table and reads stored versions in chunks of 100', async () => {
    await ingestPartially();
    const table = await scanOrders(aws, resources.ordersTable);
    const stored = new DynamoStoredOrders(aws.dynamo, resources.ordersTable);

    const sample = await stored.sampleIds(5);
    const all = await stored.sampleIds(1000);

    expect(sample).toHaveLength(5);
    expect(new Set(sample).size).toBe(5);
    expect(sample.every((id) => table.has(id))).toBe(true);
    expect(new Set(all)).toEqual(new Set(table.keys()));
    const absent = Array.from({ length: 150 }, (_, index) => index + 1);
    const versions = await stored.getVersions([...absent, ...[...table.keys()].map(Number)]);
    expect(new Map([...versions].map(([id, v]) => [id, v.version]))).toEqual(
      new Map([...table].map(([id, item]) => [id, item.version])),
    );
  });

  it('samples and reads a 64-bit id beyond 2^53 exactly, apart from its rounding neighbour', async () => {
    const big = 2n ** 62n + 7n;
    for (const [id, version] of [
      [big, 3],
      [big + 1n, 9],
    ] as const) {
      await aws.dynamo.send(
        new PutItemCommand({
          TableName: resources.ordersTable,
          Item: { orderId: { N: String(id) }, version: { N: String(version) }, status: { S: 'accepted' } },
        }),
      );
    }
    const stored = new DynamoStoredOrders(aws.dynamo, resources.ordersTable);

    const sampled = await stored.sampleIds(10);
    const versions = await stored.getVersions([big, big + 1n]);

    expect(sampled).toEqual(expect.arrayContaining([big, big + 1n]));
    expect(versions.get(big)?.version).toBe(3);
    expect(versions.get(big + 1n)?.version).toBe(9);
  });
});

describe('partner answers the simulator cannot produce (scripted server)', () => {
  it('reports 400 with the server message, a record that fails parsing, and a 5xx, then carries on', async () => {
    scripted.setFallback((request) => {
      const id = Number(request.pathname.split('/').pop());
      if (id === 1) return { status: 400, body: { message: 'order id 1 is outside this account' } };
      if (id === 2) return { status: 200, body: { ...sampleOrder({ id: 2 }), status: 'refunded' } };
      if (id === 3) return { status: 503, body: { message: 'Service Unavailable' } };
      return { status: 200, body: sampleOrder({ id, version: 1 }) };
    });

    const report = await reconcileOrders(useCase(scripted.url), {
      ids: [1, 2, 3, 4],
      feedId: 'partner-feed',
    });

    expect(report.orders).toEqual([
      { id: 1, result: 'invalid-id', detail: 'partner answered 400: order id 1 is outside this account' },
      {
        id: 2,
        result: 'invalid-record',
        partnerVersion: 3,
        detail: expect.stringMatching(/unknown status "refunded"/),
      },
      { id: 3, result: 'error', detail: expect.stringMatching(/503/) },
      expect.objectContaining({ id: 4, result: 'missing', partnerVersion: 1 }),
    ]);
    expect(scripted.requests.map((request) => request.pathname)).toEqual(
      [1, 2, 3, 4].map((id) => `/v1/orders/${id}`),
    );
  });

  it('aborts on 401 without further calls', async () => {
    scripted.setFallback({ status: 401, body: { message: 'Unauthorized' } });
    const ids = Array.from({ length: 20 }, (_, index) => index + 1);

    const error = await reconcileOrders(useCase(scripted.url), {
      ids,
      feedId: 'partner-feed',
      concurrency: 2,
    }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ReconcileAuthError);
    expect(scripted.requests.length).toBeLessThanOrEqual(2);
  });
});

describe('the reconcile CLI', () => {
  /** Runs the CLI as an operator would, without AWS settings of its own: --aws-endpoint must suffice. */
  function cli(
    args: string[],
    token = TEST_TOKEN,
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PARTNER_API_TOKEN: token,
    };
    return new Promise((resolve) => {
      execFile(
        'npx',
        ['tsx', 'tools/reconcile/cli.ts', ...args],
        { env, timeout: 30_000 },
        (error, stdout, stderr) => {
          const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
          resolve({ code, stdout, stderr });
        },
      );
    });
  }

  const where = () => [
    '--aws-endpoint',
    moto.endpoint,
    '--orders-table',
    resources.ordersTable,
    '--queue-url',
    resources.ordersQueueUrl,
    '--queue-url',
    resources.downstreamQueueUrl,
    '--api-url',
    sim.url,
  ];

  it('exits 1 while orders are behind or missing, repairs with --repair and exits 0', async () => {
    const handlers = await ingestPartially();
    const want = await expectedResults();
    const ids = [...want.keys()].join(',');

    const check = await cli([...where(), '--ids', ids, '--json']);
    expect(check.stderr).not.toMatch(/reconcile:/);
    expect(check.code).toBe(1);
    const report = JSON.parse(check.stdout) as ReconcileReport;
    expect(resultsOf(report)).toEqual(want);

    const repair = await cli([...where(), '--ids', ids, '--repair']);
    expect(repair.code).toBe(0);
    expect(repair.stdout).toMatch(/^ID\s+STORED\s+PARTNER\s+RESULT\s+DETAIL$/m);
    expect(repair.stdout).toContain(
      `repairs: ${report.counts.behind + report.counts.missing} published, 0 failed`,
    );
    expect(repair.stdout).toMatch(/; 0 need attention$/m);
    await drainQueue(aws, resources.ordersQueueUrl, handlers);

    const sample = await cli([...where(), '--sample', '100', '--json']);
    expect(sample.code).toBe(0);
    expect((JSON.parse(sample.stdout) as ReconcileReport).counts['in-sync']).toBe(expected.orders.size);
    for (const run of [check, repair, sample]) expect(run.stdout + run.stderr).not.toContain(TEST_TOKEN);
  });

  it('exits 2 with usage on a bad flag, and 1 naming the 401 on a rejected token', async () => {
    const [badFlag, rejected] = await Promise.all([
      cli([...where(), '--idz', '1']),
      cli([...where(), '--ids', '1'], 'not-the-token'),
    ]);

    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/Unknown option '--idz'/);
    expect(badFlag.stderr).toContain('Usage: npm run reconcile --');
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toMatch(/401 Unauthorized/);
    expect(rejected.stderr).not.toContain('not-the-token');
  });

  it('finds table, queues, API, token and feed id from the stack outputs and the poller function', async () => {
    const handlers = await ingestPartially();
    await createStack('order-feed', {
      OrdersTableName: resources.ordersTable,
      OrdersQueueUrl: resources.ordersQueueUrl,
      DownstreamQueueUrlAnalytics: resources.downstreamQueueUrl,
    });
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      stdout: (text: string) => out.push(text),
      stderr: (text: string) => err.push(text),
      env: {},
    };

    const code = await runCli(
      ['--stack-name', 'order-feed', '--ids', feedIds().join(','), '--repair', '--json'],
      io,
    );

    expect(err.join('')).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(out.join('')) as ReconcileReport;
    expect(report.repairs.published).toBeGreaterThan(0);
    const downstream = (await receiveAll(aws, resources.downstreamQueueUrl)).map(parseOrderVersionMessage);
    expect(downstream).toHaveLength(report.repairs.published);
    expect(new Set(downstream.map((message) => message.source.feedId))).toEqual(new Set(['feed-from-stack']));
    await drainQueue(aws, resources.ordersQueueUrl, handlers);
    expect((await reconcileOrders(useCase(), { ids: feedIds(), feedId: 'x' })).counts['in-sync']).toBe(
      expected.orders.size,
    );
  });
});

/** A stack with the deployed stack's output names and a poller function carrying its environment. */
async function createStack(name: string, outputs: Record<string, string>): Promise<void> {
  const cfn = new CloudFormationClient({});
  const template = {
    Resources: {
      PollerRole: {
        Type: 'AWS::IAM::Role',
        Properties: {
          AssumeRolePolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
            ],
          },
        },
      },
      Poller: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Runtime: 'nodejs22.x',
          Handler: 'index.handler',
          Role: { 'Fn::GetAtt': ['PollerRole', 'Arn'] },
          Code: { ZipFile: 'exports.handler = async () => {};' },
          Environment: {
            Variables: {
              FEED_ID: 'feed-from-stack',
              PARTNER_BASE_URL: sim.url,
              PARTNER_TOKEN_PARAMETER: resources.tokenParameter,
              ORDERS_QUEUE_URL: resources.ordersQueueUrl,
              DOWNSTREAM_QUEUE_URLS: JSON.stringify({ analytics: resources.downstreamQueueUrl }),
            },
          },
        },
      },
    },
    Outputs: {
      ...Object.fromEntries(Object.entries(outputs).map(([key, value]) => [key, { Value: value }])),
      PollerFunctionName: { Value: { Ref: 'Poller' } },
    },
  };
  try {
    await cfn.send(new CreateStackCommand({ StackName: name, TemplateBody: JSON.stringify(template) }));
  } finally {
    cfn.destroy();
  }
}
