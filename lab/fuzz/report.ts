// What the fuzzer prints: a line per seed (a failing one with its violations and the command that replays
// it), and the totals (seeds, faults fired per kind, time, the failing seeds' replay commands again).
import type { SeedReport } from './fuzz.js';

/** The line of one seed, and its violations under it. */
export function seedLines(report: SeedReport): string {
  const verdict = report.violations.length === 0 ? 'PASS' : 'FAIL';
  const end = report.end.kind === 'stopped' ? `stopped at ${report.end.outcome}` : report.end.kind;
  const name =
    report.scenario === undefined
      ? `seed ${report.seed} (${report.profile}, ${report.mode})`
      : `scenario ${report.scenario} (local mode)`;
  const head =
    `${verdict} ${name} ${(report.durationMs / 1000).toFixed(1)} s: ` +
    `${end} after ${report.runs} run(s), ${report.requests} requests; ${report.partner}`;
  if (report.violations.length === 0) return `${head}\n`;
  return `${head}\n${report.violations.map((v) => `    - ${v}`).join('\n')}\n    replay: ${report.replay}\n`;
}

export function totals(reports: readonly SeedReport[], ms: number): string {
  const failed = reports.filter((report) => report.violations.length > 0);
  const fired: Record<string, number> = {};
  for (const report of reports)
    for (const [fault, count] of Object.entries(report.faultsFired))
      fired[fault] = (fired[fault] ?? 0) + count;
  const kinds = Object.entries(fired)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([fault, count]) => `${fault} ${count}`)
    .join(', ');
  const lines = [
    `${reports.length} seed(s), ${reports.length - failed.length} passed, ${failed.length} failed, in ${(ms / 60_000).toFixed(1)} min`,
    `faults fired: ${kinds || 'none'}`,
  ];
  if (failed.length > 0)
    lines.push('replay the failing seeds:', ...failed.map((report) => `  ${report.replay}`));
  return `${lines.join('\n')}\n`;
}
