// Local mode (`tools/local/start.ts`) as a child process, the way a user runs it, with its own process
// group so a SIGKILL takes down everything it started (cdk, esbuild) at once, as a crash would.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface LocalModeArgs {
  awsEndpoint: string;
  /** Absent: local mode's built-in simulator (the fuzzer's `--scenario` runs). */
  apiUrl?: string;
  token: string;
  summaryJson: string;
  /** stdout and stderr of the child go here. */
  logFile: string;
  /** More flags for `npm start` (the fuzzer's `--reset-data`, `--scenario`). */
  args?: readonly string[];
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
}

export interface LocalModeProcess {
  readonly pid: number;
  readonly startedAt: number;
  readonly exited: Promise<ChildExit>;
  /** SIGKILL to the child's process group; resolves once the child has exited (and been reaped). */
  kill(): Promise<ChildExit>;
  /** The last `chars` characters of its output. */
  tail(chars?: number): string;
}

export function startLocalMode(args: LocalModeArgs): LocalModeProcess {
  const output = openSync(args.logFile, 'a');
  const startedAt = Date.now();
  let child: ChildProcess;
  try {
    const argv = ['--import', 'tsx', 'tools/local/start.ts', '--aws-endpoint', args.awsEndpoint];
    if (args.apiUrl !== undefined) argv.push('--api-url', args.apiUrl);
    argv.push('--summary-json', args.summaryJson, ...(args.args ?? []));
    // Only the endpoint given on the command line: not one a parent's harness set for its own clients.
    const { AWS_ENDPOINT_URL: _parentEndpoint, ...env } = process.env;
    child = spawn(process.execPath, argv, {
      cwd: REPO_ROOT,
      detached: true,
      stdio: ['ignore', output, output],
      env: { ...env, PARTNER_API_TOKEN: args.token, FORCE_COLOR: '0' },
    });
  } finally {
    closeSync(output);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start local mode (no pid)');
  const exited = new Promise<ChildExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal, ms: Date.now() - startedAt }));
  });
  return {
    pid,
    startedAt,
    exited,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      return exited;
    },
    tail(chars = 3000) {
      try {
        return readFileSync(args.logFile, 'utf8').slice(-chars);
      } catch {
        return '';
      }
    },
  };
}
