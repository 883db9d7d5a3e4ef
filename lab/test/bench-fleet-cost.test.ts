// The idle cost model of a feed in three shapes (lab/bench/fleet-cost.ts): its arithmetic, not its prices.
import { describe, expect, it } from 'vitest';
import {
  dispatcherFixedPerMonth,
  FLEET_PRICES,
  idleCostLines,
  totals,
  tracedPerMonth,
} from '../bench/fleet-cost.js';
import { PRICES } from '../bench/prices.js';

const shape = { feeds: 1000, scheduleMinutes: 1, batchSize: 25, todayIdleFeedMetrics: 4 };

describe('the idle cost of a feed', () => {
  it("counts today's per-feed CloudWatch charges: the FeedId metrics and the lag alarm", () => {
    const lines = idleCostLines(shape);
    const metrics = lines.find((line) => line.item.startsWith('CloudWatch metrics'));
    expect(metrics?.today).toBeCloseTo(4 * FLEET_PRICES.metricPerMonth, 10);
    expect(metrics?.dispatcher).toBe(0);
    expect(lines.find((line) => line.item.startsWith('CloudWatch alarms'))?.today).toBeCloseTo(0.11, 10);
  });

  it('shares an invocation and the budget write among a batch: the dispatcher costs less per feed as B grows', () => {
    const at = (batchSize: number) => totals(idleCostLines({ ...shape, batchSize })).dispatcher;
    expect(at(1)).toBeGreaterThan(at(5));
    expect(at(5)).toBeGreaterThan(at(25));
    // One write a poll remains whatever B: the run's record.
    const monthPolls = 30 * 24 * 60;
    expect(at(1000)).toBeGreaterThan(monthPolls * PRICES.dynamoPerWriteRequestUnit);
  });

  it('keeps each dispatcher line at or above its floor, the floor being part of the lines', () => {
    for (const line of idleCostLines(shape)) {
      if (line.floor !== undefined) expect(line.dispatcher).toBeGreaterThanOrEqual(line.floor);
    }
    const { floor, dispatcher } = totals(idleCostLines(shape));
    expect(floor).toBeLessThanOrEqual(dispatcher);
  });

  it('bills Scheduler invocations only past its monthly free tier, shared by the fleet', () => {
    const scheduler = (feeds: number) =>
      idleCostLines({ ...shape, feeds }).find((line) => line.item === 'EventBridge')?.scheduler;
    expect(scheduler(300)).toBe(0);
    expect(scheduler(100_000)).toBeCloseTo(
      (43_200 - 14e6 / 100_000) * FLEET_PRICES.schedulerPerInvocation,
      10,
    );
  });

  it('samples the first request a second, then 5 %', () => {
    const month = 30 * 24 * 3600;
    expect(tracedPerMonth(0.5)).toBeCloseTo(0.5 * month, 6);
    expect(tracedPerMonth(21)).toBeCloseTo(2 * month, 6);
  });

  it("spreads the deployment's fixed cost over its feeds", () => {
    const fixed = dispatcherFixedPerMonth(1000);
    expect(fixed.total).toBeCloseTo(fixed.lambda + fixed.logs + fixed.xray + fixed.cloudwatch, 10);
    expect(dispatcherFixedPerMonth(10_000).lambda).toBeGreaterThan(fixed.lambda);
  });
});
