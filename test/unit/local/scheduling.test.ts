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
const run = (kind: string, pages = 1, versionsPublished = 10, quarantined = 0) => ({
  kind,
  pages,
  versionsPublished,
  quarantined,
});

describe('decideAfterRun', () => {
  it('runs again at once while the stream has more (page limit, out of time)', () => {
    expect(decideAfterRun(run('page-limit'), 0, tuning, false)).toEqual({ action: 'run-next', delayMs: 0 });
    expect(decideAfterRun(run('out-of-time'), 0, tuning, false)).toEqual({ action: 'run-next', delayMs: 0 });
  });

  it.each(['caught-up', 'cursor-expired-again', 'stuck-cursor', 'missing-next-page-id'])(
    'asks whether a %s run changed anything',
    (kind) => {
      expect(decideAfterRun(run(kind), 0, tuning, false)).toEqual({ action: 'check-caught-up' });
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

  it('treats retry-later with nothing fetched as no progress, and with pages as a pause', () => {
    expect(decideAfterRun(run('retry-later', 0, 0), 0, tuning, false)).toMatchObject({ action: 'stall' });
    expect(decideAfterRun(run('retry-later', 2), 0, tuning, false)).toEqual({
      action: 'run-next',
      delayMs: 1000,
    });
  });

  it('treats an order over the page body cap as no progress', () => {
    expect(decideAfterRun(run('order-over-body-cap', 0, 0), 0, tuning, false)).toMatchObject({
      action: 'stall',
      why: expect.stringContaining('maxPageBodyBytes'),
    });
  });

  it('looks for a dead local lease holder when the lease is held', () => {
    expect(decideAfterRun(run('lease-held', 0, 0), 0, tuning, false)).toEqual({
      action: 'release-dead-lease',
    });
  });
});

describe('decideAtTheEnd', () => {
  it('ends once a run at the end changed nothing, unless watching', () => {
    expect(decideAtTheEnd(run('caught-up'), true, tuning, false)).toEqual({ action: 'end-caught-up' });
    expect(decideAtTheEnd(run('caught-up'), true, tuning, true)).toEqual({
      action: 'run-next',
      delayMs: 1000,
    });
  });

  it('runs again when the run changed the table or quarantined something', () => {
    expect(decideAtTheEnd(run('caught-up'), false, tuning, false)).toEqual({
      action: 'run-next',
      delayMs: 0,
    });
    expect(decideAtTheEnd(run('caught-up', 1, 1, 1), true, tuning, false)).toEqual({
      action: 'run-next',
      delayMs: 0,
    });
    expect(decideAtTheEnd(run('cursor-expired-again'), false, tuning, false)).toEqual({
      action: 'run-next',
      delayMs: 1000,
    });
  });
});

describe('mayStartRun', () => {
  it('waits for its time and for the consumer to keep up', () => {
    expect(mayStartRun(1000, 500, 10, tuning)).toBe(true);
    expect(mayStartRun(400, 500, 10, tuning)).toBe(false);
    expect(mayStartRun(1000, 500, 50, tuning)).toBe(false);
  });
});
