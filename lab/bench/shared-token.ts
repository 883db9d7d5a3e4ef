// Section 11: feeds sharing a limited partner. N feeds (disjoint vendors) read one token; the simulator
// limits the token to R requests/s (a token bucket holding one second's worth; 429 with Retry-After when
// empty). Each feed runs once for the same window (no continuation), all at the same time; then the same
// set-up with per-feed pacing only (no shared budget), in the same run. The shared budget is capped at R
// (partnerRequestsPerSecond, the partner publishing its limit); one more run of 4 feeds leaves the cap
// unset, so the budget finds the limit from 429s alone (AIMD).
// Figures: pages served per second (over the runs' wall time) as a share of R; 429s as a share of all requests; the slowest feed's
// pages against the fastest's.
// Without the cap the budget's AIMD needs minutes to show what it does, more than moto runs here: 4 feeds on
// one token limited at R for 10 minutes of fake-clock time (simulateUncapped), with the real RequestBudget,
// the in-memory store, the simulator's own token bucket, the client's 429 wait and the feed's own pace.
import { nextPaceDelayMs } from '../../functions/core/ingest/poll-feed.js';
import { RequestBudget } from '../../functions/core/ingest/request-budget.js';
import { DEFAULT_RETRY_POLICY, rateLimitWaitMs } from '../../functions/core/partner/client.js';
import { MemoryBudgetStore } from '../../tools/harness/memory-budget-store.js';
import type { RunningMoto } from '../../tools/local/moto.js';
import { TokenRateLimit } from '../../tools/simulator/token-rate-limit.js';
import { type ChainMeasurement, measureChains } from './catch-up.js';
import { figure, formatNumber, type Section } from './report.js';

export interface SharedTokenOptions {
  moto: RunningMoto;
  feeds: readonly number[];
  /** R: the partner's limit per token, requests per second. */
  requestsPerSecond: number;
  latencyMs: number;
  windowMs: number;
  pageSize: number;
  seed: number;
}

type Mode = 'shared budget' | 'per-feed pacing' | 'shared, no cap';

export interface SharedTokenRun {
  feeds: number;
  mode: Mode;
  measurement: ChainMeasurement;
  /** Pages served per second / R. */
  shareOfR: number;
  /** 429s / all requests. */
  rateLimitedShare: number;
  /** The slowest feed's pages / the fastest's. */
  slowestVsFastest: number;
}

export async function measureSharedToken(
  options: SharedTokenOptions,
  progress: (message: string) => void,
): Promise<SharedTokenRun[]> {
  const R = options.requestsPerSecond;
  const runs: SharedTokenRun[] = [];
  const plan: Array<{ feeds: number; mode: Mode }> = options.feeds.flatMap((feeds) => [
    { feeds, mode: 'shared budget' as const },
    { feeds, mode: 'per-feed pacing' as const },
  ]);
  if (options.feeds.includes(4)) plan.push({ feeds: 4, mode: 'shared, no cap' });
  for (const { feeds, mode } of plan) {
    progress(`shared token: ${feeds} feed(s), ${mode}, R = ${R}/s`);
    const measurement = await measureChains({
      moto: options.moto,
      // More than the window can serve: every feed is busy to the end.
      versions: Math.ceil(((R * options.windowMs) / 1000) * options.pageSize * 1.5),
      latencyMs: options.latencyMs,
      runBudgetMs: options.windowMs,
      feeds,
      vendors: 20,
      pageSize: options.pageSize,
      seed: options.seed,
      tokenRateLimit: { requestsPerSecond: R },
      shareBudget: mode !== 'per-feed pacing',
      ...(mode === 'shared budget' ? { partnerRequestsPerSecond: R } : {}),
      continue: false,
    });
    const pages = measurement.feeds.map((feed) => feed.pages);
    const { served, rateLimited, total } = measurement.requests;
    runs.push({
      feeds,
      mode,
      measurement,
      // Over the runs' measured wall time (the window plus start-up and the request in flight at its end).
      shareOfR: served / (measurement.wallMs / 1000) / R,
      rateLimitedShare: total === 0 ? 0 : rateLimited / total,
      slowestVsFastest: Math.max(...pages) === 0 ? 0 : Math.min(...pages) / Math.max(...pages),
    });
  }
  return runs;
}

/** The fake-clock run without a cap: what it served and refused, and the highest rate the budget reached. */
export interface UncappedRun {
  feeds: number;
  windowMs: number;
  served: number;
  rateLimited: number;
  /** Pages served per second / R. */
  shareOfR: number;
  /** 429s / all requests. */
  rateLimitedShare: number;
  /** The budget's highest rate / R. */
  peakRateOfR: number;
  slowestVsFastest: number;
  /** The client gave up on a 429 (a run ended retry-later; the feed waits for the next minute's tick). */
  giveUps: number;
}

/** Virtual time: timers resolve in time order as run() moves the clock; no real waiting. */
function fakeClock() {
  let now = 0;
  let order = 0;
  const timers: Array<{ at: number; order: number; resolve: () => void }> = [];
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    now: () => now,
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        timers.push({ at: now + Math.max(0, ms), order: order++, resolve });
      }),
    async run(until: number) {
      await turn();
      for (;;) {
        let next = 0;
        for (let i = 1; i < timers.length; i += 1) {
          const [a, b] = [timers[i], timers[next]] as [(typeof timers)[0], (typeof timers)[0]];
          if (a.at < b.at || (a.at === b.at && a.order < b.order)) next = i;
        }
        const timer = timers[next];
        if (!timer || timer.at > until) break;
        timers.splice(next, 1);
        now = timer.at;
        timer.resolve();
        await turn();
      }
      now = until;
    },
  };
}

/**
 * `feeds` feeds on one token limited at R, the budget without a cap, for `windowMs` of fake-clock time. Each
 * feed asks page after page: it takes its turn from the budget, the partner answers after `latencyMs`; a 429
 * is reported to the budget (the shared hold and the decrease) and waited out as the client does
 * (rateLimitWaitMs), and a client that gives up ends the run until the next minute's tick. Between pages the
 * feed keeps its own pace (nextPaceDelayMs, as pollFeed does).
 */
export async function simulateUncapped(options: {
  requestsPerSecond: number;
  feeds: number;
  latencyMs: number;
  windowMs: number;
}): Promise<UncappedRun> {
  const { requestsPerSecond: R, feeds, latencyMs, windowMs } = options;
  const clock = fakeClock();
  const store = new MemoryBudgetStore();
  const partner = new TokenRateLimit({ requestsPerSecond: R });
  const pages = Array.from({ length: feeds }, () => 0);
  let [rateLimited, giveUps, peakRate, stopped] = [0, 0, 0, false];
  const watchRate = () => {
    peakRate = Math.max(peakRate, store.items.get('budget')?.rate ?? 0);
  };
  const feed = async (index: number) => {
    const budget = new RequestBudget({ store, key: 'budget', now: clock.now, sleep: clock.sleep });
    let [pace, consecutive429s, met429] = [0, 0, false];
    while (!stopped) {
      if (pace > 0) await clock.sleep(pace);
      await budget.take();
      watchRate();
      const retryAfterSeconds = partner.check('token', clock.now());
      await clock.sleep(latencyMs);
      if (stopped) break;
      if (retryAfterSeconds === undefined) {
        pages[index] = (pages[index] ?? 0) + 1;
        pace = nextPaceDelayMs(pace, met429);
        [consecutive429s, met429] = [0, false];
        continue;
      }
      rateLimited += 1;
      consecutive429s += 1;
      met429 = true;
      await budget.rateLimited(retryAfterSeconds * 1000);
      watchRate();
      const wait = rateLimitWaitMs(retryAfterSeconds * 1000, consecutive429s, DEFAULT_RETRY_POLICY);
      if (wait.action === 'wait' && consecutive429s <= DEFAULT_RETRY_POLICY.maxRateLimitRetries) {
        await clock.sleep(wait.waitMs);
        continue;
      }
      giveUps += 1;
      pace = nextPaceDelayMs(pace, true);
      [consecutive429s, met429] = [0, false];
      await clock.sleep(60_000 - (clock.now() % 60_000));
    }
  };
  for (let index = 0; index < feeds; index += 1) void feed(index);
  await clock.run(windowMs);
  stopped = true;
  const served = pages.reduce((sum, count) => sum + count, 0);
  return {
    feeds,
    windowMs,
    served,
    rateLimited,
    shareOfR: served / (windowMs / 1000) / R,
    rateLimitedShare: rateLimited / Math.max(1, served + rateLimited),
    peakRateOfR: peakRate / R,
    slowestVsFastest: Math.max(...pages) === 0 ? 0 : Math.min(...pages) / Math.max(...pages),
    giveUps,
  };
}

/** The uncapped run's figures: each a ratio against the target's direction, as the capped ones. */
function uncappedFigures(run: UncappedRun, R: number) {
  const label = `${run.feeds} feeds, no cap (fake clock, ${run.windowMs / 60_000} min)`;
  return [
    figure(`${label}: served per second`, '/s', run.shareOfR * R),
    figure(`${label}: R / served (≤ 1.18 is ≥ 0.85 × R)`, '×', 1 / Math.max(run.shareOfR, 1e-9), 1, 1.18),
    // At most 1.0526 requests per page served is at most 5 % of requests answered 429.
    figure(
      `${label}: requests per page served`,
      '×',
      (run.served + run.rateLimited) / Math.max(1, run.served),
      1,
      1.0526,
    ),
    figure(`${label}: the budget's peak rate / R (≤ 2)`, '×', run.peakRateOfR, 1, 2),
  ];
}

export function sharedTokenSection(
  runs: SharedTokenRun[],
  options: Omit<SharedTokenOptions, 'moto'>,
  uncapped: UncappedRun,
): Section {
  const percent = (value: number) => `${formatNumber(value * 100)} %`;
  const row = (run: SharedTokenRun) =>
    `  ${String(run.feeds).padStart(2)} feed(s), ${run.mode.padEnd(15)}: ${formatNumber(run.shareOfR)} × R, 429s ${percent(run.rateLimitedShare)} of ${run.measurement.requests.total} requests, slowest ${formatNumber(run.slowestVsFastest)} × fastest (pages ${run.measurement.feeds.map((feed) => feed.pages).join('/')})`;
  const shared = runs.filter((run) => run.mode === 'shared budget');
  return {
    id: 'sharedToken',
    title: `Feeds sharing a limited partner: 1 token limited to R = ${options.requestsPerSecond} requests/s (burst R), ${options.windowMs / 1000} s window, API ${options.latencyMs} ms/GET, pageSize ${options.pageSize} (moto)`,
    floorIs:
      'R (the partner serves no more); 429s and the slowest feed as shares (targets with 4 feeds: ≥ 0.9 × R, ≤ 2 %, ≥ 0.7 × fastest; without the cap, on a fake clock: ≥ 0.85 × R, ≤ 5 %, the rate never above 2 × R)',
    figures: [
      ...uncappedFigures(uncapped, options.requestsPerSecond),
      ...shared.flatMap((run) => [
        // Ratios are against the target's direction: aggregate R / measured ≤ 1/0.9, and so on.
        figure(
          `${run.feeds} feed(s) shared: served per second`,
          '/s',
          run.shareOfR * options.requestsPerSecond,
        ),
        figure(
          `${run.feeds} feed(s) shared: R / served (≤ 1.11 is ≥ 0.9 × R)`,
          '×',
          1 / Math.max(run.shareOfR, 1e-9),
          1,
          run.feeds === 4 ? 1.11 : undefined,
        ),
        // 1.00: no 429; at most 1.0204 is at most 2 % of requests answered 429.
        figure(
          `${run.feeds} feed(s) shared: requests per page served`,
          '×',
          run.measurement.requests.total / Math.max(1, run.measurement.requests.served),
          1,
          run.feeds === 4 ? 1.0204 : undefined,
        ),
        figure(
          `${run.feeds} feed(s) shared: fastest / slowest feed (≤ 1.43 is ≥ 0.7×)`,
          '×',
          1 / Math.max(run.slowestVsFastest, 1e-9),
          1,
          run.feeds === 4 ? 1.43 : undefined,
        ),
      ]),
    ],
    formulas: [
      "served per second = pages answered 200 / the runs' wall time (the partner's bucket starts full: R requests of burst); 429 share = 429s / all requests; slowest = min pages / max pages over the feeds",
      ...runs.map(row),
      `  ${uncapped.feeds} feed(s), no cap, fake clock ${uncapped.windowMs / 60_000} min: ${formatNumber(uncapped.shareOfR)} × R, 429s ${percent(uncapped.rateLimitedShare)} of ${uncapped.served + uncapped.rateLimited} requests, peak rate ${formatNumber(uncapped.peakRateOfR)} × R, slowest ${formatNumber(uncapped.slowestVsFastest)} × fastest, ${uncapped.giveUps} give-up(s)`,
    ],
    details: {
      runs: runs.map(({ measurement, ...figures }) => ({ ...figures, requests: measurement.requests })),
      uncapped,
    },
  };
}
