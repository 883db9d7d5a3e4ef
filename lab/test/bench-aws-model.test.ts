import { describe, expect, it } from 'vitest';
import {
  type AwsLatencies,
  costPerMillionVersions,
  DEPLOYED_DEFAULTS,
  type Defaults,
  drainRate,
  NEW_ON_DEMAND_TABLE_WRITES_PER_SECOND,
  SCALING_TARGET,
  scalingTable,
  TABLE_WRU_PER_SECOND_QUOTA,
} from '../bench/aws-model.js';

const latency: AwsLatencies = {
  partnerGetMs: 200,
  publishPageMs: 40,
  commitMs: 10,
  continuationGapMs: 0,
  consumerBatchMs: 100,
};
const defaults: Defaults = {
  pageSize: 100,
  runBudgetMs: 100_000,
  consumerBatchSize: 10,
  consumerMaxConcurrency: 5,
  cpuPerPageMs: 0,
};

describe('the AWS drain model', () => {
  it('drains one feed at pageSize per partner GET when the partner is slower than publishing', () => {
    const estimate = drainRate(1, latency, defaults);
    expect(estimate.feedRate).toBe(500);
    expect(estimate.consumerRate).toBe(500);
    expect(estimate.rate).toBe(500);
    expect(estimate.bound).toBe('partner API (one cursor chain per feed)');
  });

  it('is bound by the consumer when feeds together fetch more than it applies', () => {
    const estimate = drainRate(10, latency, defaults);
    expect(estimate.rate).toBe(500);
    expect(estimate.bound).toBe('consumer concurrency');
    expect(drainRate(10, latency, { ...defaults, consumerMaxConcurrency: 50 }).rate).toBe(5000);
  });

  it('loses the gap between continuation runs in proportion to the run budget', () => {
    const withGap = drainRate(1, { ...latency, continuationGapMs: 1_000 }, defaults);
    expect(withGap.feedRate).toBeCloseTo(500 * (100 / 101), 6);
  });

  it('keeps the consumer at the deployment’s default whatever the number of feeds (issue 32)', () => {
    const byDefault = { ...defaults, consumerMaxConcurrency: undefined };

    expect(drainRate(1, latency, byDefault).consumerConcurrency).toBe(50);
    expect(drainRate(10, latency, byDefault).consumerConcurrency).toBe(50);
    expect(drainRate(10, latency, byDefault).rate).toBe(5000);
    expect(drainRate(11, latency, byDefault).rate).toBe(5000);
    expect(drainRate(11, latency, byDefault).bound).toBe('consumer concurrency');
  });

  it('keeps the deployed defaults at least 0.8 x N x one feed for 1, 2, 4 and 10 feeds draining at once (10: maxConcurrentPollers)', () => {
    const table = scalingTable();

    expect(table.map((row) => row.feeds)).toEqual([1, 2, 4, 10]);
    for (const row of table) expect(row.share, `${row.feeds} feeds`).toBeGreaterThanOrEqual(SCALING_TARGET);
    expect(table.map((row) => Math.round(row.rate))).toEqual([493, 986, 1972, 4931]);
    // The default no longer follows the number of feeds (a fleet of thousands): 50 keeps ahead of the ten feeds
    // maxConcurrentPollers lets drain at once, so the partner, not the consumer, is the bound.
    expect(table.map((row) => row.consumerConcurrency)).toEqual([50, 50, 50, 50]);
    expect(table.at(-1)?.bound).toBe('partner API (one cursor chain per feed)');
    // The previous default, 20, left ten feeds bound by the consumer (2,500 versions/s).
    const twenty = scalingTable(undefined, { ...DEPLOYED_DEFAULTS, consumerMaxConcurrency: 20 });
    expect(twenty.at(-1)?.bound).toBe('consumer concurrency');
    // An explicit setting still wins: the old fixed 5 leaves 10 feeds at 1.27 x one feed (54 M a day).
    const fixed = scalingTable(undefined, { ...DEPLOYED_DEFAULTS, consumerMaxConcurrency: 5 });
    expect(fixed.at(-1)?.share).toBeCloseTo(0.127, 3);
    expect((fixed.at(-1)?.versionsPerDay ?? 0) / 1e6).toBeCloseTo(54, 0);
  });

  it('names the next bounds: DynamoDB on-demand at 10 feeds, the partner rate, the Lambda concurrency', () => {
    const ten = scalingTable().at(-1);

    expect(ten?.tableWritesPerSecond).toBeGreaterThan(NEW_ON_DEMAND_TABLE_WRITES_PER_SECOND);
    expect(ten?.writeUnitsPerSecond).toBeLessThan(TABLE_WRU_PER_SECOND_QUOTA);
    expect(ten?.partnerGetsPerSecond).toBeCloseTo(49.3, 1);
    expect(ten?.lambdaConcurrency).toBe(60);
  });

  it('prices a version the same whatever the concurrency, and a flat-out day from it', () => {
    const perMillion = costPerMillionVersions(latency, defaults);
    const table = scalingTable(latency, { ...defaults, consumerMaxConcurrency: undefined });

    // DynamoDB's 2 WRU per version ($1.25 per million) is the bulk of it.
    expect(perMillion).toBeGreaterThan(1.25);
    expect(perMillion).toBeLessThan(1.6);
    expect(costPerMillionVersions(latency, { ...defaults, consumerMaxConcurrency: 50 })).toBe(perMillion);
    for (const row of table) expect(row.costPerDay).toBeCloseTo((row.rate * 86_400 * perMillion) / 1e6, 9);
    const raised = scalingTable(undefined, { ...DEPLOYED_DEFAULTS, consumerMaxConcurrency: 50 });
    expect(Math.round(raised.at(-1)?.costPerDay ?? 0)).toBe(621);
  });
});
