// The fleet's fairness as a share (lab/bench/fleet-share.ts) on hand-built timelines: what it calls fair and
// what it flags.
import { describe, expect, it } from 'vitest';
import { FAIRNESS_TARGET, fleetShares, type ServedFeed, spread } from '../bench/fleet-share.js';

/** A feed served over one run from `start`, a page of `versions` published every `everyMs`, `pages` of them. */
function paging(feedId: string, start: number, everyMs: number, pages: number, versions = 1): ServedFeed {
  const published = Array.from({ length: pages }, (_, k) => ({ at: start + (k + 1) * everyMs, versions }));
  return { feedId, runs: [{ start, end: start + pages * everyMs }], published };
}

/** Two feeds a and b paging as `first`, two feeds c and d as `second` (start, every ms, pages). */
const fourFeeds = (first: [number, number, number], second: [number, number, number]) =>
  fleetShares([paging('a', ...first), paging('b', ...first), paging('c', ...second), paging('d', ...second)]);

const shareOf = (shares: ReturnType<typeof fleetShares>, feedId: string) =>
  shares.find((share) => share.feedId === feedId)?.share;

describe("the fleet's share of the emulator while served", () => {
  it('calls a fleet fair when a slower emulator later slows every feed alike, where the pace spread is 3×', () => {
    // Two feeds page at a version a second; the next two, on a slower emulator, at one every 3 s.
    const shares = fourFeeds([0, 1_000, 10], [10_000, 3_000, 10]);
    expect(spread(shares.map((share) => share.pace))).toBeCloseTo(3, 10);
    for (const share of shares) expect(share.share).toBeCloseTo(1, 10);
    expect(spread(shares.map((share) => share.share))).toBeLessThanOrEqual(FAIRNESS_TARGET);
  });

  it('flags a fleet where two feeds get fewer page turns than the two served beside them', () => {
    // Equal backlogs of 6, all served from 0: a and b page every second, c and d every 3 s.
    const shares = fourFeeds([0, 1_000, 6], [0, 3_000, 6]);
    // a: 6 of the 16 versions published in (0, 6 s], 4 feeds served; c: 6 of 24 in (0, 18 s], 48/18 served.
    expect(shareOf(shares, 'a')).toBeCloseTo((6 * 4) / 16, 10);
    expect(shareOf(shares, 'c')).toBeCloseTo((6 * (48 / 18)) / 24, 10);
    expect(spread(shares.map((share) => share.share))).toBeGreaterThan(FAIRNESS_TARGET);
  });

  it('counts only served time: a feed that waited for a slot is as fair as the one it waited for', () => {
    const shares = fleetShares([paging('first', 0, 1_000, 10), paging('waited', 10_000, 1_000, 10)]);
    expect(shares.map((share) => share.share)).toEqual([1, 1]);
  });

  it('adds up a feed run over several slices, counting none of the time between them', () => {
    // x pages alone in two slices with 20 s between them; y pages alone in that gap.
    const x: ServedFeed = {
      feedId: 'x',
      runs: [
        { start: 0, end: 4_000 },
        { start: 24_000, end: 28_000 },
      ],
      published: [4_000, 28_000].map((at) => ({ at, versions: 8 })),
    };
    const shares = fleetShares([x, paging('y', 4_000, 5_000, 4, 4)]);
    expect(shares[0]).toMatchObject({ servedMs: 8_000, pace: 2, meanServed: 1, share: 1 });
    expect(shareOf(shares, 'y')).toBe(1);
  });

  it("splits each run on its own: a feed's late run beside few on a slowed emulator is no unfairness", () => {
    // a, b, c and d page together at a version a second for 10 s; later a pages alone, the emulator slowed
    // (busy with the caught-up feeds' idle polls, which publish nothing): a version every 4 s for 20 s.
    const late: ServedFeed = {
      feedId: 'a',
      runs: [
        { start: 0, end: 10_000 },
        { start: 20_000, end: 40_000 },
      ],
      published: [
        ...Array.from({ length: 10 }, (_, k) => ({ at: (k + 1) * 1_000, versions: 1 })),
        ...Array.from({ length: 5 }, (_, k) => ({ at: 20_000 + (k + 1) * 4_000, versions: 1 })),
      ],
    };
    const shares = fleetShares([
      late,
      paging('b', 0, 1_000, 10),
      paging('c', 0, 1_000, 10),
      paging('d', 0, 1_000, 10),
    ]);
    // Split over all its runs at once: 15 versions × 2 feeds served on average ÷ 45 published = 0.67.
    const a = shares[0];
    expect(a).toMatchObject({ versions: 15, servedMs: 30_000, meanServed: 2 });
    expect((15 * 2) / 45).toBeLessThan(1 / FAIRNESS_TARGET);
    // Run by run: 40 versions ÷ 4 feeds, then 5 ÷ 1: its split is the 15 it got.
    for (const share of shares) expect(share.share).toBeCloseTo(1, 10);
  });

  it('resolves no finer than a page: a perfect round robin of 4 feeds × 4 pages reads 1.23 to 0.91, within target', () => {
    // One invocation turns a page at a time, a, b, c, d, a, …: a ends at the 13th turn, d at the 16th.
    const feeds = ['a', 'b', 'c', 'd'].map((feedId, i) => {
      const published = [0, 1, 2, 3].map((round) => ({ at: (round * 4 + i + 1) * 100, versions: 5 }));
      return { feedId, runs: [{ start: 0, end: (12 + i + 1) * 100 }], published };
    });
    const shares = fleetShares(feeds);
    expect(shareOf(shares, 'a')).toBeCloseTo((20 * 4) / 65, 10);
    // d: 16 turns served, 4 feeds for 13 of them, then 3, 2, 1: 58/16 on average.
    expect(shareOf(shares, 'd')).toBeCloseTo((20 * (58 / 16)) / 80, 10);
    expect(spread(shares.map((share) => share.share))).toBeLessThanOrEqual(FAIRNESS_TARGET);
  });
});
