import { describe, expect, it } from 'vitest';
import { nextPaceDelayMs } from '../../../functions/core/ingest/poll-feed.js';

describe('nextPaceDelayMs (AIMD)', () => {
  it('stays at no delay while pages are served without a 429', () => {
    expect(nextPaceDelayMs(0, false)).toBe(0);
  });

  it('starts at the initial delay on the first rate-limited page, then doubles on each one', () => {
    const delays = [0];
    for (let page = 0; page < 4; page += 1) delays.push(nextPaceDelayMs(delays.at(-1) ?? 0, true));
    expect(delays).toEqual([0, 250, 500, 1_000, 2_000]);
  });

  it('never grows past the maximum delay', () => {
    expect(nextPaceDelayMs(16_000, true)).toBe(30_000);
    expect(nextPaceDelayMs(30_000, true)).toBe(30_000);
  });

  it('comes back down by a fixed step per page served without a 429, never below zero', () => {
    const delays = [160];
    for (let page = 0; page < 4; page += 1) delays.push(nextPaceDelayMs(delays.at(-1) ?? 0, false));
    expect(delays).toEqual([160, 110, 60, 10, 0]);
  });

  it('settles below the limit: a 429 every fifth page keeps the delay bounded and non-zero', () => {
    let delay = 0;
    const seen: number[] = [];
    for (let page = 1; page <= 200; page += 1) {
      delay = nextPaceDelayMs(delay, page % 5 === 0);
      seen.push(delay);
    }
    const lastCycle = seen.slice(-5);
    expect(Math.min(...lastCycle)).toBeGreaterThan(0);
    expect(Math.max(...lastCycle)).toBeLessThan(30_000);
  });
});
