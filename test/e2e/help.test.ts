// Every CLI of package.json's scripts, as a user runs it: `--help` prints its usage and exits 0; a bad flag
// prints the error and the usage on stderr and exits 2 (verify, bench and chaos check that with the rest of their
// CLI). The scripts are read from package.json, so a new CLI is checked without touching this file; an alias
// that runs a CLI with arguments (`npm run reconcile` is `ops reconcile`) is checked with that CLI.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { scripts } = JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as {
  scripts: Record<string, string>;
};
const CLIS = Object.entries(scripts).flatMap(([name, command]) => {
  const file = /^tsx ((?:tools|lab)\/\S+\.ts)$/.exec(command)?.[1];
  return file === undefined ? [] : [[name, file] as const];
});

function run(file: string, args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', file, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
}

describe('every CLI', () => {
  it('is found in package.json', () => {
    expect(CLIS.map(([name]) => name)).toEqual(
      expect.arrayContaining(['start', 'verify', 'ops', 'simulator', 'deploy:local', 'bench', 'chaos']),
    );
  });

  it.each(CLIS)('npm run %s -- --help prints its usage and exits 0', (_, file) => {
    const help = run(file, ['--help']);

    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm (start|run)/);
  });

  it.each(CLIS.filter(([name]) => ['start', 'ops', 'simulator', 'deploy:local'].includes(name)))(
    'npm run %s -- --no-such-flag exits 2 with the usage',
    (_, file) => {
      const bad = run(file, ['--no-such-flag']);

      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('--no-such-flag');
      expect(bad.stderr).toContain('Usage: npm');
    },
  );
});
