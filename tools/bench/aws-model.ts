// Section 8: the AWS model of draining a backlog with self-continuation, and what an idle deployment costs.
// Pure arithmetic over stated latencies (AWS is not reachable from here) and the poller CPU measured in
// section 1. With self-continuation a feed fetches pages back to back until it is caught up, so a feed's
// rate is pageSize per t_page, and the whole deployment's rate is the lower of the feeds' sum and the
// consumer's ceiling (the orders queue absorbs the difference, and the growth alarm says so). The consumer's
// concurrency follows the number of feeds unless configured (infra/config.ts, consumerMaxConcurrencyFor).
import { consumerMaxConcurrencyFor } from '../../infra/config.js';
import { LAMBDA_MEMORY_MB, PRICES } from './prices.js';
import { figure, formatNumber, type Section } from './report.js';

/** Latencies the model states (typical in-region figures; the partner's from the issue: 150–200 ms per GET). */
export interface AwsLatencies {
  /** One partner GET of a full page. */
  partnerGetMs: number;
  /** Publishing one page: 10 SendMessageBatch per queue, sent in parallel: about two SQS round trips. */
  publishPageMs: number;
  /** The cursor commit (one conditional UpdateItem). */
  commitMs: number;
  /** Gap between two runs of a continuation chain: the async invoke, a warm start, lease acquire. */
  continuationGapMs: number;
  /** One consumer batch: event source receive/delete overhead plus the batch's PutItems in parallel. */
  consumerBatchMs: number;
}

export const STATED_LATENCIES: AwsLatencies = {
  partnerGetMs: 200,
  publishPageMs: 40,
  commitMs: 10,
  continuationGapMs: 150,
  consumerBatchMs: 80,
};

export interface Defaults {
  pageSize: number;
  /** The poller's timeout minus its safety margin: one run's fetching budget. */
  runBudgetMs: number;
  scheduleMinutes: number;
  consumerBatchSize: number;
  /** Undefined: the deployment's default, which follows the number of feeds. */
  consumerMaxConcurrency: number | undefined;
  pollerMemoryMb: number;
  /** Poller CPU per page (section 1, measured). */
  cpuPerPageMs: number;
  /** Custom metrics the functions publish (each metric name and dimension set is billed monthly). */
  customMetrics: number;
  alarms: number;
  /** Writes to the cursor item per idle run (lease acquire, commit of the caught-up page, release). */
  idleRunCursorWrites: number;
  /** How long an idle run (one GET answering "nothing new") takes. */
  idleRunMs: number;
}

/** CloudWatch list prices (us-east-1, checked with the other prices): custom metric, standard alarm, dashboard. */
export const CLOUDWATCH_PRICES = { perMetricMonth: 0.3, perAlarmMonth: 0.1, perDashboardMonth: 3 } as const;

export interface DrainEstimate {
  feeds: number;
  /** Versions per second one feed fetches and publishes. */
  feedRate: number;
  /** The consumer's maximum concurrency: configured, or the default for this many feeds. */
  consumerConcurrency: number;
  /** The consumer's ceiling at that concurrency and the batch size. */
  consumerRate: number;
  /** The deployment's rate: min(feeds × feedRate, consumerRate). */
  rate: number;
  bound: 'partner API (one cursor chain per feed)' | 'consumer concurrency';
}

export function pageMs(latency: AwsLatencies, defaults: Defaults): number {
  // The next GET overlaps publishing and committing the current page (the poller prefetches).
  return defaults.cpuPerPageMs + Math.max(latency.partnerGetMs, latency.publishPageMs + latency.commitMs);
}

export function drainRate(feeds: number, latency: AwsLatencies, defaults: Defaults): DrainEstimate {
  const perPage = pageMs(latency, defaults);
  const efficiency = defaults.runBudgetMs / (defaults.runBudgetMs + latency.continuationGapMs);
  const feedRate = (defaults.pageSize / perPage) * 1000 * efficiency;
  const consumerConcurrency = defaults.consumerMaxConcurrency ?? consumerMaxConcurrencyFor(feeds);
  const consumerRate = (consumerConcurrency * defaults.consumerBatchSize * 1000) / latency.consumerBatchMs;
  const fetched = feeds * feedRate;
  return {
    feeds,
    feedRate,
    consumerConcurrency,
    consumerRate,
    rate: Math.min(fetched, consumerRate),
    bound: fetched <= consumerRate ? 'partner API (one cursor chain per feed)' : 'consumer concurrency',
  };
}

export interface IdleCost {
  runsPerMonth: number;
  lambda: number;
  dynamo: number;
  metrics: number;
  alarms: number;
  dashboard: number;
  total: number;
}

export function idleCostPerMonth(defaults: Defaults): IdleCost {
  const runsPerMonth = (30 * 24 * 60) / defaults.scheduleMinutes;
  const gbSeconds = (runsPerMonth * defaults.idleRunMs * defaults.pollerMemoryMb) / 1024 / 1000;
  const lambda = gbSeconds * PRICES.lambdaArmPerGbSecond + runsPerMonth * PRICES.lambdaPerRequest;
  const dynamo = runsPerMonth * defaults.idleRunCursorWrites * PRICES.dynamoPerWriteRequestUnit;
  const metrics = defaults.customMetrics * CLOUDWATCH_PRICES.perMetricMonth;
  const alarms = defaults.alarms * CLOUDWATCH_PRICES.perAlarmMonth;
  const dashboard = CLOUDWATCH_PRICES.perDashboardMonth;
  return {
    runsPerMonth,
    lambda,
    dynamo,
    metrics,
    alarms,
    dashboard,
    total: lambda + dynamo + metrics + alarms + dashboard,
  };
}

const hours = (versions: number, rate: number): number => versions / rate / 3600;

/** The feed counts the scaling table shows. */
export const SCALING_FEEDS = [1, 2, 4, 10] as const;
/** Target: N feeds reach at least this share of N × one feed's rate (up to 10 feeds). */
export const SCALING_TARGET = 0.8;
/** Write request units per applied version, base table and sales index together (section 3 measured 2.09). */
export const WRU_PER_VERSION = 2;
/** Writes per second a new on-demand table serves at once; it then takes up to double its previous peak. */
export const NEW_ON_DEMAND_TABLE_WRITES_PER_SECOND = 4000;

/**
 * What one order version costs on AWS at the stated latencies, whatever the concurrency (running batches side
 * by side changes when the work is done, not how much of it there is): the poller's share of a page, the
 * consumer's share of a batch, one SendMessage (in a batch of 10) plus its receive and delete, and the writes.
 */
export function costPerMillionVersions(latency: AwsLatencies, defaults: Defaults): number {
  const gbSeconds = (ms: number, mb: number) => (ms / 1000) * (mb / 1024);
  const poller =
    (gbSeconds(pageMs(latency, defaults), LAMBDA_MEMORY_MB.poller) * PRICES.lambdaArmPerGbSecond) /
    defaults.pageSize;
  const consumer =
    (gbSeconds(latency.consumerBatchMs, LAMBDA_MEMORY_MB.consumer) * PRICES.lambdaArmPerGbSecond +
      PRICES.lambdaPerRequest) /
    defaults.consumerBatchSize;
  const sqs = (3 * PRICES.sqsPerRequest) / 10;
  const dynamo = WRU_PER_VERSION * PRICES.dynamoPerWriteRequestUnit;
  return (poller + consumer + sqs + dynamo) * 1e6;
}

/** The deployment's ceiling at 1, 2, 4 and 10 feeds, against N × one feed. */
export function scalingTable(latency: AwsLatencies, defaults: Defaults) {
  const one = drainRate(1, latency, defaults);
  const perMillion = costPerMillionVersions(latency, defaults);
  return SCALING_FEEDS.map((feeds) => {
    const estimate = drainRate(feeds, latency, defaults);
    const versionsPerDay = estimate.rate * 86_400;
    return {
      ...estimate,
      /** rate / (feeds × one feed's rate): 1 is perfect scaling. */
      share: estimate.rate / (feeds * one.rate),
      versionsPerDay,
      /** Partner GETs per second, all feeds together (the partner's rate limit applies per account). */
      partnerGetsPerSecond: estimate.rate / defaults.pageSize,
      /** One PutItem per version on the base table (the sales index takes its own writes beside). */
      tableWritesPerSecond: estimate.rate,
      writeUnitsPerSecond: estimate.rate * WRU_PER_VERSION,
      costPerDay: (versionsPerDay / 1e6) * perMillion,
    };
  });
}

export function awsModelSection(defaults: Defaults, latency: AwsLatencies = STATED_LATENCIES): Section {
  const one = drainRate(1, latency, defaults);
  const ten = drainRate(10, latency, defaults);
  const idle = idleCostPerMonth(defaults);
  const perPage = pageMs(latency, defaults);
  const scaling = scalingTable(latency, defaults);
  const perMillion = costPerMillionVersions(latency, defaults);
  const concurrency = defaults.consumerMaxConcurrency ?? '5 per feed';
  return {
    id: 'awsModel',
    title: `AWS model with self-continuation (defaults: pageSize ${defaults.pageSize}, run budget ${defaults.runBudgetMs / 1000} s, consumer ${concurrency} × batch ${defaults.consumerBatchSize}; stated latencies: partner GET ${latency.partnerGetMs} ms, publish ${latency.publishPageMs} ms, commit ${latency.commitMs} ms, consumer batch ${latency.consumerBatchMs} ms)`,
    floorIs: 'no floor: a model, not a measurement',
    figures: [
      figure('one feed: versions per second', 'versions/s', one.feedRate),
      figure('consumer ceiling, 1 feed', 'versions/s', one.consumerRate),
      figure('drain 1,000,000 versions, 1 feed', 'h', hours(1e6, one.rate)),
      figure('drain 1,000,000 versions, 10 feeds', 'h', hours(1e6, ten.rate)),
      figure('drain 100,000,000 versions, 1 feed', 'h', hours(1e8, one.rate)),
      figure('drain 100,000,000 versions, 10 feeds', 'h', hours(1e8, ten.rate)),
      figure('ingest ceiling per day, 1 feed', 'M versions', (one.rate * 86_400) / 1e6),
      figure('ingest ceiling per day, 10 feeds', 'M versions', (ten.rate * 86_400) / 1e6),
      // Ratio ≤ 1 / SCALING_TARGET ⇔ the ceiling is at least SCALING_TARGET × N × one feed.
      ...scaling.flatMap((row) => [
        figure(`${row.feeds} feed(s): ingest ceiling per day`, 'M versions', row.versionsPerDay / 1e6),
        figure(
          `${row.feeds} feed(s): hours per 100,000,000 versions (floor: N x one feed)`,
          'h',
          hours(1e8, row.rate),
          hours(1e8, row.feeds * one.rate),
          1 / SCALING_TARGET,
        ),
      ]),
      figure('cost per 1,000,000 versions (Lambda, SQS, DynamoDB)', '$', perMillion),
      figure('idle cost per month, 1 feed (all in)', '$', idle.total),
      figure('  of which Lambda + DynamoDB', '$', idle.lambda + idle.dynamo),
    ],
    formulas: [
      `Per feed: t_page = t_cpu + max(L, t_publish + t_commit) = ${formatNumber(defaults.cpuPerPageMs)} + max(${latency.partnerGetMs}, ${latency.publishPageMs} + ${latency.commitMs}) = ${formatNumber(perPage)} ms;`,
      `  rate = pageSize / t_page x budget / (budget + gap) = ${formatNumber(one.feedRate)} versions/s (one cursor chain is sequential).`,
      `Consumer ceiling = concurrency x batch / t_batch = ${one.consumerConcurrency} x ${defaults.consumerBatchSize} / ${latency.consumerBatchMs} ms = ${formatNumber(one.consumerRate)} versions/s.`,
      `Deployment = min(feeds x per-feed rate, consumer ceiling): 1 feed is bound by the ${one.bound}, 10 feeds by the ${ten.bound}.`,
      `  Consumer concurrency by default 5 per feed (2..1000): ${scaling.map((row) => `${row.feeds} feed(s) ${row.consumerConcurrency} -> ${formatNumber(row.rate)} versions/s = ${row.share.toFixed(2)} x N x one feed, bound: ${row.bound}`).join('; ')}.`,
      `Next bounds: the partner's rate limit (not stated by the API; ${formatNumber(scaling.at(-1)?.partnerGetsPerSecond ?? 0)} GET/s at 10 feeds, each feed backs off on 429 by itself);`,
      `  DynamoDB on-demand: ${formatNumber(scaling.at(-1)?.tableWritesPerSecond ?? 0)} writes/s on the orders table at 10 feeds (${formatNumber(scaling.at(-1)?.writeUnitsPerSecond ?? 0)} WRU/s with the sales index), under the 40,000 WRU/s per-table quota but above the ${NEW_ON_DEMAND_TABLE_WRITES_PER_SECOND.toLocaleString('en-US')} writes/s a new on-demand table serves at once (it takes up to double its previous peak within 30 minutes: throttled writes are retried, then redelivered by SQS);`,
      `  Lambda: N pollers + 5 N consumer invocations share the account's concurrency quota (1,000 by default; a new account's 10 caps the consumer first).`,
      `Cost: ${formatNumber(perMillion)} $ per million versions (${WRU_PER_VERSION} WRU, 3 SQS requests per 10 versions, the poller's page and the consumer's batch in GB-s; concurrency does not change it): ${scaling.map((row) => `${row.feeds} feed(s) flat out ${formatNumber(row.costPerDay)} $/day`).join(', ')}.`,
      `Idle: ${formatNumber(idle.runsPerMonth)} scheduled runs/month x (1 GET, ${defaults.idleRunMs} ms of ${defaults.pollerMemoryMb} MB, ${defaults.idleRunCursorWrites} cursor writes) = $${formatNumber(idle.lambda + idle.dynamo)};`,
      `  CloudWatch: ${defaults.customMetrics} custom metrics x $${CLOUDWATCH_PRICES.perMetricMonth} + ${defaults.alarms} alarms x $${CLOUDWATCH_PRICES.perAlarmMonth} + 1 dashboard x $${CLOUDWATCH_PRICES.perDashboardMonth} = $${formatNumber(idle.metrics + idle.alarms + idle.dashboard)} (the bulk of the idle cost).`,
    ],
    details: {
      latency,
      defaults,
      oneFeed: one,
      tenFeeds: ten,
      scaling,
      costPerMillionVersions: perMillion,
      idle,
      cloudWatchPrices: CLOUDWATCH_PRICES,
    },
  };
}
