// `npm run fuzz` as a user runs it (a child process): one fixed seed of the fast profile passes, with its
// line, the totals and the JSON report. A bad flag's usage and exit 2 are cli-args' own
// (test/unit/cli-args.test.ts); the tier seeds and every seed that ever failed run in `npm test`
// (lab/test/fuzz-seeds.test.ts), what the lines say in lab/test/fuzz-draw.test.ts.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../chaos/local-mode.js';
import type { SeedReport } from '../../fuzz/fuzz.js';
import { runLabCommand } from './lab-command.js';

/** This tier's seed: fast and quick (a revoked token, a redirect, cut JSON, gzip; lab/fuzz/RESULTS.md). */
const E2E_SEED = 16;

const runFuzz = (args: string[]) => runLabCommand('lab/fuzz/run.ts', args);

describe('npm run fuzz', () => {
  it('runs a seed: its line, the totals and the report say what ran, exit 0', async () => {
    const out = path.join(REPO_ROOT, '.local', 'fuzz', `e2e-${process.pid}.json`);

    const { code, stdout, stderr } = await runFuzz([
      '--seed',
      String(E2E_SEED),
      '--profile',
      'fast',
      '--in-process',
      '--out',
      out,
    ]);

    expect(code, stdout + stderr).toBe(0);
    expect(stdout).toMatch(new RegExp(`^PASS seed ${E2E_SEED} \\(fast, in-process\\) .* drained`, 'm'));
    expect(stdout).toMatch(/1 seed\(s\), 1 passed, 0 failed/);
    expect(stdout).toMatch(/faults fired: .+ \d+/);
    const written = JSON.parse(await readFile(out, 'utf8')) as { reports: SeedReport[] };
    expect(written.reports.map((r) => [r.seed, r.violations])).toEqual([[E2E_SEED, []]]);
  }, 120_000);
});
