// The dispatch decision over hours of a fleet, on a fake clock (lab/bench/fleet-simulation.ts: the real
// planDispatch, a model of the poller and the partner). What it must show for issue 32: no feed starves at
// equal backlogs, a failing feed never delays the others, the concurrency budget is never exceeded, and idle
// feeds are each polled once per interval.
import { describe, expect, it } from 'vitest';
import { DISPATCH_DEFAULTS, type DispatchSettings } from '../../../functions/core/fleet/dispatch.js';
import {
  fetchedBy,
  type SimulatedFeed,
  type SimulationOptions,
  simulateFleet,
} from '../../../lab/bench/fleet-simulation.js';

const MINUTE = 60_000;
const SETTINGS: DispatchSettings = DISPATCH_DEFAULTS;
const BASE: Omit<SimulationOptions, 'feeds' | 'durationMs'> = {
  settings: SETTINGS,
  partner: {
    latencyMs: 200,
    tokenRatePerSecond: 1000,
    pageSize: 100,
    outageAttemptMs: 30_000,
    outageAttempts: 5,
    authBackoffMs: 5 * MINUTE,
  },
  // The page CPU measured here (8.5 ms) on a 512 MB function's share of a core (0.29).
  cpuMs: 29,
  emptyPageCpuMs: 5,
  writeMs: 10,
  invokeMs: 100,
  dispatchMs: 300,
};

const feeds = (count: number, fields: Partial<SimulatedFeed> = {}, prefix = 'f'): SimulatedFeed[] =>
  Array.from({ length: count }, (_, i) => ({
    feedId: `${prefix}${String(i).padStart(4, '0')}`,
    token: `token-${i % 5}`,
    scheduleMinutes: 1,
    backlog: 0,
    ...fields,
  }));

/** Already failing when the simulation starts: its last run ended on the failure. */
const failing = (feedId: string, failure: 'auth' | 'outage'): SimulatedFeed => ({
  feedId,
  token: 'token-0',
  scheduleMinutes: 1,
  backlog: 0,
  failure,
  caughtUpAt: -MINUTE,
});

describe('a fleet catching up at equal backlogs', () => {
  it('serves every feed alike: at the first drain the slowest has fetched at least 0.7 × the fastest', () => {
    const fleet = feeds(200, { backlog: 20_000 });
    const result = simulateFleet({ ...BASE, feeds: fleet, durationMs: 3 * 3_600_000, untilDrained: true });
    const records = fleet.map(({ feedId }) => result.feeds.get(feedId));
    const firstDrain = Math.min(...records.map((record) => record?.drainedAt ?? Number.POSITIVE_INFINITY));
    const fetched = records.map((record) => (record ? fetchedBy(record, firstDrain) : 0));

    expect(records.every((record) => record?.drainedAt !== undefined)).toBe(true);
    expect(Math.min(...fetched) / Math.max(...fetched)).toBeGreaterThanOrEqual(0.7);
    expect(result.peakPollers).toBeLessThanOrEqual(SETTINGS.maxConcurrentPollers);
  });

  it('is not delayed by feeds that fail (partner outages, a refused token) beyond the round robin’s slice', () => {
    const fleet = feeds(100, { backlog: 20_000 });
    const run = (extra: SimulatedFeed[]) =>
      simulateFleet({ ...BASE, feeds: [...fleet, ...extra], durationMs: 3 * 3_600_000, untilDrained: true });
    const alone = run([]);
    const outages = Array.from({ length: 20 }, (_, i) => failing(`outage-${i}`, 'outage'));
    const withFailures = run([...outages, failing('refused', 'auth')]);
    // The slice at this load: a 30 s round over 100 feeds behind, 10 pollers of 4 feeds.
    const sliceMs = (SETTINGS.roundMs * SETTINGS.maxConcurrentPollers * SETTINGS.behindBatchSize) / 100;
    const drainedAt = (result: typeof alone, feedId: string) =>
      result.feeds.get(feedId)?.drainedAt ?? Number.NaN;
    const last = (result: typeof alone) => Math.max(...fleet.map(({ feedId }) => drainedAt(result, feedId)));

    // Batches shaped differently move a feed's turn by at most one slice, either way; the fleet is not slower.
    for (const { feedId } of fleet) {
      expect(drainedAt(withFailures, feedId) - drainedAt(alone, feedId)).toBeLessThanOrEqual(sliceMs);
    }
    expect(last(withFailures) - last(alone)).toBeLessThanOrEqual(sliceMs);
    // The outages were asked again at their interval, riding in batches that ran anyway.
    expect(withFailures.feeds.get('outage-0')?.polls.length).toBeGreaterThan(1);
    expect(withFailures.peakPollers).toBeLessThanOrEqual(SETTINGS.maxConcurrentPollers);
  });
});

describe('an idle fleet', () => {
  it('polls each feed once per its interval, within the budget, failing feeds beside it', () => {
    // Steady state: caught up, last dispatched at some moment of the last minute.
    const oneMinute = feeds(900).map((feed, i) => ({ ...feed, caughtUpAt: -((i * 997) % MINUTE) }));
    const fiveMinutes = feeds(100, { scheduleMinutes: 5 }, 'g').map((feed, i) => ({
      ...feed,
      caughtUpAt: -((i * 2_999) % (5 * MINUTE)),
    }));
    const result = simulateFleet({
      ...BASE,
      feeds: [...oneMinute, ...fiveMinutes, failing('outage', 'outage'), failing('refused', 'auth')],
      durationMs: 13 * MINUTE,
    });
    const pollsIn = (feedId: string, from: number, to: number) =>
      result.feeds.get(feedId)?.polls.filter((at) => at >= from && at < to).length;

    for (const { feedId } of oneMinute) expect(pollsIn(feedId, 2 * MINUTE, 12 * MINUTE)).toBe(10);
    for (const { feedId } of fiveMinutes) expect(pollsIn(feedId, 2 * MINUTE, 12 * MINUTE)).toBe(2);
    expect(result.peakPollers).toBeLessThanOrEqual(SETTINGS.maxConcurrentPollers);
    // The refused token waits out its backoff (5 minutes) between attempts.
    expect(pollsIn('refused', 0, 13 * MINUTE)).toBeLessThanOrEqual(3);
  });
});
