// Local mode's schedule as pure decisions, without the emulator.
import { describe, expect, it } from 'vitest';
import {
  decideAfterRun,
  decideAtTheEnd,
  mayStartRun,
  type SchedulingTuning,
} from '../../../tools/local/scheduling.js';

const tuning: SchedulingTuning = {
  shallowQueueDepth: 50,
  idlePollIntervalMs: 1000,
  maxConsecutiveRunErrors: 3,
};
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
      expect(decideAfterRun(run(kind), 0, tuning, false)).toEqual({ action: 'run-next', delayMs: 0 });
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
    expect(decideAfterRun(ran, 0, tuning, false)).toEqual(decision);
  });

  it.each(['stuck-cursor', 'missing-next-page-id', 'order-over-body-cap', 'disabled'])(
    'ends with the documented stop after %s, whatever the run changed',
    (kind) => {
      expect(decideAfterRun(run(kind), 0, tuning, false)).toEqual({
        action: 'end-feed-stopped',
        kind,
        detail: expect.stringContaining(`the poller ended '${kind}'`),
      });
    },
  );

  it('ends on a 401, and on the backoff an earlier 401 left', () => {
    expect(decideAfterRun(run('auth-failed', 0, 0), 0, tuning, false)).toMatchObject({
      action: 'end-auth-failed',
      detail: 'partner API rejected the token (401 Unauthorized)',
    });
    const backoff = decideAfterRun(run('auth-backoff', 0, 0), 0, tuning, false);
    expect(backoff).toMatchObject({ action: 'end-auth-failed' });
    // A new token is the way out, not --reset-data (which empties the tables).
    expect(JSON.stringify(backoff)).toContain('restart with it');
    expect(JSON.stringify(backoff)).not.toContain('--reset-data');
  });

  it('backs off a failed run, doubling, and gives up after the configured number in a row (not in watch mode)', () => {
    const failed = { error: new Error('queue unavailable') };
    expect(decideAfterRun(failed, 0, tuning, false)).toEqual({
      action: 'stall',
      why: 'failed: queue unavailable',
      delayMs: 1000,
      fatal: false,
    });
    expect(decideAfterRun(failed, 1, tuning, false)).toMatchObject({ delayMs: 2000, fatal: false });
    expect(decideAfterRun(failed, 2, tuning, false)).toMatchObject({ delayMs: 4000, fatal: true });
    expect(decideAfterRun(failed, 2, tuning, true)).toMatchObject({ fatal: false });
    expect(decideAfterRun(failed, 10, tuning, true)).toMatchObject({ delayMs: 30_000 });
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
