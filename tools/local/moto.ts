// Starts a real moto_server on a free loopback port, for local mode and integration tests (`npm test` keeps
// one per test worker, test/support/emulators.ts; `reset()` clears all emulated state between tests). It runs
// through moto_serialized.py, which makes moto apply conditional writes atomically as DynamoDB does.
// Its log (one line per request) goes to a file rather than a pipe, so that an emulator local mode keeps
// (`keep()`) goes on serving after this process exits instead of failing on a closed pipe.
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SERIALISED_LAUNCHER = fileURLToPath(new URL('./moto_serialized.py', import.meta.url));

export interface RunningMoto {
  /** `http://localhost:PORT`: the `localhost` form, which `cdk deploy` asset upload needs (LOCAL-AWS.md). */
  readonly endpoint: string;
  readonly port: number;
  readonly pid: number;
  reset(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Leaves the emulator running, with its data, after this process exits (stopped later by its pid); false
   * when it is no longer running.
   */
  keep(): boolean;
}

/** Dummy credentials and region for talking to the emulator; never real ones. */
export const EMULATOR_ENV = {
  AWS_ACCESS_KEY_ID: 'testing',
  AWS_SECRET_ACCESS_KEY: 'testing',
  AWS_SESSION_TOKEN: 'testing',
  AWS_REGION: 'us-east-1',
  AWS_DEFAULT_REGION: 'us-east-1',
} as const;

/** The one command that installs the Python tools the repository runs: moto's server and cfn-lint. */
export const INSTALL_PYTHON_TOOLS = 'pip install "moto[server]" cfn-lint';

/** A program the command needs is not installed: named with the command that installs it. */
export class MissingToolError extends Error {
  override readonly name = 'MissingToolError';
}

/** Which of `tools` no directory of `path` (PATH's form) holds as an executable file. */
export function missingTools(tools: readonly string[], path = process.env.PATH ?? ''): string[] {
  const directories = path.split(delimiter).filter((directory) => directory !== '');
  return tools.filter(
    (tool) =>
      !directories.some((directory) => {
        const file = join(directory, tool);
        try {
          accessSync(file, constants.X_OK);
          return statSync(file).isFile();
        } catch {
          return false;
        }
      }),
  );
}

/** Throws a MissingToolError naming every one of `tools` missing from PATH, before anything starts. */
export function requireTools(tools: readonly string[], path = process.env.PATH ?? ''): void {
  const missing = missingTools(tools, path);
  if (missing.length > 0) {
    const [verb, pronoun] = missing.length === 1 ? ['is', 'it'] : ['are', 'them'];
    throw new MissingToolError(
      `${missing.join(' and ')} ${verb} not installed (not on PATH): install ${pronoun} with ${INSTALL_PYTHON_TOOLS}`,
    );
  }
}

/** moto_serialized.py's exit status when Python cannot import moto's server (see there). */
const EXIT_MOTO_NOT_IMPORTABLE = 3;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startMoto(options: { startupTimeoutMs?: number } = {}): Promise<RunningMoto> {
  requireTools(['python3', 'moto_server']);
  const port = await freePort();
  const logPath = join(tmpdir(), `order-feed-moto-${port}.log`);
  const log = openSync(logPath, 'w');
  const child = spawn('python3', [SERIALISED_LAUNCHER, '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', log],
    env: { ...process.env, ...EMULATOR_ENV },
  });
  closeSync(log);
  const removeLog = () => rmSync(logPath, { force: true });
  // moto logs every request to stderr: only the tail is shown, for a startup failure.
  const tail = () => {
    try {
      return readFileSync(logPath, 'utf8').slice(-4000);
    } catch {
      return '';
    }
  };
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(base, child, options.startupTimeoutMs ?? 20_000, tail);
  } catch (error) {
    removeLog();
    throw error;
  }
  return {
    endpoint: `http://localhost:${port}`,
    port,
    pid: child.pid ?? 0,
    reset: () => resetEmulator(base),
    stop: () => stopProcess(child).finally(removeLog),
    keep() {
      child.unref();
      return child.exitCode === null && child.signalCode === null;
    },
  };
}

/** Clears all the emulator's state (every service, every region), as a fresh moto_server has it. */
export async function resetEmulator(base: string): Promise<void> {
  const response = await fetch(`${base}/moto-api/reset`, { method: 'POST' });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`moto reset failed with ${response.status}`);
}

async function waitUntilReady(base: string, child: ChildProcess, timeoutMs: number, tail: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode === EXIT_MOTO_NOT_IMPORTABLE) throw new MissingToolError(tail().trim());
    if (child.exitCode !== null) throw new Error(`moto_server exited with ${child.exitCode}: ${tail()}`);
    try {
      const response = await fetch(`${base}/moto-api/`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`moto_server did not answer within ${timeoutMs} ms: ${tail()}`);
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
