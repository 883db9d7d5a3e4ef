// Starts a real moto_server on a free loopback port, for local mode and integration tests (one
// process per test file; `reset()` clears all emulated state between tests). It runs through
// moto_serialized.py, which makes moto apply conditional writes atomically as DynamoDB does.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const SERIALISED_LAUNCHER = fileURLToPath(new URL('./moto_serialized.py', import.meta.url));

export interface RunningMoto {
  /** `http://localhost:PORT`: the `localhost` form, which `cdk deploy` asset upload needs (LOCAL-AWS.md). */
  readonly endpoint: string;
  readonly port: number;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** Dummy credentials and region for talking to the emulator; never real ones. */
export const EMULATOR_ENV = {
  AWS_ACCESS_KEY_ID: 'testing',
  AWS_SECRET_ACCESS_KEY: 'testing',
  AWS_SESSION_TOKEN: 'testing',
  AWS_REGION: 'us-east-1',
  AWS_DEFAULT_REGION: 'us-east-1',
} as const;

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
  const port = await freePort();
  const child = spawn('python3', [SERIALISED_LAUNCHER, '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...EMULATOR_ENV },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    // moto logs every request to stderr; keep only the tail for a startup failure message.
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const base = `http://127.0.0.1:${port}`;
  await waitUntilReady(base, child, options.startupTimeoutMs ?? 20_000, () => stderr);
  return {
    endpoint: `http://localhost:${port}`,
    port,
    async reset() {
      const response = await fetch(`${base}/moto-api/reset`, { method: 'POST' });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`moto reset failed with ${response.status}`);
    },
    stop: () => stopProcess(child),
  };
}

async function waitUntilReady(base: string, child: ChildProcess, timeoutMs: number, tail: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
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
