// The design README's 429 row describes what the client does with Retry-After (issue 11 point 14: it once said
// an absurd value falls back to 1 s capped at 60 s, while the client ends the run on anything over 60 s).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, rateLimitWaitMs } from '../../../functions/core/partner/client.js';

const README = readFileSync(new URL('../../../functions/README.md', import.meta.url), 'utf8');
const row429 = README.split('\n').find((line) => line.startsWith('| **429**')) ?? '';
const seconds = (ms: number) => `${ms / 1000} s`;

describe("the README's 429 row", () => {
  it('says a missing or unparseable Retry-After waits the default', () => {
    expect(rateLimitWaitMs(undefined, 1, DEFAULT_RETRY_POLICY)).toEqual({
      action: 'wait',
      waitMs: DEFAULT_RETRY_POLICY.defaultRetryAfterMs,
    });
    expect(row429).toContain(`missing/unparseable → ${seconds(DEFAULT_RETRY_POLICY.defaultRetryAfterMs)}`);
  });

  it('says a Retry-After over the cap ends the run instead of being capped', () => {
    const overCap = DEFAULT_RETRY_POLICY.maxRetryAfterMs + 1_000;
    expect(rateLimitWaitMs(overCap, 1, DEFAULT_RETRY_POLICY)).toEqual({
      action: 'give-up',
      retryAfterMs: overCap,
    });
    expect(row429).toContain(`A \`Retry-After\` over ${seconds(DEFAULT_RETRY_POLICY.maxRetryAfterMs)}`);
    expect(row429).toMatch(/over 60 s[^.]*ends the run/);
    expect(row429).not.toMatch(/capped at 60 s\)/);
  });

  it('says repeats double the wait up to the cap', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7].map((n) => rateLimitWaitMs(1_000, n, DEFAULT_RETRY_POLICY));
    expect(waits.map((w) => (w.action === 'wait' ? w.waitMs : undefined))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000,
    ]);
    expect(row429).toContain(`doubles on repeats, up to ${seconds(DEFAULT_RETRY_POLICY.maxRetryAfterMs)}`);
  });
});
