// The documented stops, read from tools/RUNBOOK.md's table ("Every way a feed can still stop") itself, so the
// fuzzer holds the runbook to its word: a run that stops at an outcome the table does not list, or whose
// alarm's metric was never counted, is a failure.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface DocumentedStop {
  /** The poller's outcome, e.g. `stuck-cursor`. */
  outcome: string;
  /** The alarm's metric, e.g. `StuckCursor`; undefined: the row names no metric ("none"). */
  alarm: string | undefined;
  /** The command that resumes, as the table gives it. */
  resume: string;
}

const RUNBOOK = fileURLToPath(new URL('../../tools/RUNBOOK.md', import.meta.url));

/** The rows of the stop table that name an outcome, from the runbook's text. */
export function documentedStops(markdown: string): DocumentedStop[] {
  const start = markdown.indexOf('| stop (outcome / log)');
  if (start < 0) throw new Error('tools/RUNBOOK.md has no stop table ("| stop (outcome / log)")');
  const stops: DocumentedStop[] = [];
  for (const line of markdown.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const [stop = '', alarm = '', resume = ''] = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    // The outcome is the first code span in the first cell; a row without one (a hold, a poison message) is
    // not a poller outcome.
    const outcome = /`([a-z-]+)`/.exec(stop)?.[1];
    if (!outcome) continue;
    stops.push({ outcome, alarm: /`([A-Za-z]+)`/.exec(alarm)?.[1], resume: resume.replace(/`/g, '') });
  }
  return stops;
}

let cached: DocumentedStop[] | undefined;

export function runbookStops(): DocumentedStop[] {
  cached ??= documentedStops(readFileSync(RUNBOOK, 'utf8'));
  return cached;
}
