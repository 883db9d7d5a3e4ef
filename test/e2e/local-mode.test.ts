// `npm start` (tools/local/start.ts) driven through its CLI as a user runs it: exit codes, what it prints, two
// processes at once, SIGKILL and restart, a kept emulator, leases, partners nobody scripted. One moto for the
// whole file: the first test starts two processes at once, which deploy the stack with cdk once between them; the
// others find it and reuse it (--reset-data empties it between tests). The partner API is a simulator this test
// owns, so its expected() is the oracle. Flag checks that need no process are in
// test/unit/local/start-cli.test.ts; a bad flag's exit 2 in help.test.ts; a partner that is down, waited for
// and given up on, in local-mode-outage.test.ts (its run starts its own emulator, in the tier's other worker),
// where the stack that emulator keeps also serves one run per partner nobody scripted and a fleet of 50 feeds.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { STACK_NAME } from '../../infra/app.js';
import {
  createLocalAwsClients,
  type LocalAwsClients,
  parseAwsEndpoint,
  readDeployment,
  resetData,
  subscriberQueues,
} from '../../tools/local/runtime.js';
import { type RunningSimulator, SCENARIO_EXPECTATIONS, startSimulator } from '../../tools/simulator/index.js';
import { scanOrders } from '../../tools/store/stored-order.js';
import { sampleOrder } from '../fixtures/orders.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { startScriptedServer } from '../support/scripted-http-server.js';
import {
  deployedStack,
  expectedTableAndLedger,
  killRunning,
  readSummaryFile,
  runCli,
  startCli,
  tableAndLedger,
} from './cli.js';

const TOKEN = 'local-mode-test-token-5d1e0c7b';
const workDir = mkdtempSync(join(tmpdir(), 'local-mode-test-'));
let moto: RunningMoto;
let aws: LocalAwsClients;
const simulators: RunningSimulator[] = [];

async function simulator(orders: number, seed: number): Promise<RunningSimulator> {
  const sim = await startSimulator({ token: TOKEN, feed: { seed, orders } });
  simulators.push(sim);
  return sim;
}

beforeAll(async () => {
  moto = await startMoto();
  aws = createLocalAwsClients(parseAwsEndpoint(moto.endpoint));
});
afterEach(killRunning);
afterAll(async () => {
  aws?.destroy();
  for (const sim of simulators) await sim.close();
  await moto?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

const summaryPath = (name: string) => join(workDir, `${name}.json`);

describe('npm start', () => {
  it('names a missing moto_server and the one command that installs it, before starting anything', async () => {
    // Prepare: a PATH without moto_server (nor python3), as on a machine that never installed them
    const run = await runCli([], { PATH: workDir });

    // Assess
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('moto_server are not installed');
    expect(run.stderr).toContain('install them with pip install "moto[server]" cfn-lint');
    expect(run.stderr).not.toContain('Traceback');
    expect(run.stdout).toBe('');
  });

  it('two processes started together on a fresh emulator deploy once and drain a generated feed into exactly the expected table and ledger, never showing the token; --verbose shows each page’s correlation id in the poller’s log and the same ids in the consumer’s batch lines', async () => {
    // About 310 versions: four pages, enough for both processes to poll and consume side by side.
    const sim = await simulator(100, 7);
    const args = (name: string) => [
      ...['--aws-endpoint', moto.endpoint, '--api-url', sim.url, '--subscriber', 'billing'],
      ...['--summary-json', summaryPath(name), '--verbose'],
    ];
    const env = { PARTNER_API_TOKEN: TOKEN };

    // Both try to deploy (one deploys, the other waits for its stack), then poll and consume side by side.
    const runs = await Promise.all([runCli(args('a'), env), runCli(args('b'), env)]);

    const expected = sim.expected();
    for (const run of runs) expect(run.code, run.stdout + run.stderr).toBe(0);
    const summaries = [readSummaryFile(summaryPath('a')), readSummaryFile(summaryPath('b'))];
    expect(summaries.map((summary) => summary.deploy?.deployed).sort()).toEqual([false, true]);
    for (const summary of summaries) {
      expect(summary).toMatchObject({
        outcome: 'drained',
        apiUrl: sim.url,
        ordersTable: summaries[0]?.ordersTable,
        orders: expected.orders.size,
        sales: expected.sales,
        deadLettered: 0,
        queueDepth: 0,
        quarantined: [],
      });
      expect(summary.matchesExpected).toBeUndefined();
    }
    expect(await tableAndLedger(aws, summaries[0]?.ordersTable ?? '')).toEqual(
      expectedTableAndLedger(expected),
    );
    // Between them they applied every version at least once.
    const processed = summaries.reduce((sum, s) => sum + s.counters.applied + s.counters.stale, 0);
    expect(processed).toBeGreaterThanOrEqual(expected.distinctVersions);
    // Progress lines were printed along the way.
    expect(runs[0]?.stdout).toMatch(/\] polls \d+ \| pages \d+ \| published \d+ \| applied \d+/);
    // The token travelled only in the Authorization header, and was never printed or written.
    expect(sim.requests.every((request) => request.authorization === `Bearer ${TOKEN}`)).toBe(true);
    for (const run of runs) expect(run.stdout + run.stderr).not.toContain(TOKEN);
    expect(JSON.stringify(summaries)).not.toContain(TOKEN);
    // --verbose: the handlers' JSON logs. Either process's consumer may apply the other's pages, so the two
    // processes' logs are read together.
    const logs = runs
      .flatMap((run) => `${run.stdout}\n${run.stderr}`.split('\n'))
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const pageIds = logs
      .filter((line) => line.message === 'page handed off' && Number(line.versionsPublished) > 0)
      .map((line) => line.correlationId);
    expect(pageIds.length).toBeGreaterThanOrEqual(2);
    // Local mode's run id is its lease owner, local:<host>:<pid>:<invocation id>.
    for (const id of pageIds) expect(id).toMatch(/^poll:local:.+:\d+$/);
    const batchIds = logs
      .filter((line) => line.message === 'order version batch processed')
      .flatMap((line) => line.correlationIds as string[]);
    // Every page's messages were applied by some batch that names the page's id, and by none that does not.
    expect(new Set(batchIds)).toEqual(new Set(pageIds));
  }, 300_000);

  it('runs a multi-poll scenario of the built-in simulator, keeps v4 and every message on a --subscriber queue, then explains a MISMATCH by the kept data and exits 4', async () => {
    const expected = SCENARIO_EXPECTATIONS['test-versioning'];
    const deployment = await deployedStack(aws, moto.endpoint);
    const args = ['--aws-endpoint', moto.endpoint, '--scenario'];

    // moto cannot add a queue to the deployed stack, which says so
    const refused = await runCli([...args, 'test-versioning', '--subscriber', 'analytics']);
    const run = await runCli([
      ...[...args, 'test-versioning', '--subscriber', 'billing', '--reset-data'],
      ...['--summary-json', summaryPath('versioning')],
    ]);
    // Act: a second scenario on the same emulator, its data kept
    const kept = await runCli([...args, 'test-empty-stream']);

    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('has no subscriber queue analytics');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const summary = readSummaryFile(summaryPath('versioning'));
    expect(summary).toMatchObject({
      region: 'us-east-1',
      stackName: STACK_NAME,
      outcome: 'drained',
      deploy: { deployed: false },
      ordersByStatus: { accepted: 1 },
      sales: expected.sales,
      quarantined: [],
      deadLettered: 0,
      queueDepth: 0,
      matchesExpected: { orders: true, sales: true },
    });
    for (const key of [
      'ordersTable',
      'cursorTable',
      'queueUrl',
      'deadLetterQueueUrl',
      'quarantineBucket',
    ] as const) {
      expect(summary[key]).not.toBe('');
    }
    expect(summary.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/test-versioning$/);
    // Three polls bring v1, then v2 and v3, then v4; one more finds nothing new.
    expect(summary.counters).toMatchObject({ versionsPublished: 4, rejected: 0, failedMessages: 0 });
    expect(summary.counters.polls).toBeGreaterThanOrEqual(4);
    expect(summary.counters.applied + summary.counters.stale).toBe(4);
    expect(run.stdout).toMatch(/Drained in/);
    // The history keeps all four versions (the summary's lines: test/unit/local/summary.test.ts).
    expect(summary.history).toMatchObject({ entries: 4, exampleOrderId: '3009000001' });
    // The printed command names the subscriber's queue; all four versions wait there.
    const command =
      /^ {2}(AWS_ACCESS_KEY_ID=testing .*aws sqs receive-message .*)$/m.exec(run.stdout)?.[1] ?? '';
    expect(command).toContain(`--endpoint-url ${moto.endpoint}`);
    const queueUrl = /--queue-url (\S+)/.exec(command)?.[1];
    expect(queueUrl).toBe(subscriberQueues(deployment).billing);
    const { Attributes } = await aws.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    expect(Attributes?.ApproximateNumberOfMessages).toBe('4');
    // Said before the run and at the check; the exit status is not 0
    expect(kept.code, kept.stdout + kept.stderr).toBe(4);
    expect(kept.stdout).toContain('the reused stack keeps its earlier runs’ data');
    expect(kept.stdout).toContain('Check: MISMATCH');
  }, 240_000);

  it('ends with the documented stop (exit 5), keeping what it was served and saying so once, in its own lines, against a partner whose cursor is stuck (hasMore with the same cursor)', async () => {
    const partner = await startScriptedServer();
    partner.setFallback((request) =>
      request.query.get('pageId') === 'stuck'
        ? { status: 200, body: { data: [], hasMore: true, nextPageId: 'stuck' } }
        : { status: 200, body: { data: [sampleOrder({ id: 4242 })], hasMore: true, nextPageId: 'stuck' } },
    );
    try {
      const run = await runCli(
        [
          '--aws-endpoint',
          moto.endpoint,
          '--api-url',
          partner.url,
          '--reset-data',
          '--summary-json',
          summaryPath('stuck'),
        ],
        { PARTNER_API_TOKEN: TOKEN },
      );

      expect(run.code, run.stdout + run.stderr).toBe(5);
      expect(readSummaryFile(summaryPath('stuck'))).toMatchObject({
        outcome: 'feed-stopped',
        stoppedBy: 'stuck-cursor',
        orders: 1,
      });
      // What a user reads: the stop said once (the summary's headline: why, and where the runbook is), the
      // poller's warning as one of local mode's lines, no handler JSON (without --verbose).
      const output = run.stdout + run.stderr;
      expect(output.split("the poller ended 'stuck-cursor'")).toHaveLength(2);
      expect(run.stdout).toContain('tools/RUNBOOK.md');
      expect(run.stdout).toContain(
        '· poller: partner answered hasMore with a cursor it was already sent; ending the run',
      );
      expect(output.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
      expect(run.stderr).toContain('error: the feed stopped (stuck-cursor): see the summary above');
      // Local mode stops at the first run that ends stuck, instead of asking again.
      expect(partner.requests.length).toBeLessThan(20);
    } finally {
      await partner.close();
    }
  }, 120_000);

  it('killed with SIGKILL mid-run, then refused a revoked token (exit 3, naming the 401), a restart with a good one resumes from the stored cursor and ends with the table and ledger of a clean run', async () => {
    // About 460 versions: five pages of one poll each, so the run is still polling when its second poll is
    // printed, and pages are left for the restart.
    const sim = await simulator(150, 7);
    const args = ['--aws-endpoint', moto.endpoint, '--api-url', sim.url];
    // Part of the feed is stored: a run killed after its second poll leaves a committed cursor.
    const first = startCli([...args, '--reset-data'], { PARTNER_API_TOKEN: TOKEN });
    await first.waitForLine(/\] polls ([2-9]|\d\d+) \|/);
    first.kill('SIGKILL');
    const killed = await first.exited;
    const storedBeforeRestart = await scanOrders(aws, (await readDeployment(aws)).ordersTable);
    const beforeRefused = sim.requests.length;

    // 1. The token is refused (revoked): exit 3, the backoff recorded with the token parameter's version.
    const refused = await runCli([...args, '--summary-json', summaryPath('refused')], {
      PARTNER_API_TOKEN: 'revoked-token-0000',
    });
    const before = sim.requests.length;
    // 2. Restart with a good token: local mode stores it (a new parameter version); the poller calls at once.
    const restarted = await runCli([...args, '--summary-json', summaryPath('restart')], {
      PARTNER_API_TOKEN: TOKEN,
    });

    expect(killed.signal).toBe('SIGKILL');
    expect(storedBeforeRestart.size).toBeGreaterThan(0);
    expect(refused.code, refused.stdout + refused.stderr).toBe(3);
    expect(refused.stderr).toContain('partner API rejected the token (401 Unauthorized)');
    expect(readSummaryFile(summaryPath('refused'))).toMatchObject({ outcome: 'auth-failed' });
    const rejected = sim.requests.slice(beforeRefused, before);
    expect(rejected.length).toBeGreaterThanOrEqual(1);
    expect(rejected.length).toBeLessThanOrEqual(3);
    expect(rejected.every((request) => request.status === 401)).toBe(true);
    // What it says about the stop never advises starting empty (the banner's note on a reused stack may name it).
    const stopped = refused.stdout.indexOf('Stopped: partner API rejected the token');
    expect(stopped, refused.stdout).toBeGreaterThan(-1);
    expect(refused.stdout.slice(stopped) + refused.stderr).not.toContain('--reset-data');
    // 3. The feed resumes from its cursor and finishes, as one clean run would have.
    expect(restarted.code, restarted.stdout + restarted.stderr).toBe(0);
    const summary = readSummaryFile(summaryPath('restart'));
    expect(summary).toMatchObject({
      outcome: 'drained',
      deadLettered: 0,
      queueDepth: 0,
      sales: sim.expected().sales,
    });
    expect(await tableAndLedger(aws, summary.ordersTable)).toEqual(expectedTableAndLedger(sim.expected()));
    const after = sim.requests.slice(before);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((request) => request.status === 200)).toBe(true);
    // Every request carries a cursor: none starts the stream again.
    expect(after.every((request) => request.url.includes('pageId='))).toBe(true);
  }, 420_000);

  it('--reset-data empties the quarantine bucket, records moved to retried/ by a quarantine retry included', async () => {
    const deployment = await deployedStack(aws, moto.endpoint);
    const bucket = deployment.quarantineBucket;
    for (const key of ['quarantine/orders/2026/run-1/0.json', 'retried/orders/2026/run-1/1.json']) {
      await aws.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: '{}' }));
    }

    await resetData(aws, deployment);

    const listed = await aws.s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(listed.Contents ?? []).toEqual([]);
  });

  it('takes over at once a feed lease left by a local process that no longer exists, but waits out a live one', async () => {
    const deployment = await deployedStack(aws, moto.endpoint);
    const gone = spawnSync(process.execPath, ['-e', '']).pid ?? 0;
    const plantLease = async (pid: number, expiresInMs: number) => {
      await resetData(aws, deployment);
      await aws.dynamo.send(
        new PutItemCommand({
          TableName: deployment.cursorTable,
          Item: marshall({
            feedId: 'orders',
            leaseOwner: `local:${hostname()}:${pid}:${randomUUID()}`,
            leaseExpiresAt: Date.now() + expiresInMs,
            revision: 7,
            createdAt: new Date().toISOString(),
          }),
        }),
      );
    };
    const args = ['--aws-endpoint', moto.endpoint, '--scenario', 'test-multi-location'];

    await plantLease(gone, 180_000);
    const afterCrash = await runCli(args);
    await plantLease(process.pid, 4000);
    const started = Date.now();
    const whileAlive = await runCli(args);
    const aliveMs = Date.now() - started;

    expect(afterCrash.code, afterCrash.stdout + afterCrash.stderr).toBe(0);
    expect(afterCrash.stdout).toContain(`released the feed lease left by local process ${gone}`);
    expect(whileAlive.code, whileAlive.stdout + whileAlive.stderr).toBe(0);
    expect(whileAlive.stdout).not.toContain('released the feed lease');
    expect(whileAlive.stdout).toMatch(/\(lease-held\)|Drained/);
    expect(aliveMs).toBeGreaterThanOrEqual(4000);
    const state = await tableAndLedger(aws, deployment.ordersTable);
    expect(state.sales).toEqual(SCENARIO_EXPECTATIONS['test-multi-location'].sales);
  }, 120_000);
});
