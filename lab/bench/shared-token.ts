// Section 11: feeds sharing a limited partner. N feeds (disjoint vendors) read one token; the simulator
// limits the token to R requests/s (a token bucket holding one second's worth; 429 with Retry-After when
// empty). Each feed runs once for the same window (no continuation), all at the same time; then the same
// set-up with per-feed pacing only (no shared budget), in the same run. The shared budget is capped at R
// (partnerRequestsPerSecond, the partner publishing its limit); one more run of 4 feeds leaves the cap
// unset, so the budget finds the limit from 429s alone (AIMD).
// Figures: pages served per second (over the runs' wall time) as a share of R; 429s as a share of all requests; the slowest feed's
// pages against the fastest's.
import type { RunningMoto } from '../../tools/local/moto.js';
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

export function sharedTokenSection(
  runs: SharedTokenRun[],
  options: Omit<SharedTokenOptions, 'moto'>,
): Section {
  const percent = (value: number) => `${formatNumber(value * 100)} %`;
  const row = (run: SharedTokenRun) =>
    `  ${String(run.feeds).padStart(2)} feed(s), ${run.mode.padEnd(15)}: ${formatNumber(run.shareOfR)} × R, 429s ${percent(run.rateLimitedShare)} of ${run.measurement.requests.total} requests, slowest ${formatNumber(run.slowestVsFastest)} × fastest (pages ${run.measurement.feeds.map((feed) => feed.pages).join('/')})`;
  const shared = runs.filter((run) => run.mode === 'shared budget');
  return {
    id: 'sharedToken',
    title: `Feeds sharing a limited partner: 1 token limited to R = ${options.requestsPerSecond} requests/s (burst R), ${options.windowMs / 1000} s window, API ${options.latencyMs} ms/GET, pageSize ${options.pageSize} (moto)`,
    floorIs:
      'R (the partner serves no more); 429s and the slowest feed as shares (targets with 4 feeds: ≥ 0.9 × R, ≤ 2 %, ≥ 0.7 × fastest)',
    figures: shared.flatMap((run) => [
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
    formulas: [
      "served per second = pages answered 200 / the runs' wall time (the partner's bucket starts full: R requests of burst); 429 share = 429s / all requests; slowest = min pages / max pages over the feeds",
      ...runs.map(row),
    ],
    details: {
      runs: runs.map(({ measurement, ...figures }) => ({ ...figures, requests: measurement.requests })),
    },
  };
}
