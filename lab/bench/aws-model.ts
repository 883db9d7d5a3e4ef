// The AWS model of the deployment's ceiling (issue 19, item 9): pure arithmetic over stated latencies (AWS is
// not reachable from here) and the poller's page CPU, not a bench section. With self-continuation a feed fetches
// pages back to back until it is caught up, so a feed's rate is pageSize per t_page, and the whole deployment's
// rate is the lower of the feeds' sum and the consumer's ceiling (the orders queue absorbs the difference, and
// the growth alarm says so). The consumer's concurrency is the deployment's default (20, whatever the number of
// feeds: infra/config.ts) unless configured. lab/bench/RESULTS.md and infra/README.md show its table.
import { KEYS } from '../../infra/config.js';
import { LAMBDA_MEMORY_MB, PRICES } from './prices.js';
import type { Section } from './report.js';

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
  consumerBatchSize: number;
  /** Undefined: the deployment's default (KEYS.consumerMaxConcurrency). */
  consumerMaxConcurrency: number | undefined;
  /** Poller CPU per page (the bench's section 1 measures it: about 2.5 ms). */
  cpuPerPageMs: number;
}

/** The deployment's defaults (infra/constructs/poller.ts: 120 s timeout, 20 s safety margin). */
export const DEPLOYED_DEFAULTS: Defaults = {
  pageSize: 100,
  runBudgetMs: 100_000,
  consumerBatchSize: 10,
  consumerMaxConcurrency: undefined,
  cpuPerPageMs: 2.5,
};

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
  const consumerConcurrency = defaults.consumerMaxConcurrency ?? KEYS.consumerMaxConcurrency;
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

/** The feed counts the scaling table shows. */
export const SCALING_FEEDS = [1, 2, 4, 10] as const;
/** Target: N feeds reach at least this share of N × one feed's rate (up to 10 feeds). */
export const SCALING_TARGET = 0.8;
/** Write request units per applied version, base table and sales index together (the bench measured 2.09). */
export const WRU_PER_VERSION = 2;
/** Writes per second a new on-demand table serves at once; it then takes up to double its previous peak. */
export const NEW_ON_DEMAND_TABLE_WRITES_PER_SECOND = 4000;
/** DynamoDB's default per-table quota of write request units per second (on-demand). */
export const TABLE_WRU_PER_SECOND_QUOTA = 40_000;

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

/** The deployment's ceiling at 1, 2, 4 and 10 feeds, against N × one feed, with the next bounds and the cost. */
export function scalingTable(
  latency: AwsLatencies = STATED_LATENCIES,
  defaults: Defaults = DEPLOYED_DEFAULTS,
) {
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
      /** Pollers plus the consumer's maximum: what the account's Lambda concurrency quota must hold. */
      lambdaConcurrency: feeds + estimate.consumerConcurrency,
      costPerMillionVersions: perMillion,
      costPerDay: (versionsPerDay / 1e6) * perMillion,
    };
  });
}

/**
 * Section 9: the deployment's ceiling on AWS at the defaults, from the model above (not measured here: moto is
 * not AWS). Floor: N × one feed's rate (perfect scaling), as time per million versions; target ≤ 1/0.8.
 */
export function awsModelSection(): Section {
  const rows = scalingTable();
  const one = rows[0];
  const hoursPerMillion = (rate: number) => 1e6 / rate / 3600;
  return {
    id: 'awsModel',
    title:
      'AWS model at the defaults: 1, 2, 4, 10 feeds (stated latencies, not measured; consumer concurrency 50 whatever the number of feeds)',
    floorIs: "N × one feed's rate (perfect scaling), as time per million versions",
    figures: rows.map((row) => ({
      label: `${row.feeds} feed(s): time per million versions`,
      unit: 'h',
      value: hoursPerMillion(row.rate),
      floor: one ? hoursPerMillion(row.feeds * one.rate) : undefined,
      ratio: one ? (row.feeds * one.rate) / row.rate : undefined,
      target: row.feeds === 1 ? undefined : 1 / SCALING_TARGET,
    })),
    formulas: rows.map(
      (row) =>
        `${row.feeds} feed(s): ${Math.round(row.versionsPerDay / 1e6)} M versions/day (${row.share.toFixed(2)}× N × one feed, bound: ${row.bound}); ` +
        `${row.partnerGetsPerSecond.toFixed(1)} partner GETs/s, ${Math.round(row.writeUnitsPerSecond)} WRU/s on the orders table ` +
        `(a new on-demand table serves ${NEW_ON_DEMAND_TABLE_WRITES_PER_SECOND}/s at once, quota ${TABLE_WRU_PER_SECOND_QUOTA}/s), ` +
        `Lambda concurrency ${row.lambdaConcurrency}; $${row.costPerMillionVersions.toFixed(2)} per million versions`,
    ),
    details: { rows, latencies: STATED_LATENCIES, defaults: DEPLOYED_DEFAULTS },
  };
}
