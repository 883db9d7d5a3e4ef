import { describe, expect, it } from 'vitest';
import { backoffWithFullJitter } from '../../../functions/core/backoff.js';
import {
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  rateLimitWaitMs,
} from '../../../functions/core/partner/client.js';

const NOW = Date.UTC(2030, 0, 1, 0, 0, 0); // Tue, 01 Jan 2030 00:00:00 GMT

describe('parseRetryAfter', () => {
  it('reads delta-seconds as milliseconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('1', NOW)).toBe(1_000);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
  });

  it('reads an IMF-fixdate as the time left until it', () => {
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:07 GMT', NOW)).toBe(7_000);
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
  });

  it('reads the obsolete RFC 850 and asctime date forms', () => {
    expect(parseRetryAfter('Tuesday, 01-Jan-30 00:00:05 GMT', NOW)).toBe(5_000);
    expect(parseRetryAfter('Tue Jan  1 00:00:03 2030', NOW)).toBe(3_000);
  });

  it('treats a date in the past as no wait', () => {
    expect(parseRetryAfter('Mon, 31 Dec 2029 23:59:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(0);
  });

  it('returns undefined for a missing, empty or garbage value', () => {
    for (const value of [
      undefined,
      '',
      '   ',
      '-5',
      '1.5',
      'soon',
      'Jan 2030',
      '2030-01-01',
      '1e3',
      'Tue, 31 Feb 2030 00:00:00 GMT',
    ]) {
      expect(parseRetryAfter(value, NOW), String(value)).toBeUndefined();
    }
  });
});

describe('rateLimitWaitMs', () => {
  const policy = DEFAULT_RETRY_POLICY;

  it("waits exactly the server's Retry-After on the first 429", () => {
    expect(rateLimitWaitMs(3_000, 1, policy)).toEqual({ action: 'wait', waitMs: 3_000 });
    expect(rateLimitWaitMs(0, 1, policy)).toEqual({ action: 'wait', waitMs: 0 });
  });

  it('uses the default wait when Retry-After is missing or unusable', () => {
    expect(rateLimitWaitMs(undefined, 1, policy)).toEqual({
      action: 'wait',
      waitMs: policy.defaultRetryAfterMs,
    });
    expect(rateLimitWaitMs(Number.NaN, 1, policy)).toEqual({
      action: 'wait',
      waitMs: policy.defaultRetryAfterMs,
    });
    expect(rateLimitWaitMs(-1, 1, policy)).toEqual({ action: 'wait', waitMs: policy.defaultRetryAfterMs });
  });

  it('grows the wait on repeated 429s, up to the cap', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => {
      const d = rateLimitWaitMs(1_000, n, policy);
      return d.action === 'wait' ? d.waitMs : Number.NaN;
    });
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('backs off on repeats even when the server says Retry-After: 0', () => {
    expect(rateLimitWaitMs(0, 2, policy)).toEqual({ action: 'wait', waitMs: 2_000 });
  });

  it("never waits less than the server's value, even when growth would hit the cap", () => {
    const d = rateLimitWaitMs(50_000, 3, policy);
    expect(d).toEqual({ action: 'wait', waitMs: 60_000 });
    expect(rateLimitWaitMs(60_000, 4, policy)).toEqual({ action: 'wait', waitMs: 60_000 });
  });

  it("gives up with the server's value when Retry-After exceeds the cap", () => {
    expect(rateLimitWaitMs(3_600_000, 1, policy)).toEqual({ action: 'give-up', retryAfterMs: 3_600_000 });
  });
});

describe('backoffWithFullJitter', () => {
  it('draws uniformly below min(max, base * 2^(attempt-1))', () => {
    expect(backoffWithFullJitter(1, 100, 10_000, () => 0.999999)).toBe(99);
    expect(backoffWithFullJitter(3, 100, 10_000, () => 0.5)).toBe(200);
    expect(backoffWithFullJitter(4, 100, 10_000, () => 0)).toBe(0);
  });

  it('never exceeds the cap, however many attempts', () => {
    expect(backoffWithFullJitter(10, 100, 1_000, () => 0.999999)).toBeLessThan(1_000);
    expect(backoffWithFullJitter(5_000, 100, 1_000, () => 0.999999)).toBeLessThan(1_000);
  });

  it('stays within [0, ceiling) for every draw, even a misbehaving random()', () => {
    for (let attempt = 1; attempt <= 8; attempt++) {
      const ceiling = Math.min(5_000, 200 * 2 ** (attempt - 1));
      for (const r of [0, 0.25, 0.5, 0.75, 0.9999, 1, 1.5, -1, Number.NaN]) {
        const ms = backoffWithFullJitter(attempt, 200, 5_000, () => r);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThan(ceiling);
        expect(Number.isInteger(ms)).toBe(true);
      }
    }
  });
});
