// `npm run chaos`: fault injection with kills and restarts, with figures (README: lab/chaos/RESULTS.md).
//   1. the partner simulator serves a seeded feed with faults (429 in both Retry-After forms, 5xx bursts,
//      connection resets, slow answers, expired cursors, repeated pages, duplicated and out-of-order versions)
//   2. moto behind an intercepting proxy (../harness/aws-proxy.ts) that sees every AWS call of local mode
//   3. local mode as a child process; the first run deploys the stack, then a poison message is planted on
//      the orders queue; each run is SIGKILLed at its seeded kill point (kill-plan.ts, kill-switch.ts) and
//      restarted; the run after the last kill must end by itself with exit 0
//   4. the orders table, the sales ledger, the DLQ and the quarantine against the simulator's expectation
//      (verify.ts); print the figures, write the JSON report
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import { type AwsAt, createAwsClients } from '../../tools/aws.js';
import { parseCommandLine } from '../../tools/cli-args.js';
import { quarantinedKeys, scanOrders } from '../../tools/harness/pipeline.js';
import { DEFAULT_STACK_NAME } from '../../tools/local/deployment.js';
import { type RunningMoto, startMoto } from '../../tools/local/moto.js';
import { type FaultOptions, type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { describeStack, stackOutputs } from '../../tools/stack.js';
import { readSalesLedger } from '../../tools/store/sales-ledger.js';
import { countByOperation, type InterceptingProxy, startInterceptingProxy } from '../aws-proxy.js';
import { KILL_KINDS, type KillKind, type KillPoint, planKills } from './kill-plan.js';
import { type KillRecord, KillSwitch, type StackNames } from './kill-switch.js';
import { type ChildExit, type LocalModeProcess, REPO_ROOT, startLocalMode } from './local-mode.js';
import { type ChaosOptions, parseChaosArgs, USAGE } from './options.js';
import { type ChaosReport, type RunRecord, renderReport } from './report.js';
import { orderQueueTrace } from './trace.js';
import { compareLedger, compareOrders } from './verify.js';

const TOKEN = 'chaos-token-3b81f0d9c64e4a27';
/** Outside the feed's id range (5000000000 + …): a poison that looks like an order must never be stored. */
const POISON_ORDER_ID = 4_999_999_999;
/** A run that neither reaches its kill point nor ends within this long has stalled. */
const RUN_TIMEOUT_MS = 6 * 60_000;
/** The first run also deploys the stack with cdk (20–40 s here). */
const FIRST_RUN_EXTRA_MS = 4 * 60_000;

const started = Date.now();
const progress = (message: string): void => {
  const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[chaos ${seconds} s] ${message}\n`);
};

function faultOptions(seed: number, quick: boolean): FaultOptions {
  // A small feed makes few requests: higher rates so that every kind of fault shows up.
  const scale = quick ? 2 : 1;
  return {
    seed,
    rateLimit: 0.04 * scale,
    retryAfterSeconds: 1,
    serverError: 0.04 * scale,
    serverErrorBurst: 2,
    connectionReset: 0.03 * scale,
    slow: 0.05 * scale,
    slowMs: 300,
    repeatPage: 0.05 * scale,
    expireCursor: 0.03 * scale,
  };
}

/** Our own reads and writes go straight to moto (dummy credentials), so the proxy sees only local mode's calls. */
type DirectClients = Pick<AwsAt, 'cloudFormation' | 'dynamo' | 'sqs' | 's3'>;

/** The deployed stack's names, from CloudFormation outputs, once a stack with them is complete. */
function stackNamesLoader(aws: DirectClients): () => Promise<StackNames | undefined> {
  let names: StackNames | undefined;
  let inFlight: Promise<StackNames | undefined> | undefined;
  let lastTry = 0;
  const load = async (): Promise<StackNames | undefined> => {
    // Local mode deploys the stack under its default name.
    const stack = await describeStack(aws.cloudFormation, DEFAULT_STACK_NAME);
    if (!/_COMPLETE$/.test(stack?.StackStatus ?? '') || stack?.StackStatus?.startsWith('DELETE')) return;
    const {
      OrdersTableName,
      CursorTableName,
      OrdersQueueUrl,
      OrdersDeadLetterQueueUrl,
      QuarantineBucketName,
    } = stackOutputs(stack);
    if (!OrdersTableName || !CursorTableName || !OrdersQueueUrl || !OrdersDeadLetterQueueUrl) return;
    if (!QuarantineBucketName) return;
    return {
      ordersTable: OrdersTableName,
      cursorTable: CursorTableName,
      ordersQueue: OrdersQueueUrl.split('/').pop() ?? OrdersQueueUrl,
      ordersQueueUrl: OrdersQueueUrl,
      deadLetterQueueUrl: OrdersDeadLetterQueueUrl,
      quarantineBucket: QuarantineBucketName,
    };
  };
  return async () => {
    if (names) return names;
    if (!inFlight && Date.now() - lastTry > 500) {
      lastTry = Date.now();
      inFlight = load()
        .catch(() => undefined)
        .finally(() => {
          inFlight = undefined;
        });
    }
    const loaded = await inFlight;
    if (loaded) names = loaded;
    return names;
  };
}

async function plantPoison(aws: DirectClients, names: StackNames, seed: number): Promise<string> {
  // Looks like an order-version message but the order has no total, items or payments: the consumer
  // must fail it on every receive until the queue's redrive policy moves it to the DLQ.
  const body = JSON.stringify({
    schemaVersion: 1,
    order: { id: POISON_ORDER_ID, version: 1, status: 'accepted', vendorId: 'vendor-1' },
    source: { feedId: 'chaos', pageId: null, fetchedAt: new Date().toISOString(), findings: [] },
  });
  const { MessageId = '' } = await aws.sqs.send(
    new SendMessageCommand({
      QueueUrl: names.ordersQueueUrl,
      MessageBody: body,
      MessageAttributes: { chaosPoison: { DataType: 'String', StringValue: `seed-${seed}` } },
    }),
  );
  return MessageId;
}

async function deadLetters(aws: DirectClients, queueUrl: string): Promise<{ total: number; poison: number }> {
  let total = 0;
  let poison = 0;
  for (;;) {
    const { Messages = [] } = await aws.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 300,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return { total, poison };
    total += Messages.length;
    poison += Messages.filter((message) => message.MessageAttributes?.chaosPoison !== undefined).length;
  }
}

function ended(exit: ChildExit): string {
  return exit.signal ? exit.signal : `exit ${exit.code}`;
}

class ChaosFailure extends Error {
  override readonly name = 'ChaosFailure';
}

interface Resources {
  sim?: RunningSimulator;
  moto?: RunningMoto;
  proxy?: InterceptingProxy;
  child?: LocalModeProcess;
}

async function runChaos(options: ChaosOptions, command: string, resources: Resources): Promise<ChaosReport> {
  const outDir = path.dirname(path.resolve(options.out));
  const logDir = path.join(outDir, 'logs', `seed-${options.seed}`);
  await rm(logDir, { recursive: true, force: true });
  await mkdir(logDir, { recursive: true });

  const faults = faultOptions(options.seed, options.quick);
  const feed = {
    seed: options.seed,
    orders: options.orders,
    vendors: 6,
    currencies: ['EUR', 'GBP'],
    duplicateVersions: 0.05,
    outOfOrderVersions: 0.1,
  };
  const sim = await startSimulator({ token: TOKEN, feed, faults });
  resources.sim = sim;
  const expected = sim.expected();
  progress(
    `simulator ${sim.url}: ${expected.orders.size} orders, ${expected.distinctVersions} distinct versions`,
  );

  const moto = await startMoto();
  resources.moto = moto;
  const aws: DirectClients = createAwsClients(`http://127.0.0.1:${moto.port}`, {});
  const names = stackNamesLoader(aws);
  const killSwitch = new KillSwitch(names);
  const proxy = await startInterceptingProxy(moto.port, killSwitch.hooks());
  resources.proxy = proxy;
  progress(`moto on port ${moto.port}, local mode talks to it through ${proxy.endpoint}`);

  const plan: KillPoint[] = planKills(
    options.seed,
    options.kills,
    options.quick
      ? { maxPage: 2, minDelayMs: 500, maxDelayMs: 3000 }
      : { maxPage: 3, minDelayMs: 500, maxDelayMs: 6000 },
    options.quick,
  );
  const runs: RunRecord[] = [];
  const failures: string[] = [];
  let poisonPlanted = false;
  let poisonMessageId = '';
  let summaryPath = '';

  for (let index = 0; index <= plan.length; index++) {
    const run = index + 1;
    const point = plan[index];
    summaryPath = path.join(logDir, `summary-run-${run}.json`);
    proxy.setRun(run);
    let child: LocalModeProcess | undefined;
    killSwitch.startRun(run, point, async () => {
      await child?.kill();
    });
    child = startLocalMode({
      awsEndpoint: proxy.endpoint,
      apiUrl: sim.url,
      token: TOKEN,
      summaryJson: summaryPath,
      logFile: path.join(logDir, `run-${run}.log`),
    });
    resources.child = child;
    progress(`run ${run} (pid ${child.pid}): ${point ? `kill point ${point.kind}` : 'to completion'}`);

    const timeoutMs = RUN_TIMEOUT_MS + (run === 1 ? FIRST_RUN_EXTRA_MS : 0);
    const running = child;
    const timeout = new Promise<'timeout'>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), timeoutMs);
      void running.exited.then(() => clearTimeout(timer));
    });
    if (!poisonPlanted) {
      // Once the first run has deployed the stack and its pipeline runs: by then local mode has disabled
      // moto's own copy of the event source mapping, so every receive of the poison is local mode's.
      void (async () => {
        while (!poisonPlanted && running.pid === resources.child?.pid) {
          const stack = await names();
          if (stack && killSwitch.stats.get(run)?.firstPipelineCallMs !== undefined) {
            poisonPlanted = true;
            poisonMessageId = await plantPoison(aws, stack, options.seed);
            progress(`poison message ${poisonMessageId} planted on the orders queue`);
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      })().catch((error: unknown) => failures.push(`could not plant the poison message: ${String(error)}`));
    }

    const outcome = await Promise.race([child.exited, timeout]);
    if (outcome === 'timeout') {
      const exit = await child.kill();
      killSwitch.endRun();
      runs.push({ ...runStats(killSwitch, run), ended: `stalled, ${ended(exit)}`, durationMs: exit.ms });
      throw new ChaosFailure(
        `run ${run} neither reached its kill point nor ended within ${timeoutMs / 1000} s; its output ends:\n${child.tail()}`,
      );
    }
    const record: KillRecord | undefined = killSwitch.endRun();
    runs.push({
      ...runStats(killSwitch, run),
      ended: ended(outcome),
      durationMs: outcome.ms,
      ...(record ? { kill: record } : {}),
    });
    if (record?.triggered) {
      progress(`run ${run} killed after ${((record.atMs ?? 0) / 1000).toFixed(1)} s: ${record.detail}`);
      continue;
    }
    if (outcome.code !== 0) {
      throw new ChaosFailure(
        `run ${run} of local mode ended with ${ended(outcome)}; its output ends:\n${child.tail()}`,
      );
    }
    if (point) progress(`run ${run} ended by itself (exit 0) before its kill point: ${record?.planned}`);
  }

  progress('verifying the orders table, the sales ledger, the DLQ and the quarantine');
  const stack = await names();
  if (!stack) throw new ChaosFailure('the stack was never deployed');
  const trace = orderQueueTrace(proxy.calls, stack.ordersQueue);
  await writeFile(path.join(logDir, 'sqs-trace.jsonl'), trace.map((line) => JSON.stringify(line)).join('\n'));
  const stored = await scanOrders(aws, stack.ordersTable);
  const orders = compareOrders(expected.orders, stored);
  const ledger = await readSalesLedger(aws.dynamo, stack.ordersTable);
  const ledgerDifferences = compareLedger(expected.sales, ledger);
  const dlq = await deadLetters(aws, stack.deadLetterQueueUrl);
  const quarantined = (await quarantinedKeys(aws, stack.quarantineBucket)).length;
  const poisonItem = await aws.dynamo.send(
    new GetItemCommand({
      TableName: stack.ordersTable,
      Key: marshall({ orderId: POISON_ORDER_ID }),
      ConsistentRead: true,
    }),
  );
  let finalSummary: unknown;
  try {
    finalSummary = JSON.parse(await readFile(summaryPath, 'utf8'));
  } catch (error) {
    failures.push(`could not read the final run's summary ${summaryPath}: ${String(error)}`);
  }

  const kills = runs.flatMap((run) => (run.kill ? [run.kill] : []));
  const byKind = Object.fromEntries(KILL_KINDS.map((kind) => [kind, 0])) as Record<KillKind, number>;
  for (const kill of kills) if (kill.triggered) byKind[kill.kind] += 1;
  const restarted = runs.slice(1);
  const leaseBlocks = restarted.flatMap((run) =>
    run.firstLeaseRefusalMs === undefined
      ? []
      : [(run.deadLeaseReleasedMs ?? run.firstLeaseMs ?? run.durationMs) - run.firstLeaseRefusalMs],
  );
  const finalRun = runs[runs.length - 1];
  const finalStale = staleOf(finalSummary);
  const injected = sim.faultCounts();
  const rateLimits = injected['rate-limit'] ?? 0;
  const writes = {
    applied: sum(runs, (run) => run.putApplied),
    stale: sum(runs, (run) => run.putStale),
    otherErrors: sum(runs, (run) => run.putOtherErrors),
    supersededInBatchFinalRun:
      finalStale === undefined || !finalRun ? undefined : Math.max(0, finalStale - finalRun.putStale),
  };
  const poison = {
    planted: poisonPlanted,
    messageId: poisonMessageId,
    inDeadLetterQueue: dlq.poison > 0,
    inTable: poisonItem.Item !== undefined,
    ...killSwitch.poison,
  };

  if (orders.lost.length > 0) failures.push(`${orders.lost.length} order(s) lost`);
  if (orders.wrong.length > 0) failures.push(`${orders.wrong.length} order(s) wrong`);
  if (ledgerDifferences.length > 0) failures.push(`${ledgerDifferences.length} sales ledger row(s) differ`);
  if (!poison.inDeadLetterQueue) failures.push('the poison message is not in the dead-letter queue');
  if (poison.deletes.length > 0) {
    const trace = path.relative(REPO_ROOT, path.join(logDir, 'sqs-trace.jsonl'));
    failures.push(
      `local mode deleted the poison message in run ${poison.deletes.map((d) => d.run).join(', ')} as if it ` +
        `had been applied (follow ${poisonMessageId} in ${trace})`,
    );
  }
  if (poison.inTable) failures.push('the poison message was written to the orders table');

  return {
    command,
    seed: options.seed,
    options: { orders: options.orders, kills: options.kills, quick: options.quick },
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
    },
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    feed: {
      orders: expected.orders.size,
      distinctVersions: expected.distinctVersions,
      versionsServed: sim.versionsServed(),
      vendors: feed.vendors,
      currencies: feed.currencies,
      duplicateVersions: feed.duplicateVersions,
      outOfOrderVersions: feed.outOfOrderVersions,
    },
    faults: {
      configured: faults,
      injected,
      total: Object.values(injected).reduce((a, b) => a + b, 0),
      retryAfter: { deltaSeconds: Math.ceil(rateLimits / 2), httpDate: Math.floor(rateLimits / 2) },
    },
    kills: {
      planned: plan.length,
      triggered: kills.filter((kill) => kill.triggered).length,
      byKind,
      records: kills,
    },
    runs,
    restarts: {
      blockedByDeadLease: leaseBlocks.length,
      maxLeaseBlockedMs: leaseBlocks.length > 0 ? Math.max(...leaseBlocks) : undefined,
      leaseRefusals: sum(restarted, (run) => run.leaseRefusedBeforeFirst),
      maxFirstLeaseMs: Math.max(0, ...restarted.map((run) => run.firstLeaseMs ?? 0)),
    },
    writes,
    rejected: { quarantined, deadLettered: dlq.total, total: quarantined + dlq.total },
    poison,
    lost: orders.lost.length,
    wrong: orders.wrong.length + ledgerDifferences.length,
    lostOrders: orders.lost.slice(0, 100),
    wrongOrders: orders.wrong.slice(0, 100),
    ledger: {
      equal: ledgerDifferences.length === 0,
      expectedRows: expected.sales.length,
      actualRows: ledger.length,
      differences: ledgerDifferences,
    },
    storedOrders: orders.storedOrders,
    awsCalls: countByOperation(proxy.calls),
    finalSummary,
    pass: failures.length === 0,
    failures,
  };
}

function runStats(killSwitch: KillSwitch, run: number) {
  const stats = killSwitch.stats.get(run);
  if (!stats) throw new Error(`no figures for run ${run}`);
  return { ...stats };
}

function staleOf(summary: unknown): number | undefined {
  const counters = (summary as { counters?: { stale?: unknown } } | undefined)?.counters;
  return typeof counters?.stale === 'number' ? counters.stale : undefined;
}

function sum<T>(values: readonly T[], of: (value: T) => number): number {
  return values.reduce((total, value) => total + of(value), 0);
}

async function release(resources: Resources): Promise<void> {
  await resources.child?.kill().catch(() => undefined);
  await resources.proxy?.close().catch(() => undefined);
  await resources.moto?.stop().catch(() => undefined);
  await resources.sim?.close().catch(() => undefined);
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const parsed = parseCommandLine(() => parseChaosArgs(argv), USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const { options } = parsed;
  const command = ['npm run chaos', ...(argv.length > 0 ? ['--', ...argv] : [])].join(' ');
  const resources: Resources = {};
  const interrupt = () => {
    void release(resources).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    const report = await runChaos(options, command, resources);
    const out = path.resolve(options.out);
    await mkdir(path.dirname(out), { recursive: true });
    await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(renderReport(report));
    process.stdout.write(`report: ${path.relative(REPO_ROOT, out) || out}\n`);
    return report.pass ? 0 : 1;
  } catch (error) {
    process.stderr.write(`chaos run failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await release(resources);
  }
}

process.exitCode = await main();
