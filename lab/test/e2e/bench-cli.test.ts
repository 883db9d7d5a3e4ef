// The bench's command line, run as `npm run bench` runs it (a child process). Speed is never asserted:
// only that the report is complete and that every ratio is its value over its floor.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BenchReport, SECTION_IDS } from '../../bench/report.js';
import { type CommandResult, runLabCommand } from './lab-command.js';

function runBench(args: string[]): Promise<CommandResult> {
  return runLabCommand('lab/bench/run.ts', args);
}

describe('npm run bench', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'bench-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints usage and exits 2 on an unknown flag', async () => {
    const result = await runBench(['--versoins', '10']);

    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Usage: npm run bench');
  });

  it('--quick writes a report with every section, positive finite figures and ratios taken from the floors', async () => {
    const out = path.join(dir, 'quick.json');

    const result = await runBench(['--quick', '--out', out]);

    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(await readFile(out, 'utf8')) as BenchReport;
    expect(report.sections.map((section) => section.id)).toEqual([...SECTION_IDS]);
    for (const section of report.sections) {
      expect(section.figures.length, section.id).toBeGreaterThan(0);
      for (const figure of section.figures) {
        const name = `${section.id}: ${figure.label}`;
        expect(Number.isFinite(figure.value) && figure.value > 0, name).toBe(true);
        if (figure.floor === undefined) {
          expect(figure.ratio, name).toBeUndefined();
          continue;
        }
        expect(Number.isFinite(figure.floor) && figure.floor > 0, name).toBe(true);
        expect(figure.ratio, name).toBe(figure.value / figure.floor);
      }
    }
    // The targets: the poller's page CPU at most 5 % of the partner's latency per page (150 ms by default);
    // module init: the poller's own code at most 1.15x the bare bundle plus undici's entry, the consumer at
    // most 1.3x the bare bundle (on wall time: --quick counts no instructions).
    const figuresOf = (id: string) => report.sections.find((section) => section.id === id)?.figures ?? [];
    expect(figuresOf('pollerCpu').filter((figure) => figure.target !== undefined)).toMatchObject([
      { label: 'parse + preparePage per 100-version page', floor: 150, target: 0.05 },
    ]);
    expect(
      figuresOf('coldStart')
        .filter((figure) => figure.target !== undefined)
        .map((figure) => [figure.label, figure.target]),
    ).toEqual([
      ["  over bare + undici's entry (fastest of 3)", 1.15],
      ['consumer module init (fastest of 3)', 1.3],
    ]);
    // The fleet's targets (issue 32): freshness p99 ≤ 90 s, idle all-in ≤ $0.15 and ≤ 1.2× its floor.
    const fleetTargets = figuresOf('fleet').filter((figure) => figure.target !== undefined);
    expect(fleetTargets).toContainEqual(expect.objectContaining({ floor: 90, target: 1 }));
    expect(fleetTargets).toContainEqual(expect.objectContaining({ floor: 0.15, target: 1 }));
    expect(fleetTargets.map((figure) => figure.target)).toContain(1.2);
    expect(result.stdout).toContain('Figure');
  }, 240_000);
});
