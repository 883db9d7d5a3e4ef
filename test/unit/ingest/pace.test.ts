import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PACE_POLICY,
  nextPaceDelayMs,
  type PacePolicy,
} from '../../../functions/core/ingest/pace.js';

const policy: PacePolicy = { initialDelayMs: 100, increaseFactor: 2, decreaseStepMs: 30, maxDelayMs: 1_000 };

describe('nextPaceDelayMs (AIMD)', () => {
  it('stays at no delay while pages are served without a 429', () => {
    expect(nextPaceDelayMs(0, { rateLimited: false }, policy)).toBe(0);
  });

  it('starts at the initial delay on the first rate-limited page, then doubles on each one', () => {
    const delays = [0];
    for (let page = 0; page < 4; page += 1) {
      delays.push(nextPaceDelayMs(delays.at(-1) ?? 0, { rateLimited: true }, policy));
    }
    expect(delays).toEqual([0, 100, 200, 400, 800]);
  });

  it('never grows past the maximum delay', () => {
    expect(nextPaceDelayMs(800, { rateLimited: true }, policy)).toBe(1_000);
    expect(nextPaceDelayMs(1_000, { rateLimited: true }, policy)).toBe(1_000);
  });

  it('comes back down by a fixed step per page served without a 429, never below zero', () => {
    const delays = [100];
    for (let page = 0; page < 4; page += 1) {
      delays.push(nextPaceDelayMs(delays.at(-1) ?? 0, { rateLimited: false }, policy));
    }
    expect(delays).toEqual([100, 70, 40, 10, 0]);
  });

  it('settles below the limit: a 429 every fifth page keeps the delay bounded and non-zero', () => {
    let delay = 0;
    const seen: number[] = [];
    for (let page = 1; page <= 200; page += 1) {
      delay = nextPaceDelayMs(delay, { rateLimited: page % 5 === 0 }, DEFAULT_PACE_POLICY);
      seen.push(delay);
    }
    const lastCycle = seen.slice(-5);
    expect(Math.min(...lastCycle)).toBeGreaterThan(0);
    expect(Math.max(...lastCycle)).toBeLessThan(DEFAULT_PACE_POLICY.maxDelayMs);
  });
});
