// The conformance checks pass a faithful run of each scenario and name what is wrong in a broken one.

import { describe, expect, it } from 'vitest';
import type { Int64 } from '../../../functions/core/model/int64.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import type { Order } from '../../../functions/core/model/types.js';
import { SCENARIO_CHECKS, type ScenarioRun } from '../../../tools/local/scenario-checks.js';
import { toWire } from '../../../tools/simulator/model.js';
import { SCENARIOS } from '../../../tools/simulator/scenarios/index.js';
import { SCENARIO_IDS, type ScenarioId } from '../../../tools/simulator/types.js';
import { salesTotals } from '../../../tools/store/sales-ledger.js';

/** What a correct pipeline leaves behind for a scenario: the highest version of each order, parsed. */
function faithfulRun(id: ScenarioId): ScenarioRun {
  const entries = SCENARIOS[id].polls.flat();
  const latest = new Map<Int64, Order>();
  for (const entry of entries) {
    const parsed = parseOrder(toWire(entry.order, entry.latestVersion, { kind: 'epoch' }, Date.now()));
    if (!parsed.ok) throw new Error(parsed.reason);
    const stored = latest.get(parsed.order.id);
    if (!stored || stored.version < parsed.order.version) latest.set(parsed.order.id, parsed.order);
  }
  const orders = [...latest.values()];
  const invalidToken = id === 'test-invalid-token';
  return {
    exitCode: invalidToken ? 3 : 0,
    outcome: invalidToken ? 'auth-failed' : 'drained',
    counters: {
      polls: SCENARIOS[id].polls.length + 1,
      pages: Math.max(1, Math.ceil(entries.length / 10)),
      versionsPublished: entries.length,
      applied: latest.size,
      stale: entries.length - latest.size,
      rejected: 0,
      failedMessages: 0,
      partnerRetries: id === 'test-transient-error' ? 1 : 0,
      rateLimitWaits: id === 'test-rate-limit' ? 1 : 0,
      cursorRecoveries: id === 'test-expired-page-id' ? 1 : 0,
    },
    sales: salesTotals(orders),
    deadLettered: 0,
    quarantined: [],
    orders: invalidToken ? [] : orders,
  };
}

describe('scenario conformance checks', () => {
  for (const id of SCENARIO_IDS) {
    it(`${id}: a faithful run passes`, () => {
      expect(SCENARIO_CHECKS[id]?.check(faithfulRun(id))).toEqual([]);
    });
  }

  it('test-order-lifecycle: fails when the cancelled sale was not reversed', () => {
    const run = faithfulRun('test-order-lifecycle');
    const cancelled = run.orders.find((order) => order.status === 'cancelled');
    if (!cancelled) throw new Error('fixture has no cancelled order');
    run.sales.push({
      vendorId: cancelled.vendorId,
      currency: cancelled.total.currency,
      count: 1,
      amount: cancelled.total.amount,
    });
    expect(SCENARIO_CHECKS['test-order-lifecycle']?.check(run).join('; ')).toMatch(/ledger/);
  });

  it('test-versioning: fails when an older version was kept', () => {
    const run = faithfulRun('test-versioning');
    run.orders = run.orders.map((order) => ({ ...order, version: 3 }));
    expect(SCENARIO_CHECKS['test-versioning']?.check(run)).toContain('kept version 3, expected 4');
  });

  it('fails any data scenario that lost a version', () => {
    const run = faithfulRun('test-pagination');
    if (run.counters) run.counters.applied -= 1;
    expect(SCENARIO_CHECKS['test-pagination']?.check(run).join('; ')).toMatch(/!= applied/);
  });

  it('test-rate-limit: fails when no 429 was seen', () => {
    const run = faithfulRun('test-rate-limit');
    if (run.counters) run.counters.rateLimitWaits = 0;
    expect(SCENARIO_CHECKS['test-rate-limit']?.check(run)).toEqual([
      'no rate-limit wait was observed (expected a 429)',
    ]);
  });

  it('test-invalid-token: fails when the run did not stop on the 401', () => {
    const run = { ...faithfulRun('test-invalid-token'), exitCode: 0, outcome: 'drained' };
    expect(SCENARIO_CHECKS['test-invalid-token']?.check(run).join('; ')).toMatch(/expected auth failure/);
  });

  it('fails when a record was quarantined or dead-lettered', () => {
    const run = { ...faithfulRun('test-delivery'), quarantined: ['quarantine/x'], deadLettered: 1 };
    expect(SCENARIO_CHECKS['test-delivery']?.check(run)).toEqual(
      expect.arrayContaining(['1 record(s) quarantined', '1 message(s) dead-lettered']),
    );
  });
});
