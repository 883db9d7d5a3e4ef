// One seed through local mode as a user runs it (`npm start` as a child process, its own process group),
// for what only a process that waits or gives up shows: outages of minutes. The stack is deployed once into
// a moto the runner keeps (the first seed pays cdk deploy); each seed starts with `--reset-data`, against a
// simulator in this process with the seed's data and faults. The stack's settings are the defaults
// (pageSize 100, the 8 MiB cap, one page a run): draw.ts gives local-mode partners those.
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type AwsAt, createAwsClients } from '../../tools/aws.js';
import { quarantinedKeys, scanOrders } from '../../tools/harness/pipeline.js';
import { DEFAULT_STACK_NAME } from '../../tools/local/deployment.js';
import { EMULATOR_ENV, type RunningMoto, startMoto } from '../../tools/local/moto.js';
import { readBudgets } from '../../tools/ops/budget.js';
import {
  type AnyScenarioId,
  type RequestLogEntry,
  SCENARIO_EXPECTATIONS,
  startSimulator,
} from '../../tools/simulator/index.js';
import { readStackOutputs } from '../../tools/stack.js';
import { readSalesLedger } from '../../tools/store/sales-ledger.js';
import { startLocalMode } from '../chaos/local-mode.js';
import type { Partner } from './draw.js';
import { LOCAL_MODE_BASELINE_MB, MAX_HOLD_MS, type SeedEnd, type SeedObservation } from './invariants.js';
import { peakObservedRate } from './observe.js';
import { countMessages, historyKeys, storedCursorPosition } from './stored.js';

/** The first seed deploys the stack (cdk deploy into moto: 20–60 s here). */
const DEPLOY_ALLOWANCE_MS = 4 * 60_000;

interface Summary {
  outcome?: string;
  stoppedBy?: string;
  detail?: string;
  counters?: { polls?: number; pages?: number; partnerRetries?: number; cursorRecoveries?: number };
}

interface ScenarioSummary extends Summary {
  matchesExpected?: { orders: boolean; sales: boolean };
  history?: { entries: number };
  quarantined?: string[];
  deadLettered?: number;
}

/** VmHWM (peak resident set) of a process, in MB, while it lives. */
function peakRssMb(pid: number): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export class LocalModeRunner {
  private moto: RunningMoto | undefined;
  private aws: AwsAt | undefined;
  private deployed = false;

  async run(partner: Partner, logFile: string | undefined) {
    const token = `fuzz-${partner.seed}-${randomBytes(9).toString('hex')}`;
    const sim = await startSimulator({ token, feed: partner.feed, faults: partner.faults });
    try {
      const child = await this.localMode(
        `seed-${partner.seed}`,
        token,
        logFile,
        partner.budgetMs,
        [],
        sim.url,
      );
      const { exit, summary, summaryText, output, peakMb } = child;
      const end = endOf(exit, summary, output);
      const observation = await this.observe(partner, sim, end, peakMb);
      observation.tokenSeenIn = [
        ...(output.includes(token) ? ["local mode's output"] : []),
        ...(summaryText.includes(token) ? ["local mode's summary"] : []),
        ...(sim.requests.some((r) => r.url.includes(token)) ? ['a request URL'] : []),
      ];
      const outcome =
        summary?.stoppedBy ?? summary?.outcome ?? (exit === 'timeout' ? 'timeout' : `exit ${exit.code}`);
      return { observation, faultCounts: sim.faultCounts(), outcomes: { [outcome]: 1 } };
    } finally {
      await sim.close();
    }
  }

  /**
   * A named scenario of the simulator through local mode (`npm start -- --scenario ID`), as a user tries it:
   * local mode's own check against the scenario's expectation (table and ledger), the history's entries, what
   * was quarantined, how it ended; the token in no output. Returns the violations ([] when it passed).
   */
  async runScenario(id: AnyScenarioId, logFile: string | undefined, budgetMs: number) {
    const expected = SCENARIO_EXPECTATIONS[id];
    const token = `fuzz-${id}-${randomBytes(9).toString('hex')}`;
    const started = Date.now();
    const { exit, summaryText, output, peakMb, ...child } = await this.localMode(
      id,
      token,
      logFile,
      budgetMs,
      ['--scenario', id],
    );
    const summary = child.summary as ScenarioSummary | undefined;
    const end = endOf(exit, summary, output);
    const problems: string[] = [];
    const wanted = expected.stop === undefined ? 'drained' : `stopped at ${expected.stop}`;
    const got = end.kind === 'stopped' ? `stopped at ${end.outcome}` : end.kind;
    if (got !== wanted)
      problems.push(`ended ${got}${'detail' in end ? ` (${end.detail})` : ''}, expected ${wanted}`);
    if (summary) {
      if (!summary.matchesExpected?.orders || !summary.matchesExpected.sales)
        problems.push(
          `the table or ledger differs from the scenario's expectation: ${JSON.stringify(summary.matchesExpected)}`,
        );
      if (summary.history?.entries !== expected.stored)
        problems.push(`the history holds ${summary.history?.entries} versions, expected ${expected.stored}`);
      if ((summary.quarantined?.length ?? 0) !== (expected.quarantined ?? 0))
        problems.push(`${summary.quarantined?.length} quarantined, expected ${expected.quarantined ?? 0}`);
      if ((summary.deadLettered ?? 0) > 0) problems.push(`${summary.deadLettered} dead-lettered`);
    }
    const held = await this.heldAheadMs();
    if (held > MAX_HOLD_MS)
      problems.push(`the token's budget holds its feeds ${Math.round(held / 60_000)} min ahead`);
    if (output.includes(token)) problems.push("the token appeared in local mode's output");
    if (summaryText.includes(token)) problems.push("the token appeared in local mode's summary");
    const capMb = 8;
    if (peakMb > 36 * capMb + LOCAL_MODE_BASELINE_MB)
      problems.push(
        `local mode's peak RSS was ${Math.round(peakMb)} MB, over ${36 * capMb + LOCAL_MODE_BASELINE_MB} MB`,
      );
    return { end, violations: problems, durationMs: Date.now() - started, counters: summary?.counters ?? {} };
  }

  /**
   * Local mode as a child process against this runner's emulator (`--reset-data`, so each run starts empty),
   * watched until it exits or its time is up; its output, its summary and its peak resident memory.
   */
  private async localMode(
    name: string,
    token: string,
    logFile: string | undefined,
    budgetMs: number,
    args: string[],
    apiUrl?: string,
  ) {
    this.moto ??= await startMoto();
    this.aws ??= createAwsClients(`http://127.0.0.1:${this.moto.port}`, EMULATOR_ENV);
    const log = logFile ?? path.join(os.tmpdir(), `fuzz-local-${process.pid}-${name}.log`);
    const summaryFile = path.join(os.tmpdir(), `fuzz-summary-${process.pid}-${name}.json`);
    rmSync(log, { force: true });
    rmSync(summaryFile, { force: true });
    const child = startLocalMode({
      awsEndpoint: this.moto.endpoint,
      ...(apiUrl === undefined ? {} : { apiUrl }),
      token,
      summaryJson: summaryFile,
      logFile: log,
      args: [...args, '--reset-data'],
    });
    let peakMb = 0;
    const sampler = setInterval(() => {
      peakMb = Math.max(peakMb, peakRssMb(child.pid) ?? 0);
    }, 500);
    const allowance = budgetMs + (this.deployed ? 0 : DEPLOY_ALLOWANCE_MS);
    const timeout = new Promise<'timeout'>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), allowance);
      void child.exited.then(() => clearTimeout(timer));
    });
    const exit = await Promise.race([child.exited, timeout]);
    clearInterval(sampler);
    if (exit === 'timeout') await child.kill();
    this.deployed = true;
    const summaryText = readText(summaryFile);
    rmSync(summaryFile, { force: true });
    return { exit, summary: parseSummary(summaryText), summaryText, output: readText(log), peakMb };
  }

  /** The stack's token budget after the run: its hold ahead and its rate, beside the rate the feed used. */
  private async budgetNow(cursorTable: string, requests: readonly RequestLogEntry[]) {
    const now = Date.now();
    const budgets = await readBudgets(this.aws as AwsAt, cursorTable, now).catch(() => []);
    return {
      maxHoldAheadMs: Math.max(0, ...budgets.map((budget) => budget.holdUntil - now)),
      maxRate: Math.max(0, ...budgets.map((budget) => budget.rate)),
      peakObservedRate: peakObservedRate(requests),
    };
  }

  /** How far ahead the stack's token budget holds its feeds now (0: no hold). */
  private async heldAheadMs(): Promise<number> {
    this.aws ??= createAwsClients(`http://127.0.0.1:${this.moto?.port}`, EMULATOR_ENV);
    const outputs = await readStackOutputs(this.aws, DEFAULT_STACK_NAME).catch(
      () => ({}) as Record<string, string>,
    );
    const table = outputs.CursorTableName;
    if (!table) return 0;
    const now = Date.now();
    const budgets = await readBudgets(this.aws, table, now).catch(() => []);
    return Math.max(0, ...budgets.map((budget) => budget.holdUntil - now));
  }

  async close(): Promise<void> {
    this.aws?.dynamo.destroy();
    await this.moto?.stop();
  }

  private async observe(
    partner: Partner,
    sim: Awaited<ReturnType<typeof startSimulator>>,
    end: SeedEnd & { polls?: number; pages?: number },
    peakMb: number,
  ): Promise<SeedObservation> {
    const aws = this.aws as AwsAt;
    const outputs = await readStackOutputs(aws, DEFAULT_STACK_NAME);
    const table = (key: string) => outputs[key] ?? '';
    const cursor = await storedCursorPosition(aws, table('CursorTableName'), 'orders');
    const { polls = 1, pages = 0 } = end;
    return {
      partner,
      end,
      stream: sim.oracle('stream'),
      delivered: sim.oracle('delivered'),
      deliveredBeforeCursor: sim.oracle('delivered', cursor),
      stored: {
        orders: await scanOrders(aws, table('OrdersTableName')),
        history: await historyKeys(aws, table('HistoryTableName')),
        sales: await readSalesLedger(aws.dynamo, table('OrdersTableName')),
        quarantined: await quarantinedKeys(aws, table('QuarantineBucketName')),
        deadLettered: await countMessages(aws, table('OrdersDeadLetterQueueUrl')),
      },
      // Local mode does not say what each run asked: its runs as one, each poll allowed a page's requests.
      runs: [
        { outcome: end.kind, ms: 0, pages: pages + Math.max(0, polls - 1), requests: sim.requests.length },
      ],
      requests: [...sim.requests],
      localPeakRssMb: peakMb,
      tokenSeenIn: [],
      budget: await this.budgetNow(table('CursorTableName'), sim.requests),
      now: Date.now(),
    };
  }
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function parseSummary(text: string): Summary | undefined {
  try {
    return JSON.parse(text) as Summary;
  } catch {
    return undefined;
  }
}

/** Local mode's exit as the seed's end: 0 (or 4) drained, 5 a documented stop, 3 the token refused; else a failure. */
function endOf(
  exit: { code: number | null; signal: NodeJS.Signals | null } | 'timeout',
  summary: Summary | undefined,
  output: string,
): SeedEnd & { polls?: number; pages?: number } {
  // Without a summary, the last progress line says how far it got ("[ 41s] polls 7 | pages 3 | …").
  const progress = [...output.matchAll(/polls (\d+) \| pages (\d+)/g)].at(-1);
  const counts = {
    polls: summary?.counters?.polls ?? Number(progress?.[1] ?? 1),
    pages: summary?.counters?.pages ?? Number(progress?.[2] ?? 0),
  };
  if (exit === 'timeout') return { kind: 'over-budget', detail: 'local mode did not end in time', ...counts };
  // 4: drained, but the built-in simulator's check found a mismatch (a scenario's; the caller reports it).
  if (exit.code === 0 || exit.code === 4) return { kind: 'drained', ...counts };
  if (exit.code === 5 && summary?.stoppedBy)
    return { kind: 'stopped', outcome: summary.stoppedBy, ...counts };
  if (exit.code === 3) return { kind: 'stopped', outcome: 'auth-failed', ...counts };
  const last = output.trim().split('\n').slice(-3).join(' | ').slice(0, 400);
  return {
    kind: 'no-progress',
    detail: `local mode exited ${exit.code ?? exit.signal}${summary ? '' : ' without writing its summary'}: ${last}`,
    ...counts,
  };
}
