// Every spec scenario (section 4) through the real poller and consumer handlers, against the partner
// simulator over HTTP and emulated AWS (moto): the final orders table and sales ledger per scenario.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import type { PollOutcome } from '../../functions/core/ingest/poll-feed.js';
import {
  type AwsClients,
  createPipelineResources,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  scanOrders,
  TEST_TOKEN,
  useEmulator,
} from '../../tools/harness/pipeline.js';
import {
  type RunningSimulator,
  SCENARIO_EXPECTATIONS,
  SCENARIO_IDS,
  type ScenarioId,
  startSimulator,
} from '../../tools/simulator/index.js';
import { contractViolations } from '../support/contract.js';
import { type Handlers, handlersFor } from '../support/handlers.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { readLedger, receiveAll, scanHistory } from '../support/pipeline.js';

let moto: RunningMoto;
let aws: AwsClients;
let sim: RunningSimulator;
let resources: PipelineResources;

beforeAll(async () => {
  moto = await startMoto();
  aws = useEmulator(moto);
  sim = await startSimulator({ token: TEST_TOKEN, scenarioRetryAfterSeconds: 1 });
});
afterAll(async () => {
  await sim?.close();
  await moto?.stop();
});
beforeEach(async () => {
  await moto.reset();
  resources = await createPipelineResources(aws);
});

interface PollResult {
  outcome?: PollOutcome;
  error?: Error;
}

/** One scheduled run: invoke the poller, then let the consumer drain the queue. */
async function poll(handlers: Handlers): Promise<PollResult> {
  let result: PollResult;
  try {
    result = { outcome: await handlers.poll() };
  } catch (error) {
    result = { error: error as Error };
  }
  await drainQueue(aws, resources.ordersQueueUrl, handlers);
  return result;
}

async function state() {
  const orders = await scanOrders(aws, resources.ordersTable);
  return {
    orders: [...orders.values()]
      .map((item) => ({
        id: item.id,
        version: item.version,
        status: item.status,
        vendorId: item.vendorId,
        total: item.total,
      }))
      .sort((a, b) => Number(a.id) - Number(b.id)),
    sales: await readLedger(aws, resources.ordersTable),
  };
}

/**
 * The history against what the partner served (every message the poller published, read from the downstream
 * queue, which gets each one too): one entry per distinct (orderId, version), with the content of the first
 * fetch of it (its fetchedAt), whatever was served again by a replay.
 */
async function historyAgainstServed(downstream: string[]) {
  const firstFetch = new Map<string, string>();
  for (const body of downstream) {
    const { order, source } = parseOrderVersionMessage(body);
    const key = `${order.id}/${order.version}`;
    const seen = firstFetch.get(key);
    if (seen === undefined || source.fetchedAt < seen) firstFetch.set(key, source.fetchedAt);
  }
  const entries = await scanHistory(aws, resources.historyTable);
  return {
    kept: entries.map((entry) => `${entry.orderId}/${entry.version}`).sort(),
    served: [...firstFetch.keys()].sort(),
    firstFetchKept: entries.every(
      (entry) => entry.fetchedAt === firstFetch.get(`${entry.orderId}/${entry.version}`),
    ),
  };
}

function amountOf(order: { total: unknown } | undefined): number {
  return Number((order?.total as { amount?: number } | undefined)?.amount);
}

function requestsFor(scenario: ScenarioId) {
  return sim.requests.filter((request) => request.url.startsWith(`/${scenario}/`));
}

async function runScenario(scenario: ScenarioId, runs: number) {
  const handlers = handlersFor(aws, pipelineEnv(resources, `${sim.url}/${scenario}`));
  const results: PollResult[] = [];
  for (let run = 0; run < runs; run++) results.push(await poll(handlers));
  return { handlers, results };
}

describe('every spec scenario through the pipeline ends with the expected table and ledger', () => {
  const dataScenarios = SCENARIO_IDS.filter((id) => id !== 'test-invalid-token');
  for (const scenario of dataScenarios) {
    it(scenario, async () => {
      const expected = SCENARIO_EXPECTATIONS[scenario];

      // One more run than the scenario has polls: it must find nothing new (pagination rule 3).
      const { results } = await runScenario(scenario, expected.polls + 1);

      expect(results.map((result) => result.error)).toEqual(results.map(() => undefined));
      expect(await state()).toEqual({ orders: expected.orders, sales: expected.sales });
      const downstream = await receiveAll(aws, resources.downstreamQueueUrl);
      expect(downstream.length).toBeGreaterThanOrEqual(expected.orders.length);
      // Every message the pipeline published is valid against the published JSON Schema.
      expect(contractViolations(downstream)).toEqual([]);
      // Exactly one history entry per version served (duplicates, reordering, replays: none twice).
      const history = await historyAgainstServed(downstream);
      expect(history.kept).toEqual(history.served);
      expect(history.firstFetchKept).toBe(true);
    });
  }
});

describe('scenario behaviour the spec spells out', () => {
  it('test-order-lifecycle: counts the sale when accepted, reverses it when cancelled, never counts rejected or placed', async () => {
    const handlers = handlersFor(aws, pipelineEnv(resources, `${sim.url}/test-order-lifecycle`));
    const lifecycleOrder = SCENARIO_EXPECTATIONS['test-order-lifecycle'].orders.find(
      (order) => order.status === 'cancelled',
    );
    if (!lifecycleOrder) throw new Error('scenario has no cancelled order');

    await poll(handlers);
    const afterPlaced = await state();
    await poll(handlers);
    const afterAccepted = await state();
    await poll(handlers);
    const afterCancelled = await state();

    expect(afterPlaced.orders).toEqual([
      expect.objectContaining({ id: lifecycleOrder.id, status: 'placed' }),
    ]);
    expect(afterPlaced.sales).toEqual([]);
    expect(afterAccepted.orders).toEqual([
      expect.objectContaining({ id: lifecycleOrder.id, status: 'accepted' }),
    ]);
    expect(afterAccepted.sales).toEqual([
      expect.objectContaining({
        vendorId: lifecycleOrder.vendorId,
        count: 1,
        amount: lifecycleOrder.total.amount,
      }),
    ]);
    const statuses = afterCancelled.orders.map((order) => order.status).sort();
    expect(statuses).toEqual(['accepted', 'cancelled', 'placed', 'rejected']);
    const accepted = afterCancelled.orders.find((order) => order.status === 'accepted');
    expect(afterCancelled.sales).toEqual([
      expect.objectContaining({
        vendorId: accepted?.vendorId,
        count: 1,
        amount: amountOf(accepted),
      }),
    ]);
  });

  it('test-versioning: keeps v4 and its money', async () => {
    await runScenario('test-versioning', 3);
    const { orders, sales } = await state();
    const id = Number(orders[0]?.id);
    const served = await fetch(`${sim.url}/test-versioning/v1/orders/${id}`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    }).then((response) => response.json() as Promise<{ version: number; total: { amount: number } }>);

    expect(orders).toHaveLength(1);
    expect(served.version).toBe(4);
    expect(orders[0]).toMatchObject({
      version: 4,
      status: 'accepted',
      total: { amount: served.total.amount },
    });
    expect(sales).toEqual([expect.objectContaining({ count: 1, amount: served.total.amount })]);
  });

  it('test-out-of-order-versions: keeps v2 although v1 arrives after it', async () => {
    await runScenario('test-out-of-order-versions', 1);
    const { orders, sales } = await state();
    expect(orders).toEqual([expect.objectContaining({ version: 2, status: 'accepted' })]);
    expect(sales).toHaveLength(1);
  });

  it('test-rate-limit: waits at least Retry-After, then repeats the same request and succeeds', async () => {
    const started = Date.now();
    const { results } = await runScenario('test-rate-limit', 1);
    const elapsed = Date.now() - started;

    const requests = requestsFor('test-rate-limit');
    const limited = requests.findIndex((request) => request.status === 429);
    expect(limited).toBeGreaterThan(0);
    expect(requests[limited + 1]).toMatchObject({ url: requests[limited]?.url, status: 200 });
    expect(elapsed).toBeGreaterThanOrEqual(1000);
    expect(results[0]?.outcome?.kind).toBe('caught-up');
  });

  it('test-transient-error: retries the same request after a 5xx and loses nothing', async () => {
    await runScenario('test-transient-error', 1);
    const requests = requestsFor('test-transient-error');
    const failed = requests.findIndex((request) => request.status >= 500);
    expect(failed).toBeGreaterThan(0);
    expect(requests[failed + 1]).toMatchObject({ url: requests[failed]?.url, status: 200 });
    expect((await state()).orders).toEqual(SCENARIO_EXPECTATIONS['test-transient-error'].orders);
  });

  it('test-expired-page-id: recovers from the start of the stream on every run without looping', async () => {
    const handlers = handlersFor(aws, pipelineEnv(resources, `${sim.url}/test-expired-page-id`));
    const requestsPerRun: number[] = [];
    const outcomes: Array<PollOutcome | undefined> = [];
    const firstRequest = requestsFor('test-expired-page-id').length;
    for (let run = 0; run < 3; run++) {
      const before = requestsFor('test-expired-page-id').length;
      outcomes.push((await poll(handlers)).outcome);
      requestsPerRun.push(requestsFor('test-expired-page-id').length - before);
    }

    // Run 1 reads the only page; later runs get 404 on its (already expired) cursor, restart without
    // pageId as pagination rule 5 says, and stop: two requests a run, never a loop.
    expect(outcomes.map((outcome) => outcome?.cursorRecoveries)).toEqual([0, 1, 1]);
    expect(requestsPerRun).toEqual([1, 2, 2]);
    const statuses = requestsFor('test-expired-page-id')
      .slice(firstRequest)
      .map((request) => request.status);
    expect(statuses).toEqual([200, 404, 200, 404, 200]);
    expect((await state()).orders).toEqual(SCENARIO_EXPECTATIONS['test-expired-page-id'].orders);
    // Each run after the first replays the page from the start of the stream: still one entry per version,
    // keeping the first run's fetch.
    const downstream = await receiveAll(aws, resources.downstreamQueueUrl);
    const history = await historyAgainstServed(downstream);
    expect(downstream.length).toBeGreaterThan(history.served.length);
    expect(history.kept).toEqual(history.served);
    expect(history.firstFetchKept).toBe(true);
  });

  it('test-invalid-token: stops after one request, fails the run, and does not call again during the backoff', async () => {
    const { results } = await runScenario('test-invalid-token', 3);

    expect(results[0]?.error?.message).toMatch(/auth-failed/);
    expect(results[1]?.outcome?.kind).toBe('auth-backoff');
    expect(results[2]?.outcome?.kind).toBe('auth-backoff');
    expect(requestsFor('test-invalid-token')).toHaveLength(1);
    expect((await state()).orders).toEqual([]);
  });

  it('test-authentication: sends the token only in the Authorization header and never logs it', async () => {
    const written: string[] = [];
    const capture = (stream: NodeJS.WriteStream) => {
      const original = stream.write.bind(stream);
      stream.write = ((chunk: unknown, ...rest: unknown[]) => {
        written.push(String(chunk));
        return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof stream.write;
      return () => {
        stream.write = original;
      };
    };
    const restoreOut = capture(process.stdout);
    const restoreErr = capture(process.stderr);
    try {
      const handlers = handlersFor(
        aws,
        pipelineEnv(resources, `${sim.url}/test-authentication`, { POWERTOOLS_LOG_LEVEL: 'DEBUG' }),
      );
      await poll(handlers);
    } finally {
      restoreOut();
      restoreErr();
    }

    const requests = requestsFor('test-authentication');
    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) {
      expect(request.authorization).toBe(`Bearer ${TEST_TOKEN}`);
      expect(request.url).not.toContain(TEST_TOKEN);
    }
    expect(written.join('')).toContain('poll run finished');
    expect(written.join('')).not.toContain(TEST_TOKEN);
  });

  it('test-empty-stream: records the feed as caught up with no cursor and no orders', async () => {
    const { results } = await runScenario('test-empty-stream', 2);
    expect(results.map((result) => result.outcome?.kind)).toEqual(['caught-up', 'caught-up']);
    expect(await state()).toEqual({ orders: [], sales: [] });
  });

  it('two pollers at once: one holds the lease, the other skips, and the cursor never regresses', async () => {
    const handlers = handlersFor(
      aws,
      pipelineEnv(resources, `${sim.url}/test-pagination`, { MAX_PAGES_PER_RUN: '3' }),
    );

    const [a, b] = await Promise.all([handlers.poll(), handlers.poll()]);
    const kinds = [a.kind, b.kind].sort();
    await drainQueue(aws, resources.ordersQueueUrl, handlers);
    for (let run = 0; run < 40; run++) {
      const outcome = (await poll(handlers)).outcome;
      if (outcome?.kind === 'caught-up') break;
    }

    expect(kinds).toEqual(['lease-held', 'page-limit']);
    expect((await state()).orders).toEqual(SCENARIO_EXPECTATIONS['test-pagination'].orders);
  });
});
