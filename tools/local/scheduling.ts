// Local mode's schedule, as pure decisions (no clock, no emulator): when the next poller run may start,
// what a finished run means for the local pipeline, and when waiting for a partner that makes no progress
// ends. The poller scheduler (local-pipeline.ts) carries them out. On AWS the EventBridge rule decides;
// locally the next run follows as soon as the previous one ended and the consumer has kept up, because
// moto's SQS slows as a queue fills.

export interface SchedulingTuning {
  /** The next poller run starts only when the orders queue holds fewer messages than this. */
  shallowQueueDepth: number;
  /** Between runs once a run found nothing new (watch mode), after a lease-held or a retry-later run. */
  idlePollIntervalMs: number;
}

/** Without progress for this long, local mode gives up waiting (`--give-up-after`). */
export const DEFAULT_GIVE_UP_AFTER_MS = 10 * 60_000;

/** The give-up time of a run: the one asked for, else the default; with --watch (polling until Ctrl-C), never. */
export function giveUpAfterOf(asked: number | undefined, watch: boolean): number | undefined {
  return asked ?? (watch ? undefined : DEFAULT_GIVE_UP_AFTER_MS);
}
/** The backoff between runs without progress doubles from idlePollIntervalMs up to this. */
export const MAX_STALL_DELAY_MS = 30_000;

/** What the scheduler needs of a finished run: its outcome (with the failure the poller reported), or the error it threw. */
export type FinishedRun =
  | { kind: string; pages: number; versionsPublished: number; quarantined: number; failure?: string }
  | { error: unknown };

export type RunDecision =
  /** The partner rejected the token: local mode ends (exit 3). */
  | { action: 'end-auth-failed'; detail: string }
  /** The run reached the end of the stream (hasMore false): ask whether the partner is done (decideAtTheEnd). */
  | { action: 'check-caught-up' }
  /** The run ended in a way the feed cannot get past by itself (a documented stop): local mode ends (exit 5). */
  | { action: 'end-feed-stopped'; kind: string; detail: string }
  /** Another invocation holds the lease: see whether it is a dead local process's. */
  | { action: 'release-dead-lease' }
  /** The run failed (thrown, or retry-later with nothing fetched): back off, `why` names the failure. */
  | { action: 'stall'; why: string; delayMs: number }
  /** Run again after `delayMs` (0: as soon as the queue is shallow). */
  | { action: 'run-next'; delayMs: number };

export const AUTH_FAILED_MESSAGE = 'partner API rejected the token (401 Unauthorized)';

/** Outcome kinds after which the stream has more: the next run continues from the committed cursor. */
const MORE_TO_FETCH = new Set(['page-limit', 'out-of-time', 'lease-lost', 'stale-continuation']);

/** Why a run that ended with a documented stop (any kind not handled otherwise) ends local mode. */
export function feedStoppedDetail(kind: string): string {
  return `the poller ended '${kind}': the feed cannot go on by itself (on AWS its alarm fires); tools/RUNBOOK.md says what to do and which command resumes it`;
}

/**
 * What a finished run means; `stalled` counts the failed runs in a row before this one (the backoff doubles
 * with each). Documented stops and a rejected token end at once, however long the feed has been failing.
 */
export function decideAfterRun(run: FinishedRun, stalled: number, tuning: SchedulingTuning): RunDecision {
  const stall = (why: string): RunDecision => ({
    action: 'stall',
    why,
    delayMs: Math.min(MAX_STALL_DELAY_MS, tuning.idlePollIntervalMs * 2 ** stalled),
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
  if (run.kind === 'caught-up') return { action: 'check-caught-up' };
  if (MORE_TO_FETCH.has(run.kind)) return { action: 'run-next', delayMs: 0 };
  if (run.kind === 'lease-held') return { action: 'release-dead-lease' };
  if (run.kind === 'retry-later') {
    return run.pages === 0
      ? stall(`ended retry-later: ${run.failure ?? 'the partner API kept failing or could not be reached'}`)
      : { action: 'run-next', delayMs: tuning.idlePollIntervalMs };
  }
  // The recovered cursor expired too: a later run recovers again.
  if (run.kind === 'cursor-expired-again') return { action: 'run-next', delayMs: tuning.idlePollIntervalMs };
  // stuck-cursor, missing-next-page-id, a single order over the body cap, a disabled feed, …: asking again
  // gets the same answer.
  return { action: 'end-feed-stopped', kind: run.kind, detail: feedStoppedDetail(run.kind) };
}

/** What decideAtTheEnd needs of a caught-up run. */
export interface CaughtUpRun {
  versionsPublished: number;
  quarantined: number;
  cursorRecoveries: number;
}

/**
 * After a run that reached the end of the stream (caught-up): done on the partner's word, not on what the
 * table made of it. Done (without watch) when the partner served nothing after the committed cursor (rule 3's
 * empty page, or the empty stream), or when the cursor a replay left is refused again and the next replay
 * brings nothing new either: the spec's always-expired cursor (test-expired-page-id), which never serves
 * anything after its cursor. A single replay that changed nothing is not the end: after a cursor expired deep
 * in the stream, the replay from the start ends where the old cursor did, and the stream may go on from there.
 * `emptyReplay` tells the caller whether this run was such a replay, for the next decision.
 */
export function decideAtTheEnd(
  run: CaughtUpRun,
  changedNothing: boolean,
  previousWasEmptyReplay: boolean,
  tuning: SchedulingTuning,
  watch: boolean,
): { action: 'end-caught-up' } | { action: 'run-next'; delayMs: number; emptyReplay: boolean } {
  const servedNothing = run.versionsPublished === 0 && run.quarantined === 0;
  const emptyReplay = run.cursorRecoveries > 0 && run.quarantined === 0 && changedNothing;
  if (servedNothing || (emptyReplay && previousWasEmptyReplay)) {
    return watch
      ? { action: 'run-next', delayMs: tuning.idlePollIntervalMs, emptyReplay }
      : { action: 'end-caught-up' };
  }
  return { action: 'run-next', delayMs: emptyReplay ? tuning.idlePollIntervalMs : 0, emptyReplay };
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

/**
 * When the feed last made progress: a page committed, or a version applied (the consumer's), whichever is
 * later; before either, when the run started. Nothing else is progress: a failed run, retry-later with
 * nothing fetched, a lease another run holds, a recovered cursor refused again.
 */
export function lastProgressAt(times: {
  startedAtMs: number;
  pageCommittedAtMs?: number | undefined;
  versionAppliedAtMs?: number | undefined;
}): number {
  return Math.max(times.startedAtMs, times.pageCommittedAtMs ?? 0, times.versionAppliedAtMs ?? 0);
}

export type WaitDecision =
  /** No progress for `giveUpAfterMs`: local mode ends, keeping what it stored. */
  | { action: 'give-up' }
  /** The next run starts at `nextRunAtMs`; without progress, local mode gives up at `giveUpAtMs`. */
  | { action: 'wait'; nextRunAtMs: number; giveUpAtMs: number | undefined };

/**
 * The give-up clock, after a run that is to be followed by another `delayMs` later: give up once
 * `giveUpAfterMs` has passed since the last progress (undefined: never); else the next run, never later than
 * the give-up time, so that the last attempt is made then.
 */
export function decideWait(
  nowMs: number,
  lastProgressAtMs: number,
  delayMs: number,
  giveUpAfterMs: number | undefined,
): WaitDecision {
  const giveUpAtMs = giveUpAfterMs === undefined ? undefined : lastProgressAtMs + giveUpAfterMs;
  if (giveUpAtMs !== undefined && nowMs >= giveUpAtMs) return { action: 'give-up' };
  return { action: 'wait', nextRunAtMs: Math.min(nowMs + delayMs, giveUpAtMs ?? Infinity), giveUpAtMs };
}
