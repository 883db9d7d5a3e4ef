// Local mode's schedule as pure decisions, without the emulator.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_GIVE_UP_AFTER_MS,
  decideAfterRun,
  decideAtTheEnd,
  decideWait,
  giveUpAfterOf,
  lastProgressAt,
  mayStartRun,
  type SchedulingTuning,
} from '../../../tools/local/scheduling.js';

const tuning: SchedulingTuning = { shallowQueueDepth: 50, idlePollIntervalMs: 1000 };
const run = (kind: string, pages = 1, versionsPublished = 10, quarantined = 0, cursorRecoveries = 0) => ({
  kind,
  pages,
  versionsPublished,
  quarantined,
  cursorRecoveries,
});

describe('decideAfterRun', () => {
  it.each(['page-limit', 'out-of-time', 'lease-lost', 'stale-continuation'])(
    'runs again at once after %s: the stream has more',
    (kind) => {
      expect(decideAfterRun(run(kind), 0, tuning)).toEqual({ action: 'run-next', delayMs: 0 });
    },
  );

  it.each([
    // Whether the partner is done is asked only after a run that reached the end of the stream.
    ['caught-up', run('caught-up'), { action: 'check-caught-up' }],
    // The recovered cursor expired too: a later run recovers again, nothing is concluded.
    ['cursor-expired-again', run('cursor-expired-again'), { action: 'run-next', delayMs: 1000 }],
    // retry-later with pages is a pause; with nothing fetched, no progress (a stall).
    ['retry-later with pages', run('retry-later', 2), { action: 'run-next', delayMs: 1000 }],
    ['retry-later, none fetched', run('retry-later', 0, 0), expect.objectContaining({ action: 'stall' })],
    [
      'lease-held: look for a dead local lease holder',
      run('lease-held', 0, 0),
      { action: 'release-dead-lease' },
    ],
  ])('after %s decides %j', (_name, ran, decision) => {
    expect(decideAfterRun(ran, 0, tuning)).toEqual(decision);
  });

  it.each(['stuck-cursor', 'missing-next-page-id', 'order-over-body-cap', 'disabled'])(
    'ends with the documented stop after %s, whatever the run changed',
    (kind) => {
      expect(decideAfterRun(run(kind), 0, tuning)).toEqual({
        action: 'end-feed-stopped',
        kind,
        detail: expect.stringContaining(`the poller ended '${kind}'`),
      });
    },
  );

  it('ends on a 401, and on the backoff an earlier 401 left', () => {
    expect(decideAfterRun(run('auth-failed', 0, 0), 0, tuning)).toMatchObject({
      action: 'end-auth-failed',
      detail: 'partner API rejected the token (401 Unauthorized)',
    });
    const backoff = decideAfterRun(run('auth-backoff', 0, 0), 0, tuning);
    expect(backoff).toMatchObject({ action: 'end-auth-failed' });
    // A new token is the way out, not --reset-data (which empties the tables).
    expect(JSON.stringify(backoff)).toContain('restart with it');
    expect(JSON.stringify(backoff)).not.toContain('--reset-data');
  });

  it('stalls on a thrown run and on retry-later with nothing fetched, naming the failure the poller reported', () => {
    expect(decideAfterRun({ error: new Error('queue unavailable') }, 0, tuning)).toEqual({
      action: 'stall',
      why: 'failed: queue unavailable',
      delayMs: 1000,
    });
    const unreachable = { ...run('retry-later', 0, 0), failure: 'partner unreachable: connect ECONNREFUSED' };
    expect(decideAfterRun(unreachable, 0, tuning)).toMatchObject({
      action: 'stall',
      why: 'ended retry-later: partner unreachable: connect ECONNREFUSED',
    });
  });

  it('backs off failed runs exponentially, from the idle interval up to 30 s, never a tight loop', () => {
    const failed = { error: new Error('partner down') };
    const delays = [0, 1, 2, 3, 4, 5, 6, 20].map((stalled) => decideAfterRun(failed, stalled, tuning));

    expect(delays.map((decision) => (decision.action === 'stall' ? decision.delayMs : -1))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it.each([
    ['a documented stop', run('stuck-cursor'), 'end-feed-stopped'],
    ['a 401', run('auth-failed', 0, 0), 'end-auth-failed'],
  ])('ends at once on %s, however many runs failed before it', (_name, ran, action) => {
    expect(decideAfterRun(ran, 50, tuning)).toMatchObject({ action });
  });
});

describe('the give-up clock', () => {
  const minute = 60_000;

  it('gives up only once nothing progressed for the whole window, after a last attempt at its end', () => {
    // Started at 0, no progress since: runs back off, but the one due after the give-up time runs at it.
    expect(decideWait(10_000, 0, 4000, minute)).toEqual({
      action: 'wait',
      nextRunAtMs: 14_000,
      giveUpAtMs: minute,
    });
    expect(decideWait(50_000, 0, 30_000, minute)).toEqual({
      action: 'wait',
      nextRunAtMs: minute,
      giveUpAtMs: minute,
    });
    expect(decideWait(minute, 0, 30_000, minute)).toEqual({ action: 'give-up' });
  });

  it('restarts with any progress: a page committed, or a version applied', () => {
    const now = 11 * minute;
    const since = (times: Parameters<typeof lastProgressAt>[0]) =>
      decideWait(now, lastProgressAt(times), 1000, DEFAULT_GIVE_UP_AFTER_MS);

    expect(since({ startedAtMs: 0 })).toEqual({ action: 'give-up' });
    expect(since({ startedAtMs: 0, pageCommittedAtMs: 2 * minute })).toMatchObject({
      action: 'wait',
      giveUpAtMs: 12 * minute,
    });
    expect(
      since({ startedAtMs: 0, pageCommittedAtMs: minute, versionAppliedAtMs: 5 * minute }),
    ).toMatchObject({
      action: 'wait',
      giveUpAtMs: 15 * minute,
    });
  });

  it('waits 10 minutes by default, as long as asked when asked, and for ever with --watch unless asked', () => {
    expect(DEFAULT_GIVE_UP_AFTER_MS).toBe(10 * minute);
    expect(giveUpAfterOf(undefined, false)).toBe(10 * minute);
    expect(giveUpAfterOf(15_000, false)).toBe(15_000);
    expect(giveUpAfterOf(undefined, true)).toBeUndefined();
    expect(giveUpAfterOf(15_000, true)).toBe(15_000);
    expect(decideWait(365 * 24 * 60 * minute, 0, 30_000, undefined)).toMatchObject({ action: 'wait' });
  });
});

describe('decideAtTheEnd', () => {
  const servedNothing = run('caught-up', 1, 0);
  const replay = run('caught-up', 1, 5, 0, 1);

  it('ends once the partner served nothing after the committed cursor, unless watching', () => {
    expect(decideAtTheEnd(servedNothing, true, false, tuning, false)).toEqual({ action: 'end-caught-up' });
    expect(decideAtTheEnd(servedNothing, true, false, tuning, true)).toMatchObject({
      action: 'run-next',
      delayMs: 1000,
    });
  });

  it('asks the committed cursor again after a run that served versions, even if none was new', () => {
    expect(decideAtTheEnd(run('caught-up'), true, false, tuning, false)).toEqual({
      action: 'run-next',
      delayMs: 0,
      emptyReplay: false,
    });
    expect(decideAtTheEnd(run('caught-up', 1, 1, 1), true, false, tuning, false)).toMatchObject({
      action: 'run-next',
      delayMs: 0,
    });
  });

  it('does not end after one replay that brought nothing new: the stream may go on after the old cursor', () => {
    expect(decideAtTheEnd(replay, true, false, tuning, false)).toEqual({
      action: 'run-next',
      delayMs: 1000,
      emptyReplay: true,
    });
    // A replay that brought new versions is progress.
    expect(decideAtTheEnd(replay, false, true, tuning, false)).toEqual({
      action: 'run-next',
      delayMs: 0,
      emptyReplay: false,
    });
  });

  it('ends when the cursor a replay left is refused again and the next replay brings nothing new (always-expired cursor)', () => {
    expect(decideAtTheEnd(replay, true, true, tuning, false)).toEqual({ action: 'end-caught-up' });
  });
});

describe('mayStartRun', () => {
  it('waits for its time and for the consumer to keep up', () => {
    expect(mayStartRun(1000, 500, 10, tuning)).toBe(true);
    expect(mayStartRun(400, 500, 10, tuning)).toBe(false);
    expect(mayStartRun(1000, 500, 50, tuning)).toBe(false);
  });
});
