// What a correct ingester ends with after draining each scenario (all polls, default pageSize 10).
// Derived from the scenario data itself, so it cannot drift from what the simulator serves.
// - orders: the highest version of every order in the scenario (sorted by id);
// - sales: orders whose highest version is `accepted`, per (vendorId, currency);
// - polls: how many polls (runs that end on hasMore false) it takes to see everything;
// - versions: entries served in total (including lower and repeated versions).
// test-invalid-token never serves data; test-expired-page-id serves its only page (5 versions) and then
// 404s the cursor, so its expectation holds for any pageSize ≥ 5.
// The hostile scenarios (hostile.ts) add, where they have one: `quarantined`, the objects a correct ingester
// quarantines at ingestion (one per distinct record; those orders are not in `orders`; a flood's records beyond
// the RECORDS_VALIDATED_PER_PAGE a page validates are one more object, unread), and `stop`, the poll outcome
// it stops at (a documented stop). Their `stored` is the order versions the history keeps.

import { RECORDS_VALIDATED_PER_PAGE } from '../../../functions/core/ingest/hand-off.js';
import { expectedStateOf } from '../generated-feed.js';
import type { AnyScenarioId, ExpectedOrder, ExpectedSale } from '../types.js';
import { ALL_SCENARIO_IDS, SCENARIO_IDS } from '../types.js';
import { SCENARIOS } from './index.js';

export interface ScenarioExpectation {
  orders: ExpectedOrder[];
  sales: ExpectedSale[];
  polls: number;
  versions: number;
  quarantined?: number;
  stop?: string;
  stored?: number;
}

function expectationOf(id: AnyScenarioId): ScenarioExpectation {
  const { polls, quirk, refusedOrderIds = [], stop } = SCENARIOS[id];
  const served = polls.flat().map((entry) => entry.order);
  const kept = served.filter((order) => !refusedOrderIds.includes(order.id));
  const state = expectedStateOf(kept);
  const expectation: ScenarioExpectation = {
    orders: [...state.orders.values()].sort((a, b) => a.id - b.id),
    sales: state.sales,
    polls: polls.length,
    versions: served.length,
  };
  // The spec's scenarios keep their expectation as it always was.
  if ((SCENARIO_IDS as readonly string[]).includes(id)) return expectation;
  const flood = quirk?.kind === 'record-flood' ? quirk.records.length * quirk.copies : 0;
  const junk =
    quirk?.kind === 'record-flood' ? quirk.records.length + (flood > RECORDS_VALIDATED_PER_PAGE ? 1 : 0) : 0;
  return {
    ...expectation,
    quarantined: served.length - kept.length + junk,
    ...(stop === undefined ? {} : { stop }),
    stored: state.distinctVersions,
  };
}

export const SCENARIO_EXPECTATIONS: Readonly<Record<AnyScenarioId, ScenarioExpectation>> = Object.fromEntries(
  ALL_SCENARIO_IDS.map((id) => [id, expectationOf(id)]),
) as Record<AnyScenarioId, ScenarioExpectation>;
