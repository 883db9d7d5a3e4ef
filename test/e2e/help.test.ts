// Every CLI of package.json's scripts, as a user runs it: `--help` prints its usage and exits 0; a bad flag
// prints the error and the usage on stderr and exits 2 (verify, bench and chaos check that with the rest of their
// CLI). The scripts are read from package.json, so a new CLI is checked without touching this file; an alias
// that runs a CLI with arguments (`npm run reconcile` is `ops reconcile`) is checked with that CLI. Each run is a
// child process that mostly loads modules, so the runs go side by side (concurrent tests).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { scripts } = JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as {
  scripts: Record<string, string>;
};
const CLIS = Object.entries(scripts).flatMap(([name, command]) => {
  const file = /^tsx ((?:tools|lab)\/\S+\.ts)$/.exec(command)?.[1];
  return file === undefined ? [] : [[name, file] as const];
});

/** A CLI's exit status and output, whatever the status. */
async function run(file: string, args: string[]) {
  const ran = promisify(execFile)(process.execPath, ['--import', 'tsx', file, ...args], { cwd: REPO_ROOT });
  try {
    const { stdout, stderr } = await ran;
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    return { status: failed.code ?? null, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe.concurrent('every CLI', () => {
  it('is found in package.json', () => {
    expect(CLIS.map(([name]) => name)).toEqual(
      expect.arrayContaining(['start', 'verify', 'ops', 'simulator', 'deploy:local', 'bench', 'chaos']),
    );
  });

  it.each(CLIS)('npm run %s -- --help prints its usage and exits 0', async (_, file) => {
    const help = await run(file, ['--help']);

    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm (start|run)/);
  });

  it.each(CLIS.filter(([name]) => ['start', 'ops', 'simulator', 'deploy:local'].includes(name)))(
    'npm run %s -- --no-such-flag exits 2 with the usage',
    async (_, file) => {
      const bad = await run(file, ['--no-such-flag']);

      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('--no-such-flag');
      expect(bad.stderr).toContain('Usage: npm');
    },
  );
});
