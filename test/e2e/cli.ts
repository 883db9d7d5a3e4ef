// A CLI as a user runs it: `node --import tsx <script> …` (local mode's tools/local/start.ts unless another is
// named) as a child process, in its own process group (so a SIGKILL takes down what it started, as a crash
// would), with its output captured.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type LocalAwsClients, type LocalSummary, readDeployment } from '../../tools/local/runtime.js';
import type { ExpectedState } from '../../tools/simulator/index.js';
import { readSalesLedger, type SalesTotal } from '../../tools/store/sales-ledger.js';
import { scanOrders } from '../../tools/store/stored-order.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  readonly exited: Promise<CliExit>;
  /** Resolves with the first line of stdout or stderr matching `pattern` (rejects if the process exits first). */
  waitForLine(pattern: RegExp): Promise<string>;
  kill(signal: NodeJS.Signals): void;
}

/** The processes started and not yet exited: a test that times out must not leave one running. */
const running = new Set<CliProcess>();

export function killRunning(): void {
  for (const process of running) process.kill('SIGKILL');
}

export function startCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  script = 'tools/local/start.ts',
): CliProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0', ...env };
  // The test process's own emulator settings must not leak into the child.
  for (const key of Object.keys(childEnv)) if (key.startsWith('AWS_ENDPOINT_URL')) delete childEnv[key];
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: REPO_ROOT,
    env: childEnv,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: (line: string) => void; reject: (error: Error) => void }[] = [];
  const lines = () => `${stdout}\n${stderr}`.split('\n');
  const wake = () => {
    for (const waiter of [...waiters]) {
      const line = lines().find((candidate) => waiter.pattern.test(candidate));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    wake();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    wake();
  });
  const exited = new Promise<CliExit>((resolve) => {
    child.once('close', (code, signal) => {
      for (const waiter of waiters.splice(0)) {
        waiter.reject(
          new Error(`exited (${signal ?? code}) before printing ${waiter.pattern}:\n${stdout}\n${stderr}`),
        );
      }
      resolve({ code, signal, stdout, stderr });
    });
  });
  const cli: CliProcess = {
    exited,
    waitForLine(pattern) {
      const line = lines().find((candidate) => pattern.test(candidate));
      if (line !== undefined) return Promise.resolve(line);
      if (child.exitCode !== null || child.signalCode !== null) {
        return Promise.reject(new Error(`process already exited before printing ${pattern}`));
      }
      return new Promise((resolve, reject) => waiters.push({ pattern, resolve, reject }));
    },
    kill(signal) {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid, signal);
        } catch {
          // already gone
        }
      }
    },
  };
  running.add(cli);
  void exited.then(() => running.delete(cli));
  return cli;
}

export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  script?: string,
): Promise<CliExit> {
  return startCli(args, env, script).exited;
}

/**
 * The stack in the emulator at `endpoint`, deployed through the CLI (a run of the empty stream, with the
 * `billing` subscriber queue) if no earlier test of the file did: each local-mode file starts its own emulator.
 */
export async function deployedStack(aws: LocalAwsClients, endpoint: string) {
  try {
    return await readDeployment(aws);
  } catch {
    const run = await runCli([
      ...['--aws-endpoint', endpoint, '--scenario', 'test-empty-stream', '--subscriber', 'billing'],
    ]);
    if (run.code !== 0) throw new Error(`deploying through the CLI failed:\n${run.stdout}${run.stderr}`);
    return readDeployment(aws);
  }
}

export function readSummaryFile(path: string): LocalSummary {
  return JSON.parse(readFileSync(path, 'utf8')) as LocalSummary;
}

export interface StoredOrder {
  id: number;
  version: number;
  status: string;
  vendorId: string;
  total: { amount: number; currency: string };
}

/** The table and ledger as the assertions compare them. */
export async function tableAndLedger(
  aws: LocalAwsClients,
  ordersTable: string,
): Promise<{ orders: StoredOrder[]; sales: SalesTotal[] }> {
  const orders = [...(await scanOrders(aws, ordersTable)).values()].map((item) => ({
    id: Number(item.orderId),
    version: Number(item.version),
    status: String(item.status),
    vendorId: String(item.vendorId),
    total: item.total as StoredOrder['total'],
  }));
  return {
    orders: orders.sort((a, b) => a.id - b.id),
    sales: await readSalesLedger(aws.dynamo, ordersTable),
  };
}

/** The simulator's expected state in the same shape. */
export function expectedTableAndLedger(expected: ExpectedState): {
  orders: StoredOrder[];
  sales: SalesTotal[];
} {
  return {
    orders: [...expected.orders.values()]
      .map((order) => ({
        id: order.id,
        version: order.version,
        status: order.status,
        vendorId: order.vendorId,
        total: order.total,
      }))
      .sort((a, b) => a.id - b.id),
    sales: expected.sales,
  };
}
