import { describe, expect, it } from 'vitest';
import { acceptedTokens, FEEDS_PER_TOKEN, fleetFeedEnd, fleetPlan } from '../../../tools/local/fleet.js';
import { generatedVendorIds } from '../../../tools/simulator/generated-feed.js';

/** Distinct tokens, one a call. */
function counter(): () => string {
  let next = 0;
  return () => {
    next += 1;
    return `token-${next}`;
  };
}

describe('a local fleet (npm start -- --feeds N)', () => {
  it('deals every vendor of the generated feed to exactly one of N feeds, four feeds to a token parameter', () => {
    const plan = fleetPlan(50, 0, '/order-feed-ingester/', counter());

    expect(plan.vendors).toBe(50);
    expect(plan.feeds.map((feed) => feed.feedId).slice(0, 2)).toEqual(['feed-001', 'feed-002']);
    const dealt = plan.feeds.flatMap((feed) => feed.config.vendorIds ?? []);
    expect(dealt.sort()).toEqual(generatedVendorIds(50).sort());
    const perToken = new Map<string, number>();
    for (const feed of plan.feeds) {
      const name = feed.config.tokenParameterName;
      perToken.set(name, (perToken.get(name) ?? 0) + 1);
    }
    expect(perToken.size).toBe(Math.ceil(50 / FEEDS_PER_TOKEN));
    expect(Math.max(...perToken.values())).toBe(FEEDS_PER_TOKEN);
    expect([...perToken.keys()].every((name) => name.startsWith('/order-feed-ingester/fleet-token-'))).toBe(
      true,
    );
    expect(acceptedTokens(plan)).toHaveLength(perToken.size);
  });

  it('keeps the five vendors of the default feed for a few feeds, split round-robin', () => {
    const plan = fleetPlan(2, 0, '/order-feed-ingester', () => 't');

    expect(plan.vendors).toBe(5);
    expect(plan.feeds.map((feed) => feed.config.vendorIds)).toEqual([
      ['vendor-1', 'vendor-3', 'vendor-5'],
      ['vendor-2', 'vendor-4'],
    ]);
  });

  it('adds revoked-token feeds over the first feeds’ vendors, with a token the partner is not given', () => {
    const plan = fleetPlan(3, 1, '/order-feed-ingester/', counter());

    const revoked = plan.feeds.filter((feed) => feed.revoked);
    expect(revoked.map((feed) => [feed.feedId, feed.config.vendorIds])).toEqual([
      ['revoked-1', plan.feeds[0]?.config.vendorIds],
    ]);
    const refusedToken = plan.tokens.get(revoked[0]?.config.tokenParameterName ?? '');
    expect(refusedToken).toBeDefined();
    expect(acceptedTokens(plan)).not.toContain(refusedToken);
    expect(acceptedTokens(plan)).toHaveLength(1);
  });

  it('ends a feed when it caught up, was refused or stopped, and not while it is behind or retrying', () => {
    expect(
      ['caught-up', 'auth-failed', 'auth-backoff', 'stuck-cursor', 'disabled'].map(fleetFeedEnd),
    ).toEqual(['drained', 'auth-failed', 'auth-failed', 'feed-stopped', 'feed-stopped']);
    expect(
      ['page-limit', 'slice-end', 'retry-later', 'lease-held', 'error', undefined].map(fleetFeedEnd),
    ).toEqual(Array(6).fill(undefined));
  });
});
