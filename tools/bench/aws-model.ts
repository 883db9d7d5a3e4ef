// Section 8: the AWS model of draining a backlog with self-continuation, and what an idle deployment costs.
// Pure arithmetic over stated latencies (AWS is not reachable from here) and the poller CPU measured in
// section 1. With self-continuation a feed fetches pages back to back until it is caught up, so a feed's
// rate is pageSize per t_page, and the whole deployment's rate is the lower of the feeds' sum and the
// consumer's ceiling (the orders queue absorbs the difference, and the growth alarm says so).
import { PRICES } from './prices.js';
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
  consumerMaxConcurrency: number;
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
  /** The consumer's ceiling at the configured concurrency and batch size. */
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
  const consumerRate =
    (defaults.consumerMaxConcurrency * defaults.consumerBatchSize * 1000) / latency.consumerBatchMs;
  const fetched = feeds * feedRate;
  return {
    feeds,
    feedRate,
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

export function awsModelSection(defaults: Defaults, latency: AwsLatencies = STATED_LATENCIES): Section {
  const one = drainRate(1, latency, defaults);
  const ten = drainRate(10, latency, defaults);
  const idle = idleCostPerMonth(defaults);
  const perPage = pageMs(latency, defaults);
  return {
    id: 'awsModel',
    title: `AWS model with self-continuation (defaults: pageSize ${defaults.pageSize}, run budget ${defaults.runBudgetMs / 1000} s, consumer ${defaults.consumerMaxConcurrency} × batch ${defaults.consumerBatchSize}; stated latencies: partner GET ${latency.partnerGetMs} ms, publish ${latency.publishPageMs} ms, commit ${latency.commitMs} ms, consumer batch ${latency.consumerBatchMs} ms)`,
    floorIs: 'no floor: a model, not a measurement',
    figures: [
      figure('one feed: versions per second', 'versions/s', one.feedRate),
      figure('consumer ceiling', 'versions/s', one.consumerRate),
      figure('drain 1,000,000 versions, 1 feed', 'h', hours(1e6, one.rate)),
      figure('drain 1,000,000 versions, 10 feeds', 'h', hours(1e6, ten.rate)),
      figure('drain 100,000,000 versions, 1 feed', 'h', hours(1e8, one.rate)),
      figure('drain 100,000,000 versions, 10 feeds', 'h', hours(1e8, ten.rate)),
      figure('ingest ceiling per day, 1 feed', 'M versions', (one.rate * 86_400) / 1e6),
      figure('ingest ceiling per day, 10 feeds', 'M versions', (ten.rate * 86_400) / 1e6),
      figure('idle cost per month, 1 feed (all in)', '$', idle.total),
      figure('  of which Lambda + DynamoDB', '$', idle.lambda + idle.dynamo),
    ],
    formulas: [
      `Per feed: t_page = t_cpu + max(L, t_publish + t_commit) = ${formatNumber(defaults.cpuPerPageMs)} + max(${latency.partnerGetMs}, ${latency.publishPageMs} + ${latency.commitMs}) = ${formatNumber(perPage)} ms;`,
      `  rate = pageSize / t_page x budget / (budget + gap) = ${formatNumber(one.feedRate)} versions/s (one cursor chain is sequential).`,
      `Consumer ceiling = concurrency x batch / t_batch = ${defaults.consumerMaxConcurrency} x ${defaults.consumerBatchSize} / ${latency.consumerBatchMs} ms = ${formatNumber(one.consumerRate)} versions/s.`,
      `Deployment = min(feeds x per-feed rate, consumer ceiling): 1 feed is bound by the ${one.bound}, 10 feeds by the ${ten.bound}.`,
      `  Raise consumerMaxConcurrency to lift the consumer bound (10 feeds need about ${Math.ceil((10 * one.feedRate * latency.consumerBatchMs) / (defaults.consumerBatchSize * 1000))}); DynamoDB on-demand allows 40,000 WRU/s per table (~20,000 versions/s at 2 WRU each).`,
      `Idle: ${formatNumber(idle.runsPerMonth)} scheduled runs/month x (1 GET, ${defaults.idleRunMs} ms of ${defaults.pollerMemoryMb} MB, ${defaults.idleRunCursorWrites} cursor writes) = $${formatNumber(idle.lambda + idle.dynamo)};`,
      `  CloudWatch: ${defaults.customMetrics} custom metrics x $${CLOUDWATCH_PRICES.perMetricMonth} + ${defaults.alarms} alarms x $${CLOUDWATCH_PRICES.perAlarmMonth} + 1 dashboard x $${CLOUDWATCH_PRICES.perDashboardMonth} = $${formatNumber(idle.metrics + idle.alarms + idle.dashboard)} (the bulk of the idle cost).`,
    ],
    details: { latency, defaults, oneFeed: one, tenFeeds: ten, idle, cloudWatchPrices: CLOUDWATCH_PRICES },
  };
}
