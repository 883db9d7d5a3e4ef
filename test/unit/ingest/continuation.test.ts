import { describe, expect, it } from 'vitest';
import {
  type ContinuationEvent,
  continuationOf,
  nextContinuation,
} from '../../../functions/core/ingest/continuation.js';

const context = {
  feedId: 'eu',
  current: undefined,
  runId: 'req-tick',
  startedAt: '2026-11-23T06:00:00.000Z',
  maxContinuations: 3,
  enabled: true,
};
const outOfTime = { kind: 'out-of-time', failed: false, pages: 12 };

describe('nextContinuation after each kind of run', () => {
  it.each([
    ['out-of-time', false, 5, true],
    ['page-limit', false, 5, true],
    ['out-of-time', false, 0, false],
    ['caught-up', false, 5, false],
    ['auth-failed', true, 0, false],
    ['retry-later', false, 3, false],
    ['lease-held', false, 0, false],
    ['cursor-expired-again', false, 1, false],
    ['lease-lost', true, 2, false],
    ['stuck-cursor', false, 4, false],
    ['order-over-body-cap', false, 2, false],
  ])('%s (failed %s, %i pages) → %s', (kind, failed, pages, expected) => {
    expect(nextContinuation({ kind, failed, pages }, context) !== undefined).toBe(expected);
  });
});

describe('nextContinuation', () => {
  it('starts a chain after a scheduled run that ran out of time with progress', () => {
    expect(nextContinuation(outOfTime, context)).toEqual({
      continuation: {
        feedId: 'eu',
        chainId: 'req-tick',
        chain: 1,
        chainStartedAt: '2026-11-23T06:00:00.000Z',
      },
    });
  });

  it('carries the chain on, keeping when it started, up to the chain cap (the schedule starts the next)', () => {
    const chained = (chain: number): ContinuationEvent => ({
      continuation: { feedId: 'eu', chainId: 'req-first', chain, chainStartedAt: '2026-11-23T05:00:00.000Z' },
    });
    expect(nextContinuation(outOfTime, { ...context, current: chained(2) })).toEqual(chained(3));
    expect(nextContinuation(outOfTime, { ...context, current: chained(3) })).toBeUndefined();
  });

  it('starts nothing when the feed is disabled', () => {
    expect(nextContinuation(outOfTime, { ...context, enabled: false })).toBeUndefined();
  });
});

describe('continuationOf', () => {
  it('reads the event the poller sends itself', () => {
    const event = {
      continuation: {
        feedId: 'eu',
        chainId: 'req-first',
        chain: 2,
        chainStartedAt: '2026-11-23T05:00:00.000Z',
      },
    };
    expect(continuationOf(event)).toEqual(event);
  });

  it.each([
    [{}],
    [{ 'detail-type': 'Scheduled Event', source: 'aws.events' }],
    [null],
    [{ continuation: { feedId: 'eu', chainId: 'req-first', chain: 0, chainStartedAt: 'x' } }],
    [{ continuation: { feedId: 'eu', chainId: 'req-first', chain: 1.5, chainStartedAt: 'x' } }],
    [{ continuation: { feedId: 7, chain: 1, chainStartedAt: 'x' } }],
  ])('treats %j as a scheduled run', (event) => {
    expect(continuationOf(event)).toBeUndefined();
  });
});
