// What a correct ingester ends with after draining each scenario (all polls, default pageSize 10).
// Derived from the scenario data itself, so it cannot drift from what the simulator serves.
// - orders: the highest version of every order in the scenario (sorted by id);
// - sales: orders whose highest version is `accepted`, per (vendorId, currency);
// - polls: how many polls (runs that end on hasMore false) it takes to see everything;
// - versions: entries served in total (including lower and repeated versions).
// test-invalid-token never serves data; test-expired-page-id serves its only page (5 versions) and then
// 404s the cursor, so its expectation holds for any pageSize ≥ 5.

import { expectedStateOf } from '../generated-feed.js';
import type { ExpectedOrder, ExpectedSale, ScenarioId } from '../types.js';
import { SCENARIO_IDS } from '../types.js';
import { SCENARIOS } from './index.js';

export interface ScenarioExpectation {
  orders: ExpectedOrder[];
  sales: ExpectedSale[];
  polls: number;
  versions: number;
}

function expectationOf(id: ScenarioId): ScenarioExpectation {
  const { polls } = SCENARIOS[id];
  const state = expectedStateOf(polls.flat().map((entry) => entry.order));
  return {
    orders: [...state.orders.values()].sort((a, b) => a.id - b.id),
    sales: state.sales,
    polls: polls.length,
    versions: polls.reduce((sum, poll) => sum + poll.length, 0),
  };
}

export const SCENARIO_EXPECTATIONS: Readonly<Record<ScenarioId, ScenarioExpectation>> = Object.fromEntries(
  SCENARIO_IDS.map((id) => [id, expectationOf(id)]),
) as Record<ScenarioId, ScenarioExpectation>;
