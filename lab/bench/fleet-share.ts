// Section 14's fairness at equal backlogs (issue 32, item 3), as a share, pure: each feed's pace while served
// against an equal split of what the emulator delivered while it was served. A feed's pace alone moves with
// when it ran (moto serves one call at a time: a page takes longer while many feeds page than at the tail);
// its share does not. For feed i with served intervals (each run r of its catch-up: its invocation's start →
// its lease given back, fleet.ts):
//   share_i = versions_i ÷ Σ_r (fleet's versions published in r ÷ mean number of feeds served in r)
// i.e. what it got against an equal split of each of its runs. Split run by run, not over all its runs at once:
// a feed's late run beside a few feeds on an emulator slowed by the many caught up (idle polls publish
// nothing) would otherwise be weighed with its early runs beside many, where each feed's split was larger; the
// ratio of those averages reads a fair feed as 0.67 (test: "splits each run on its own").
// A fair product gives about 1 for every feed, whatever the emulator's speed; target: min ≥ 0.7 × max.

/** One feed's catch-up as recorded: its runs' served intervals and its versions published (ms, one clock). */
export interface ServedFeed {
  feedId: string;
  runs: ReadonlyArray<{ start: number; end: number }>;
  published: ReadonlyArray<{ at: number; versions: number }>;
}

export interface FeedShare {
  feedId: string;
  versions: number;
  servedMs: number;
  /** Its versions per second while served. */
  pace: number;
  /** The whole fleet's versions per second during its served intervals (its own included). */
  fleetPace: number;
  /** The time-weighted number of feeds served during its served intervals (itself included). */
  meanServed: number;
  /** versions ÷ its equal split of each of its runs; 0 when nothing at all was published while it was served. */
  share: number;
}

export function fleetShares(feeds: readonly ServedFeed[]): FeedShare[] {
  // Every version published, in time order, with running sums: the fleet's versions in (start, end].
  const events = feeds.flatMap((feed) => feed.published).sort((a, b) => a.at - b.at);
  const sums = [0];
  for (const event of events) sums.push((sums.at(-1) ?? 0) + event.versions);
  /** Index of the first event after `at`. */
  const after = (at: number) => {
    let low = 0;
    let high = events.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((events[mid]?.at ?? 0) <= at) low = mid + 1;
      else high = mid;
    }
    return low;
  };
  const fleetIn = (start: number, end: number) => (sums[after(end)] ?? 0) - (sums[after(start)] ?? 0);
  const every = feeds.flatMap((feed) => feed.runs);
  return feeds.map(({ feedId, runs, published }) => {
    const versions = published.reduce((sum, page) => sum + page.versions, 0);
    let servedMs = 0;
    let fleetVersions = 0;
    // ∫ over its intervals of the number of feeds served (the overlap of each of its runs with every run), and
    // its equal split of each run: the fleet's versions in it ÷ the mean number of feeds served in it.
    let servedFeedMs = 0;
    let split = 0;
    for (const run of runs) {
      const runMs = run.end - run.start;
      let overlapMs = 0;
      for (const other of every)
        overlapMs += Math.max(0, Math.min(run.end, other.end) - Math.max(run.start, other.start));
      const inRun = fleetIn(run.start, run.end);
      servedMs += runMs;
      servedFeedMs += overlapMs;
      fleetVersions += inRun;
      if (inRun > 0) split += runMs > 0 ? (inRun * runMs) / overlapMs : inRun;
    }
    const meanServed = servedMs > 0 ? servedFeedMs / servedMs : 1;
    return {
      feedId,
      versions,
      servedMs,
      pace: servedMs > 0 ? (versions * 1000) / servedMs : Number.POSITIVE_INFINITY,
      fleetPace: servedMs > 0 ? (fleetVersions * 1000) / servedMs : Number.POSITIVE_INFINITY,
      meanServed,
      share: split > 0 ? versions / split : 0,
    };
  });
}

/** Largest ÷ smallest of positive figures (shares, paces): the fairness target's form, ≤ 1 / 0.7. */
export function spread(values: readonly number[]): number {
  return Math.max(...values) / Math.min(...values);
}

/** Slowest ≥ 0.7 × fastest, as largest / smallest ≤ 1.43 (a ratio's target is an upper bound). */
export const FAIRNESS_TARGET = 1.43;
