// Every spec scenario (section 4) through the real poller and consumer handlers, against the partner
// simulator over HTTP and emulated AWS (moto), each on resources of its own (the emulator reset and the
// pipeline's resources created afresh before it): each ends with exactly its expectation
// (SCENARIO_EXPECTATIONS) and passes the spec's check (SPEC_CHECKS, as npm run verify applies it). The partner
// client's own handling of each scenario (waits, retries, headers) is asserted in partner-client.test.ts; here,
// what the pipeline adds.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import type { FeedRunResult } from '../../functions/poller/build-poller.js';
import {
  drainQueue,
  pipelineEnv,
  quarantinedKeys,
  scanOrders,
  TEST_TOKEN,
} from '../../tools/harness/pipeline.js';
import {
  type RunningSimulator,
  SCENARIO_EXPECTATIONS,
  SCENARIO_IDS,
  type ScenarioId,
  startSimulator,
} from '../../tools/simulator/index.js';
import { type ScenarioRun, SPEC_CHECKS } from '../../tools/simulator/scenarios/expectations.js';
import { contractViolations } from '../support/contract.js';
import { handlersFor, pipelineOnMoto } from '../support/handlers.js';
import { readLedger, receiveAll, scanHistory } from '../support/pipeline.js';

const pipeline = pipelineOnMoto();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ token: TEST_TOKEN, scenarioRetryAfterSeconds: 1 });
});
afterAll(async () => {
  await sim?.close();
});

/** The orders table (`items`, whole, and `orders`, as the expectation has them) and the sales ledger. */
async function tablesNow() {
  const { aws, resources } = pipeline;
  const items = [...(await scanOrders(aws, resources.ordersTable)).values()].sort(
    (a, b) => Number(a.id) - Number(b.id),
  );
  const orders = items.map(({ id, version, status, vendorId, total }) => ({
    id,
    version,
    status,
    vendorId,
    total,
  }));
  return { items, orders, sales: await readLedger(aws, resources.ordersTable) };
}

/** What the handlers write to stdout and stderr while `work` runs (kept from the terminal). */
async function capturingOutput(work: () => Promise<void>): Promise<string> {
  const spies = [process.stdout, process.stderr].map((stream) =>
    vi.spyOn(stream, 'write').mockImplementation(() => true),
  );
  try {
    await work();
    return spies.flatMap((spy) => spy.mock.calls.map(([chunk]) => String(chunk))).join('');
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

/** The runs a scenario gets: one more than it has polls (rule 3: the last finds nothing new), or three. */
const RUNS: Partial<Record<ScenarioId, number>> = { 'test-expired-page-id': 3, 'test-invalid-token': 3 };

/**
 * Runs the scheduled poller `runs` times for the scenario, the consumer draining the queue after each (the
 * first run of test-pagination twice at once), and gathers what it left behind.
 */
async function runScenario(id: ScenarioId) {
  const { aws, resources } = pipeline;
  const runs = RUNS[id] ?? SCENARIO_EXPECTATIONS[id].polls + 1;
  const logLevel: Record<string, string> =
    id === 'test-authentication' ? { POWERTOOLS_LOG_LEVEL: 'DEBUG' } : {};
  const handlers = handlersFor(aws, pipelineEnv(resources, `${sim.url}/${id}`, { FEED_ID: id, ...logLevel }));
  const requestsBefore = sim.requests.length;
  const results: Array<{ outcome?: FeedRunResult; error?: Error }> = [];
  const states: Array<Awaited<ReturnType<typeof tablesNow>>> = [];
  const requestsPerRun: number[] = [];
  let consumed = 0;
  const output = await capturingOutput(async () => {
    for (let run = 0; run < runs; run++) {
      const requestsBeforeRun = sim.requests.length;
      const polls =
        id === 'test-pagination' && run === 0 ? [handlers.poll(), handlers.poll()] : [handlers.poll()];
      for (const settled of await Promise.allSettled(polls)) {
        results.push(settled.status === 'fulfilled' ? { outcome: settled.value } : { error: settled.reason });
      }
      consumed += (await drainQueue(aws, resources.ordersQueueUrl, handlers)).succeeded;
      requestsPerRun.push(sim.requests.length - requestsBeforeRun);
      if (id === 'test-order-lifecycle') states.push(await tablesNow());
    }
  });
  const outcomes = results.flatMap((result) => (result.outcome ? [result.outcome] : []));
  const sum = (
    key: 'pages' | 'versionsPublished' | 'partnerRetries' | 'rateLimitWaits' | 'cursorRecoveries',
  ) => outcomes.reduce((total, outcome) => total + outcome[key], 0);
  const { items, ...final } = await tablesNow();
  const authFailed = results.some((result) => /auth-failed/.test(result.error?.message ?? ''));
  // As local mode's summary puts it for npm run verify (applied + stale: what the consumer took without failing).
  const run: ScenarioRun = {
    exitCode: authFailed ? 3 : results.some((result) => result.error) ? 1 : 0,
    outcome: authFailed ? 'auth-failed' : 'drained',
    counters: {
      polls: runs,
      pages: sum('pages'),
      versionsPublished: sum('versionsPublished'),
      applied: consumed,
      stale: 0,
      partnerRetries: sum('partnerRetries'),
      rateLimitWaits: sum('rateLimitWaits'),
      cursorRecoveries: sum('cursorRecoveries'),
    },
    sales: final.sales,
    deadLettered: (await receiveAll(aws, resources.ordersDlqUrl)).length,
    quarantined: await quarantinedKeys(aws, resources.quarantineBucket, id),
    orders: items as unknown as ScenarioRun['orders'],
  };
  const downstream = await receiveAll(aws, resources.downstreamQueueUrl, { remove: true });
  const history = await scanHistory(aws, resources.historyTable);
  const requests = sim.requests.slice(requestsBefore);
  return { results, states, final, run, output, downstream, history, requests, requestsPerRun };
}

/** The history against what the partner served (every message published, as the downstream queue got it). */
function historyAgainstServed(downstream: string[], entries: Array<Record<string, unknown>>) {
  const firstFetch = new Map<string, string>();
  for (const body of downstream) {
    const { order, source } = parseOrderVersionMessage(body);
    const key = `${order.id}/${order.version}`;
    const seen = firstFetch.get(key);
    if (seen === undefined || source.fetchedAt < seen) firstFetch.set(key, source.fetchedAt);
  }
  return {
    kept: entries.map((entry) => `${entry.orderId}/${entry.version}`).sort(),
    served: [...firstFetch.keys()].sort(),
    firstFetchKept: entries.every(
      (entry) => entry.fetchedAt === firstFetch.get(`${entry.orderId}/${entry.version}`),
    ),
  };
}

type ScenarioResult = Awaited<ReturnType<typeof runScenario>>;

/** What the pipeline shows of a scenario beyond its final tables and the spec's check. */
const ALSO: Partial<Record<ScenarioId, (result: ScenarioResult) => void>> = {
  'test-authentication': ({ output }) => {
    // At DEBUG the handlers log every step, and never the token.
    expect(output).toContain('poll run finished');
  },
  'test-invalid-token': ({ results, requests }) => {
    // The run fails on the 401; the next runs, inside the backoff, call nobody.
    expect(results[0]?.error?.message).toMatch(/auth-failed/);
    expect(results.slice(1).map((result) => result.outcome?.kind)).toEqual(['auth-backoff', 'auth-backoff']);
    expect(requests).toHaveLength(1);
  },
  'test-pagination': ({ results }) => {
    // Two pollers at once: one holds the lease, the other skips; the tables show the cursor never regressed.
    expect([results[0]?.outcome?.kind, results[1]?.outcome?.kind].sort()).toEqual([
      'caught-up',
      'lease-held',
    ]);
  },
  'test-expired-page-id': ({ results, requests, requestsPerRun, downstream, history }) => {
    // Run 1 reads the only page; later runs get 404 on its (already expired) cursor, restart without pageId
    // (rule 5) and stop: two requests a run, never a loop. Each replay is kept once in the history.
    expect(results.map((result) => result.outcome?.cursorRecoveries)).toEqual([0, 1, 1]);
    expect(requestsPerRun).toEqual([1, 2, 2]);
    expect(requests.map((request) => request.status)).toEqual([200, 404, 200, 404, 200]);
    expect(downstream.length).toBeGreaterThan(history.length);
  },
  'test-order-lifecycle': ({ states }) => {
    // The sale is counted when the order is accepted and reversed when it is cancelled.
    const { orders } = SCENARIO_EXPECTATIONS['test-order-lifecycle'];
    const order = orders.find((candidate) => candidate.status === 'cancelled');
    const [afterPlaced, afterAccepted] = states;
    expect(afterPlaced?.orders).toEqual([expect.objectContaining({ id: order?.id, status: 'placed' })]);
    expect(afterPlaced?.sales).toEqual([]);
    expect(afterAccepted?.orders).toEqual([expect.objectContaining({ id: order?.id, status: 'accepted' })]);
    expect(afterAccepted?.sales).toEqual([
      expect.objectContaining({ vendorId: order?.vendorId, count: 1, amount: order?.total.amount }),
    ]);
  },
};

describe('every spec scenario through the pipeline', () => {
  it.each(SCENARIO_IDS)(
    '%s ends with its expected table and ledger and passes its spec check',
    async (id) => {
      const expected = SCENARIO_EXPECTATIONS[id];

      const result = await runScenario(id);

      expect(SPEC_CHECKS[id].check(result.run)).toEqual([]);
      expect(result.final).toEqual({ orders: expected.orders, sales: expected.sales });
      if (id !== 'test-invalid-token') expect(result.results.filter((run) => run.error)).toEqual([]);
      expect(result.output).not.toContain(TEST_TOKEN);
      // Every message published is valid against the published JSON Schema, and the history keeps one entry
      // per version served (duplicates, reordering, replays: none twice), with the content of its first fetch.
      expect(result.downstream.length).toBeGreaterThanOrEqual(expected.orders.length);
      expect(contractViolations(result.downstream)).toEqual([]);
      const history = historyAgainstServed(result.downstream, result.history);
      expect(history.kept).toEqual(history.served);
      expect(history.firstFetchKept).toBe(true);
      ALSO[id]?.(result);
    },
    180_000,
  );
});
