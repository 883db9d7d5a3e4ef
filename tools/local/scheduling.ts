// Local mode's schedule, as pure decisions (no clock, no emulator): when the next poller run may start,
// and what a finished run means for the local pipeline. The poller scheduler (local-pipeline.ts) carries
// them out. On AWS the EventBridge rule decides; locally the next run follows as soon as the previous one
// ended and the consumer has kept up, because moto's SQS slows as a queue fills.

export interface SchedulingTuning {
  /** The next poller run starts only when the orders queue holds fewer messages than this. */
  shallowQueueDepth: number;
  /** Between runs once a run found nothing new (watch mode), after a lease-held or a retry-later run. */
  idlePollIntervalMs: number;
  /** Without watch: this many runs in a row without progress end local mode with an error. */
  maxConsecutiveRunErrors: number;
}

/** What the scheduler needs of a finished run: its outcome, or the error it threw. */
export type FinishedRun =
  | { kind: string; pages: number; versionsPublished: number; quarantined: number }
  | { error: unknown };

export type RunDecision =
  /** The partner rejected the token: local mode ends (exit 3). */
  | { action: 'end-auth-failed'; detail: string }
  /** The run found the end of the stream (or cannot get further now): ask whether it changed anything. */
  | { action: 'check-caught-up' }
  /** Another invocation holds the lease: see whether it is a dead local process's. */
  | { action: 'release-dead-lease' }
  /** No progress (a failed run, or retry-later with nothing fetched): back off; `fatal` ends local mode. */
  | { action: 'stall'; why: string; delayMs: number; fatal: boolean }
  /** Run again after `delayMs` (0: as soon as the queue is shallow). */
  | { action: 'run-next'; delayMs: number };

export const AUTH_FAILED_MESSAGE = 'partner API rejected the token (401 Unauthorized)';

/** Outcome kinds after which the stream has nothing more for now. */
const AT_THE_END = new Set(['caught-up', 'cursor-expired-again', 'stuck-cursor', 'missing-next-page-id']);

/** What a finished run means; `stalled` counts the runs in a row without progress before this one. */
export function decideAfterRun(
  run: FinishedRun,
  stalled: number,
  tuning: SchedulingTuning,
  watch: boolean,
): RunDecision {
  const stall = (why: string): RunDecision => ({
    action: 'stall',
    why,
    delayMs: Math.min(30_000, tuning.idlePollIntervalMs * 2 ** stalled),
    fatal: !watch && stalled + 1 >= tuning.maxConsecutiveRunErrors,
  });
  if ('error' in run) {
    return stall(`failed: ${run.error instanceof Error ? run.error.message : String(run.error)}`);
  }
  if (run.kind === 'auth-failed') return { action: 'end-auth-failed', detail: AUTH_FAILED_MESSAGE };
  if (run.kind === 'auth-backoff') {
    return {
      action: 'end-auth-failed',
      detail: `${AUTH_FAILED_MESSAGE} on an earlier run, and the token parameter still has the refused version; the poller waits out its backoff (npm run ops -- status shows until when), or calls at once with a new token: restart with it (--token-file or PARTNER_API_TOKEN), the feed resumes from its cursor`,
    };
  }
  if (AT_THE_END.has(run.kind)) return { action: 'check-caught-up' };
  // A stop that needs a person (RUNBOOK "Order over the page body cap"): no progress until the cap is raised.
  if (run.kind === 'order-over-body-cap')
    return stall('one order is over the page body cap (maxPageBodyBytes)');
  if (run.kind === 'lease-held') return { action: 'release-dead-lease' };
  if (run.kind === 'retry-later') {
    return run.pages === 0
      ? stall('ended retry-later: the partner API kept failing or could not be reached')
      : { action: 'run-next', delayMs: tuning.idlePollIntervalMs };
  }
  // page-limit, out-of-time, lease-lost: there is more; the next run continues from the committed cursor.
  return { action: 'run-next', delayMs: 0 };
}

/**
 * After a run that reached the end of the stream: local mode is done (without watch) once a poll changes
 * nothing: it published nothing, or only versions the table already had (a partner that re-serves its last
 * page, like the spec's always-expired cursor, publishes duplicates on every run; counting those as new
 * would poll forever), and quarantined nothing.
 */
export function decideAtTheEnd(
  run: { kind: string; quarantined: number },
  changedNothing: boolean,
  tuning: SchedulingTuning,
  watch: boolean,
): { action: 'end-caught-up' } | { action: 'run-next'; delayMs: number } {
  if (run.quarantined === 0 && changedNothing) {
    return watch ? { action: 'run-next', delayMs: tuning.idlePollIntervalMs } : { action: 'end-caught-up' };
  }
  return { action: 'run-next', delayMs: run.kind === 'cursor-expired-again' ? tuning.idlePollIntervalMs : 0 };
}

/** Whether the next run may start now: its time has come and the consumer has kept up. */
export function mayStartRun(
  nowMs: number,
  notBeforeMs: number,
  queueDepth: number,
  tuning: SchedulingTuning,
): boolean {
  return nowMs >= notBeforeMs && queueDepth < tuning.shallowQueueDepth;
}
