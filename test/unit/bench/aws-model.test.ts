import { describe, expect, it } from 'vitest';
import {
  type AwsLatencies,
  awsModelSection,
  costPerMillionVersions,
  type Defaults,
  drainRate,
  idleCostPerMonth,
  STATED_LATENCIES,
  scalingTable,
} from '../../../tools/bench/aws-model.js';

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
  scheduleMinutes: 5,
  consumerBatchSize: 10,
  consumerMaxConcurrency: 5,
  pollerMemoryMb: 1024,
  cpuPerPageMs: 0,
  customMetrics: 3,
  alarms: 9,
  idleRunCursorWrites: 3,
  idleRunMs: 1000,
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

  it('prices an idle month from scheduled runs and CloudWatch', () => {
    const idle = idleCostPerMonth(defaults);
    expect(idle.runsPerMonth).toBe(8640);
    // 8640 runs x 1 s x 1 GB x $0.0000133334 + 8640 requests x $0.20/M
    expect(idle.lambda).toBeCloseTo(8640 * 0.000_013_333_4 + 8640 * 0.2e-6, 9);
    expect(idle.dynamo).toBeCloseTo(8640 * 3 * 0.625e-6, 9);
    expect(idle.total).toBeCloseTo(idle.lambda + idle.dynamo + 0.9 + 0.9 + 3, 9);
  });

  it('reports drain times for 1 and 10 feeds and 1M and 100M versions', () => {
    const section = awsModelSection(defaults, latency);
    const byLabel = new Map(section.figures.map((f) => [f.label, f.value]));
    expect(byLabel.get('drain 1,000,000 versions, 1 feed')).toBeCloseTo(1e6 / 500 / 3600, 9);
    expect(byLabel.get('drain 100,000,000 versions, 10 feeds')).toBeCloseTo(1e8 / 500 / 3600, 9);
    expect(byLabel.get('ingest ceiling per day, 1 feed')).toBeCloseTo((500 * 86_400) / 1e6, 9);
  });

  it('lets the consumer follow the number of feeds by default, so 10 feeds reach 10 x one feed', () => {
    const byDefault = { ...defaults, consumerMaxConcurrency: undefined };

    expect(drainRate(1, latency, byDefault).consumerConcurrency).toBe(5);
    expect(drainRate(10, latency, byDefault).consumerConcurrency).toBe(50);
    expect(drainRate(10, latency, byDefault).rate).toBe(5000);
    expect(drainRate(10, latency, byDefault).bound).toBe('partner API (one cursor chain per feed)');
  });

  it('keeps the deployment ceiling at least 0.8 x N x one feed for 1, 2, 4 and 10 feeds at the stated latencies', () => {
    const table = scalingTable(STATED_LATENCIES, {
      ...defaults,
      cpuPerPageMs: 2.5,
      consumerMaxConcurrency: undefined,
    });

    expect(table.map((row) => row.feeds)).toEqual([1, 2, 4, 10]);
    for (const row of table) expect(row.share, `${row.feeds} feeds`).toBeGreaterThanOrEqual(0.8);
    // An explicit setting still wins: the old fixed 5 leaves 10 feeds far below the target.
    const fixed = scalingTable(STATED_LATENCIES, {
      ...defaults,
      cpuPerPageMs: 2.5,
      consumerMaxConcurrency: 5,
    });
    expect(fixed.at(-1)?.share).toBeLessThan(0.2);
  });

  it('prices a version the same whatever the concurrency, and a flat-out day from it', () => {
    const perMillion = costPerMillionVersions(latency, defaults);
    const table = scalingTable(latency, { ...defaults, consumerMaxConcurrency: undefined });

    // DynamoDB's 2 WRU per version ($1.25 per million) is the bulk of it.
    expect(perMillion).toBeGreaterThan(1.25);
    expect(perMillion).toBeLessThan(1.6);
    expect(costPerMillionVersions(latency, { ...defaults, consumerMaxConcurrency: 50 })).toBe(perMillion);
    for (const row of table) expect(row.costPerDay).toBeCloseTo((row.rate * 86_400 * perMillion) / 1e6, 9);
  });

  it('reports the scaling figures against N x one feed with a target of 1.25 (0.8 x the rate)', () => {
    const section = awsModelSection({ ...defaults, consumerMaxConcurrency: undefined }, latency);
    const scaling = section.figures.filter((f) => f.label.includes('(floor: N x one feed)'));

    expect(scaling).toHaveLength(4);
    for (const f of scaling) {
      expect(f.target).toBe(1.25);
      expect(f.ratio).toBeCloseTo(1, 9);
    }
  });
});
