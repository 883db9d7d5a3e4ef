// A lab command run as `npm run <command>` runs it: `node --import tsx <script>` from the repository's root, a
// child process whose exit code and output the e2e tests read.
import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../../chaos/local-mode.js';

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runLabCommand(script: string, args: readonly string[]): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
