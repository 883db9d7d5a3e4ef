// Sections 7 and 8: catch-up measured end to end, and shards. The simulator serves a backlog with a fixed
// latency per GET; the real poller handler (no page cap, a short run budget) drains it against moto, each
// run starting the next at once through self-continuation as Lambda's asynchronous invoke would; several
// feeds over disjoint vendors run their chains side by side.
//
// Floor, measured in the same run: a feed's chain is sequential, and the poller fetches page n+1 while it
// publishes and commits page n, so a page cannot take less than max(API latency, the emulator's publish +
// commit time for that page). Floor time of a feed = Σ over its pages of max(L, publish + commit); for N
// feeds the floor is the slowest feed's. What the measured time adds on top: CPU, the continuation hand-over
// between runs (lease release, invoke, lease take, first GET not overlapped) and contention.
//
// The orders queue is purged in the background while the chains run: this measures the poller's ingest, and
// moto's SendMessage slows as a queue grows (every send scans it), which would measure moto instead. The
// consumer's own ceiling is the end-to-end section's measurement.
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { DEFAULTS } from '../../functions/core/config/settings.js';
import { leftBehind } from '../../functions/core/fleet/dispatch.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import type { FeedRunResult } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import { createPipelineResources, pipelineEnv, useEmulator } from '../../tools/harness/pipeline.js';
import { singleFeedPoller } from '../../tools/harness/single-feed.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import type { RunningMoto } from '../../tools/local/moto.js';
import { generatedVendorIds } from '../../tools/simulator/generated-feed.js';
import { startSimulator } from '../../tools/simulator/index.js';
import type { TokenRateLimitOptions } from '../../tools/simulator/token-rate-limit.js';
import { figure, formatNumber, type Section } from './report.js';

const TOKEN = 'bench-catch-up-token-8c41d2e7';
/** The generated feed averages about 3.1 versions per order. */
export const VERSIONS_PER_ORDER = 3.1;
/**
 * What the poller keeps free at the end of a run (SAFETY_MARGIN_SECONDS, its default as on AWS): the function
 * timeout is the run budget plus this. Half of it lets the page request in flight at the deadline finish.
 */
const SAFETY_MARGIN_SECONDS = DEFAULTS.safetyMarginSeconds;

export interface ChainOptions {
  moto: RunningMoto;
  /** Target versions in the backlog (the simulator's count is reported). */
  versions: number;
  latencyMs: number;
  /** Run budget: the function timeout minus the safety margin; short, so a drain spans several runs. */
  runBudgetMs: number;
  /** Feeds, each over a disjoint share of the vendors (1: one feed of every vendor). */
  feeds: number;
  vendors: number;
  pageSize: number;
  seed: number;
  /** The partner's per-token limit (simulator); absent: none. */
  tokenRateLimit?: TokenRateLimitOptions;
  /** False: each feed paces itself only, no shared request budget (default true, as deployed). */
  shareBudget?: boolean;
  /** partnerRequestsPerSecond of the pollers (the budget's cap); absent: unset. */
  partnerRequestsPerSecond?: number;
  /** False: one run per feed, no continuation (a fixed window of the run budget). Default true. */
  continue?: boolean;
}

export interface FeedChain {
  feedId: string;
  runs: number;
  pages: number;
  versions: number;
  /** First run's start to last run's end. */
  wallMs: number;
  /** Σ max(L, publish + commit) over the feed's pages. */
  floorMs: number;
  /** Mean publish + commit per page (the emulator's side of a page). */
  awsMsPerPage: number;
  outcomes: Record<string, number>;
}

export interface ChainMeasurement {
  feeds: FeedChain[];
  versions: number;
  latencyMs: number;
  pageSize: number;
  runBudgetMs: number;
  /** All chains: first start to last end. */
  wallMs: number;
  /** The slowest feed's floor. */
  floorMs: number;
  /** What the partner answered: every request, those served (200) and those refused (429). */
  requests: { total: number; served: number; rateLimited: number };
}

/** Drains a backlog through self-continuing poller runs, one chain per feed, and times it against its floor. */
export async function measureChains(options: ChainOptions): Promise<ChainMeasurement> {
  const sim = await startSimulator({
    token: TOKEN,
    latencyMs: options.latencyMs,
    ...(options.tokenRateLimit ? { tokenRateLimit: options.tokenRateLimit } : {}),
    feed: {
      seed: options.seed,
      orders: Math.max(1, Math.round(options.versions / VERSIONS_PER_ORDER)),
      vendors: options.vendors,
    },
  });
  await options.moto.reset();
  const aws = useEmulator(options.moto);
  try {
    const resources = await createPipelineResources(aws, { token: TOKEN });
    const vendors = generatedVendorIds(options.vendors);
    let draining = true;
    const purging = (async () => {
      while (draining) {
        await aws.sqs.send(new PurgeQueueCommand({ QueueUrl: resources.ordersQueueUrl }));
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    const started = performance.now();
    const chains = await Promise.all(
      Array.from({ length: options.feeds }, (_, index) =>
        runChain({
          aws,
          feedId: `feed-${index + 1}`,
          env: {
            ...pipelineEnv(resources, sim.url, {
              FEED_ID: `feed-${index + 1}`,
              PAGE_SIZE: String(options.pageSize),
              DOWNSTREAM_QUEUE_URLS: '{}',
              MAX_CONTINUATIONS: options.continue === false ? '0' : '100000',
              ...(options.partnerRequestsPerSecond === undefined
                ? {}
                : { PARTNER_REQUESTS_PER_SECOND: String(options.partnerRequestsPerSecond) }),
              ...(options.feeds > 1
                ? { VENDOR_IDS: vendors.filter((_, v) => v % options.feeds === index).join(',') }
                : {}),
            }),
          },
          timeoutMs: options.runBudgetMs + SAFETY_MARGIN_SECONDS * 1000,
          latencyMs: options.latencyMs,
          shareBudget: options.shareBudget !== false,
        }),
      ),
    );
    const wallMs = performance.now() - started;
    draining = false;
    await purging;
    return {
      feeds: chains,
      versions: chains.reduce((sum, chain) => sum + chain.versions, 0),
      latencyMs: options.latencyMs,
      pageSize: options.pageSize,
      runBudgetMs: options.runBudgetMs,
      wallMs,
      floorMs: Math.max(...chains.map((chain) => chain.floorMs)),
      requests: {
        total: sim.requests.length,
        served: sim.requests.filter((request) => request.status === 200).length,
        rateLimited: sim.requests.filter((request) => request.status === 429).length,
      },
    };
  } finally {
    aws.destroy();
    await sim.close();
  }
}

async function runChain(options: {
  aws: ReturnType<typeof useEmulator>;
  feedId: string;
  env: Record<string, string>;
  timeoutMs: number;
  latencyMs: number;
  shareBudget: boolean;
}): Promise<FeedChain> {
  const { env } = options;
  delete env.MAX_PAGES_PER_RUN; // the default: no page cap
  // Publish and commit of the page being handed off (the poller does them in that order, per page).
  let publishStarted = 0;
  const awsMsPerPage: number[] = [];
  const config = loadPollerConfig(env);
  const publisher = new SqsFanoutPublisher(options.aws.sqs, [
    config.ordersQueueUrl,
    ...Object.values(config.downstreamQueueUrls),
  ]);
  const cursorStore = new DynamoCursorStore(options.aws.dynamo, config.cursorTableName);
  // The fleet's poller on this one feed; a run that leaves the feed behind is followed at once, as the
  // dispatch it asks for would start the next (the dispatch itself is not measured here).
  const poller = singleFeedPoller(options.aws, env, {
    ...createObservability('order-feed-poller', env),
    shareBudget: options.shareBudget,
    publisher: {
      publish: async (messages) => {
        publishStarted = performance.now();
        await publisher.publish(messages);
      },
    },
    cursorStore: {
      read: (...args) => cursorStore.read(...args),
      record: (...args) => cursorStore.record(...args),
      acquire: (...args) => cursorStore.acquire(...args),
      recordAuthFailure: (...args) => cursorStore.recordAuthFailure(...args),
      release: (...args) => cursorStore.release(...args),
      commit: async (...args) => {
        const lease = await cursorStore.commit(...args);
        awsMsPerPage.push(performance.now() - publishStarted);
        return lease;
      },
    },
  });
  const outcomes: Record<string, number> = {};
  let runs = 0;
  let pages = 0;
  let versions = 0;
  const started = performance.now();
  for (let behind = true; behind; ) {
    const result: FeedRunResult = await poller.poll(lambdaContext('poller', options.timeoutMs));
    runs += 1;
    pages += result.pages;
    versions += result.versionsPublished;
    outcomes[result.kind] = (outcomes[result.kind] ?? 0) + 1;
    behind = leftBehind(result.kind);
  }
  const wallMs = performance.now() - started;
  const floorMs = awsMsPerPage.reduce((sum, ms) => sum + Math.max(options.latencyMs, ms), 0);
  return {
    feedId: options.feedId,
    runs,
    pages,
    versions,
    wallMs,
    floorMs,
    awsMsPerPage: awsMsPerPage.reduce((sum, ms) => sum + ms, 0) / Math.max(1, awsMsPerPage.length),
    outcomes,
  };
}

const per1000 = (ms: number, versions: number): number => (ms / versions) * 1000;

/** Section 7: one feed, a backlog over several continued runs, against its floor (target ≥ 0.9× the floor's rate). */
export function catchUpMeasuredSection(m: ChainMeasurement): Section {
  const feed = m.feeds[0] as FeedChain;
  const rate = (m.versions / m.wallMs) * 1000;
  const floorRate = (m.versions / m.floorMs) * 1000;
  return {
    id: 'catchUpMeasured',
    title: `Catch-up measured: ${m.versions.toLocaleString('en-US')} versions, pageSize ${m.pageSize}, API ${m.latencyMs} ms/GET, run budget ${m.runBudgetMs / 1000} s, self-continuation, no page cap (moto)`,
    floorIs:
      'Σ over pages of max(API latency, publish + commit measured for that page): the sequential chain with every GET overlapped',
    figures: [
      // Time per 1,000 versions: a ratio of at most 1.11 is a rate of at least 0.9× the floor's.
      figure(
        'time per 1,000 versions',
        'ms',
        per1000(m.wallMs, m.versions),
        per1000(m.floorMs, m.versions),
        1.11,
      ),
      figure('runs (continued one after another)', 'runs', feed.runs),
      figure('ingest rate', 'versions/s', rate),
    ],
    formulas: [
      `rate = ${m.versions} versions / ${formatNumber(m.wallMs / 1000)} s = ${formatNumber(rate)} /s; floor = ${formatNumber(floorRate)} /s (${formatNumber(rate / floorRate)}× the floor's rate; target ≥ 0.9×)`,
      `  ${feed.pages} pages in ${feed.runs} runs (${JSON.stringify(feed.outcomes)}); publish + commit ${formatNumber(feed.awsMsPerPage)} ms/page vs API ${m.latencyMs} ms`,
    ],
    details: { ...m },
  };
}

/**
 * Section 8: 1, 2 and 4 feeds over disjoint vendors, the partner the bottleneck. The floor of N feeds is
 * the one-feed time divided by N (perfect scaling); target at least 0.8 × N × the one-feed rate.
 */
export function shardsSection(runs: ChainMeasurement[]): Section {
  const one = runs.find((run) => run.feeds.length === 1) as ChainMeasurement;
  const oneMsPer1000 = per1000(one.wallMs, one.versions);
  return {
    id: 'shards',
    title: `Shards: the same backlog (${one.versions.toLocaleString('en-US')} versions) over 1, 2, 4 feeds of disjoint vendors, pageSize ${one.pageSize}, API ${one.latencyMs} ms/GET (moto, this machine)`,
    floorIs: 'the one-feed time per 1,000 versions divided by the number of feeds (perfect scaling)',
    figures: runs.map((run) =>
      figure(
        `${run.feeds.length} feed(s): time per 1,000 versions`,
        'ms',
        per1000(run.wallMs, run.versions),
        oneMsPer1000 / run.feeds.length,
        // At most 1.25× the perfect time is at least 0.8 × N × the one-feed rate.
        run.feeds.length > 1 ? 1.25 : undefined,
      ),
    ),
    formulas: [
      "Where it stops scaling: here, moto (one request at a time) adds each feed's publish + commit to every other's;",
      "  a feed stays partner-bound while feeds x publish-and-commit per page < API latency. On AWS: the partner's rate",
      '  limit, then the consumer (its concurrency x batch per batch time), then DynamoDB on-demand (40,000 WRU/s per table).',
      ...runs.map(
        (run) =>
          `  ${run.feeds.length} feed(s): ${formatNumber((run.versions / run.wallMs) * 1000)} versions/s = ${formatNumber(
            ((run.versions / run.wallMs) * 1000) / ((one.versions / one.wallMs) * 1000),
          )}× one feed; pages per feed ${run.feeds.map((feed) => feed.pages).join(' / ')}; publish + commit ${run.feeds.map((feed) => formatNumber(feed.awsMsPerPage)).join(' / ')} ms/page`,
      ),
    ],
    details: { runs },
  };
}
