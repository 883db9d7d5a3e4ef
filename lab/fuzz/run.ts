// `npm run fuzz`: seeds → partners → the whole pipeline against each → the invariants (lab/README.md, "The
// fuzzer"). Prints a line per seed as it ends (a failing seed with its violations and the command that
// replays it), then the totals: seeds, faults fired per kind, time; writes the JSON report.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseCommandLine } from '../../tools/cli-args.js';
import type { AnyScenarioId } from '../../tools/simulator/types.js';
import type { SeedReport } from './fuzz.js';
import { type FuzzOptions, parseFuzzArgs, USAGE } from './options.js';
import { type RegressionCase, readRegressions } from './regressions.js';
import { seedLines, totals } from './report.js';

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s`;

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const parsed = parseCommandLine(() => parseFuzzArgs(argv), USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const options: FuzzOptions = parsed.options;
  // Loaded once the flags parse (the pipeline, the AWS SDK, the simulator): --help and a bad flag answer at once.
  const [{ Fuzzer }, { REPO_ROOT }] = await Promise.all([
    import('./fuzz.js'),
    import('../chaos/local-mode.js'),
  ]);
  const cases: RegressionCase[] = options.replay
    ? readRegressions(path.resolve(options.replay))
    : options.scenarios
      ? options.scenarios.map((scenario) => ({ scenario, profile: 'full' as const, found: '' }))
      : options.seeds.map((seed) => ({
          seed,
          profile: options.profile,
          found: '',
          ...(options.mode ? { mode: options.mode } : {}),
        }));
  const fuzzer = new Fuzzer(path.resolve(REPO_ROOT, options.logDir));
  const interrupt = () => {
    void fuzzer.close().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const reports: SeedReport[] = [];
  try {
    for (const entry of cases) {
      const name =
        entry.scenario === undefined ? `seed ${entry.seed} (${entry.profile})` : `scenario ${entry.scenario}`;
      process.stderr.write(`[fuzz ${elapsed()}] ${name}\n`);
      const report =
        entry.scenario === undefined
          ? await fuzzer.runSeed(entry.seed ?? 0, entry.profile, entry.mode ?? options.mode)
          : await fuzzer.runScenario(entry.scenario as AnyScenarioId);
      reports.push(report);
      process.stdout.write(seedLines(report));
    }
  } finally {
    await fuzzer.close();
  }
  const ms = Date.now() - started;
  process.stdout.write(totals(reports, ms));
  const out = path.resolve(REPO_ROOT, options.out);
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ command: ['npm run fuzz --', ...argv].join(' '), ms, reports }, null, 2)}\n`,
  );
  process.stdout.write(`report: ${path.relative(REPO_ROOT, out)}\n`);
  return reports.every((report) => report.violations.length === 0) ? 0 : 1;
}

process.exitCode = await main();
