// `npm run fuzz` as a user runs it (a child process): fixed seeds of the fast profile pass with their report;
// `--help` and a bad flag behave; and every seed that ever failed (lab/fuzz/regressions.json) is replayed,
// one named case each. What a seed's lines say when it fails is checked on its own first.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AnyScenarioId } from '../../../tools/simulator/types.js';
import { REPO_ROOT } from '../../chaos/local-mode.js';
import { Fuzzer, type SeedReport } from '../../fuzz/fuzz.js';
import { readRegressions } from '../../fuzz/regressions.js';
import { seedLines, totals } from '../../fuzz/report.js';
import { runLabCommand } from './lab-command.js';

/**
 * The seeds of this tier: fast profile, passing today, other kinds than npm test's, 21 a documented stop (a
 * cursor cycle) among them (lab/fuzz/RESULTS.md).
 */
const E2E_SEEDS = { first: 19, count: 3 };

const runFuzz = (args: string[]) => runLabCommand('lab/fuzz/run.ts', args);

describe('what the fuzzer prints', () => {
  const report = (violations: string[]): SeedReport => ({
    seed: 17,
    profile: 'full',
    mode: 'in-process',
    partner: '40 orders; faults: encoding',
    kinds: ['encoding'],
    end: { kind: 'no-progress', detail: 'no page in 12 run(s)' },
    runs: 12,
    outcomes: { 'retry-later': 12 },
    faultsFired: { encoding: 60 },
    requests: 60,
    durationMs: 61_000,
    violations,
    replay: 'npm run fuzz -- --seed 17',
  });

  it('prints a failing seed with its violations and the command that replays it, and lists it again at the end', () => {
    const failed = report(['no-progress: no page in 12 run(s)']);

    expect(seedLines(failed)).toMatch(/^FAIL seed 17 \(full, in-process\)/);
    expect(seedLines(failed)).toContain(
      '    - no-progress: no page in 12 run(s)\n    replay: npm run fuzz -- --seed 17\n',
    );
    expect(totals([failed, report([])], 120_000)).toContain(
      '2 seed(s), 1 passed, 1 failed, in 2.0 min\nfaults fired: encoding 120\nreplay the failing seeds:\n  npm run fuzz -- --seed 17\n',
    );
    expect(seedLines(report([]))).not.toContain('replay');
  });
});

describe('npm run fuzz', () => {
  it('runs fixed seeds of the fast profile: every invariant holds, the totals and the report say what ran', async () => {
    const out = path.join(REPO_ROOT, '.local', 'fuzz', `e2e-${process.pid}.json`);
    const args = ['--seeds', String(E2E_SEEDS.count), '--seed', String(E2E_SEEDS.first), '--profile', 'fast'];

    const { code, stdout, stderr } = await runFuzz([...args, '--in-process', '--out', out]);

    expect(code, stdout + stderr).toBe(0);
    expect(stdout.match(/^PASS seed \d+ \(fast, in-process\)/gm)).toHaveLength(E2E_SEEDS.count);
    expect(stdout).toMatch(/3 seed\(s\), 3 passed, 0 failed/);
    expect(stdout).toMatch(/^PASS seed 21 .* stopped at stuck-cursor/m);
    expect(stdout).toMatch(/faults fired: .+ \d+/);
    const written = JSON.parse(await readFile(out, 'utf8')) as { reports: SeedReport[] };
    expect(written.reports.map((r) => r.seed)).toEqual([19, 20, 21]);
    expect(written.reports.every((r) => r.violations.length === 0 && r.kinds.length > 0)).toBe(true);
  }, 240_000);

  it('answers --help, and a bad flag with its usage and exit 2', async () => {
    const help = await runFuzz(['--help']);
    const bad = await runFuzz(['--seeds', 'lots']);

    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: npm run fuzz');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--seeds must be an integer');
    expect(bad.stderr).toContain('Usage: npm run fuzz');
  });
});

// Every seed that ever failed, replayed: each passes now (lab/fuzz/regressions.json; the seeds that wait
// for the other fixes of issue 31 are in regressions-after-issue-31.json, lab/README.md).
const REGRESSIONS = readRegressions(path.join(REPO_ROOT, 'lab', 'fuzz', 'regressions.json'));
const fuzzer = new Fuzzer(undefined);
afterAll(() => fuzzer.close());

describe('every seed that ever failed (lab/fuzz/regressions.json)', () => {
  it.each(
    REGRESSIONS.map((entry) => ({
      name: `${entry.scenario ?? `seed ${entry.seed} (${entry.profile})`}, which found: ${entry.found}`,
      entry,
    })),
  )(
    '$name',
    async ({ entry }) => {
      const report =
        entry.scenario === undefined
          ? await fuzzer.runSeed(entry.seed ?? 0, entry.profile, entry.mode)
          : await fuzzer.runScenario(entry.scenario as AnyScenarioId);

      expect(report.violations, entry.found).toEqual([]);
    },
    900_000,
  );
});
