// The client's waits as pure functions: Retry-After (with the partner's Date), the 429 wait, and the full-jitter backoff of other retries.
import { describe, expect, it } from 'vitest';
import { backoffWithFullJitter } from '../../../functions/core/backoff.js';
import {
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  rateLimitWaitMs,
  retryAfterOf,
} from '../../../functions/core/partner/client.js';

const NOW = Date.UTC(2030, 0, 1, 0, 0, 0); // Tue, 01 Jan 2030 00:00:00 GMT

describe('parseRetryAfter', () => {
  it.each([
    ['0', 0],
    ['1', 1_000],
    [' 120 ', 120_000],
    ['Tue, 01 Jan 2030 00:00:07 GMT', 7_000], // IMF-fixdate
    [new Date(NOW + 90_000).toUTCString(), 90_000],
    ['Tuesday, 01-Jan-30 00:00:05 GMT', 5_000], // RFC 850
    ['Tue Jan  1 00:00:03 2030', 3_000], // asctime
    ['Mon, 31 Dec 2029 23:59:00 GMT', 0], // a date in the past: no wait
    ['Sun, 06 Nov 1994 08:49:37 GMT', 0],
  ])('reads %j as %d ms', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it.each([
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
  ])('reads %j as no value (the default wait)', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });
});

describe('rateLimitWaitMs (the 429 wait)', () => {
  const wait = (retryAfterMs: number | undefined, consecutive: number) =>
    rateLimitWaitMs(retryAfterMs, consecutive, DEFAULT_RETRY_POLICY);

  it.each([
    ["the server's Retry-After on the first 429", 3_000, 1, 3_000],
    ['Retry-After: 0 on the first 429', 0, 1, 0],
    ['the default 1 s when Retry-After is missing', undefined, 1, 1_000],
    ['the default when Retry-After is unusable (NaN)', Number.NaN, 1, 1_000],
    ['the default when Retry-After is negative', -1, 1, 1_000],
    ['a backoff on repeats even after Retry-After: 0', 0, 2, 2_000],
    ["never less than the server's value when growth hits the cap", 50_000, 3, 60_000],
    ['the cap when Retry-After is the cap', 60_000, 4, 60_000],
  ])('waits %s', (_name, retryAfterMs, consecutive, waitMs) => {
    expect(wait(retryAfterMs, consecutive)).toEqual({ action: 'wait', waitMs });
  });

  it('doubles the wait on repeated 429s, up to the 60 s cap', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => wait(1_000, n));
    expect(waits.map((w) => (w.action === 'wait' ? w.waitMs : undefined))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });

  it("gives up with the server's value when Retry-After exceeds the cap (the run ends instead)", () => {
    expect(wait(3_600_000, 1)).toEqual({ action: 'give-up', retryAfterMs: 3_600_000 });
  });
});

describe('backoffWithFullJitter', () => {
  it('draws uniformly below min(max, base * 2^(attempt-1))', () => {
    expect(backoffWithFullJitter(1, 100, 10_000, () => 0.999999)).toBe(99);
    expect(backoffWithFullJitter(3, 100, 10_000, () => 0.5)).toBe(200);
    expect(backoffWithFullJitter(4, 100, 10_000, () => 0)).toBe(0);
    expect(backoffWithFullJitter(5_000, 100, 1_000, () => 0.999999)).toBeLessThan(1_000);
  });

  it('stays a whole number within [0, ceiling) for every draw, even a misbehaving random()', () => {
    for (let attempt = 1; attempt <= 8; attempt++) {
      const ceiling = Math.min(5_000, 200 * 2 ** (attempt - 1));
      for (const r of [0, 0.5, 0.9999, 1, 1.5, -1, Number.NaN]) {
        const ms = backoffWithFullJitter(attempt, 200, 5_000, () => r);
        expect(Number.isInteger(ms) && ms >= 0 && ms < ceiling, `attempt ${attempt}, random ${r}`).toBe(true);
      }
    }
  });
});

describe('retryAfterOf: a 429’s Retry-After as the client and the budget read it', () => {
  const NOW = Date.parse('2026-06-01T12:00:00Z'); // an hour behind the partner clock of the cases below
  it.each([
    [
      'delta-seconds, whatever the Date',
      { 'retry-after': '7', date: 'Mon, 01 Jun 2026 13:00:00 GMT' },
      7_000,
    ],
    [
      'an HTTP-date from the partner’s Date (its clock an hour fast)',
      { 'retry-after': 'Mon, 01 Jun 2026 13:00:10 GMT', date: 'Mon, 01 Jun 2026 13:00:00 GMT' },
      10_000,
    ],
    [
      'an HTTP-date from our clock without a Date',
      { 'retry-after': 'Mon, 01 Jun 2026 12:00:10 GMT' },
      10_000,
    ],
    [
      'an HTTP-date from our clock when the Date is not an HTTP-date',
      { 'retry-after': 'Mon, 01 Jun 2026 12:00:10 GMT', date: '1780315210' },
      10_000,
    ],
    ['nothing usable', { 'retry-after': 'soon', date: 'Mon, 01 Jun 2026 13:00:00 GMT' }, undefined],
  ])('%s', (_, headers, expected) => {
    expect(retryAfterOf(headers, NOW).retryAfterMs).toBe(expected);
  });

  it('passes on only what parsed, so the log carries a number or a date and nothing else', () => {
    expect(retryAfterOf({ 'retry-after': 'Bearer abc', date: 'junk' }, NOW).said).toEqual({});
    expect(retryAfterOf({ 'retry-after': ' 30 ', date: 'Mon, 01 Jun 2026 13:00:00 GMT' }, NOW).said).toEqual({
      retryAfter: '30',
      date: 'Mon, 01 Jun 2026 13:00:00 GMT',
    });
  });
});
