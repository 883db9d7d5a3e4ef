// The pipeline against the simulator's production-like generated feed: some 180 versions with
// injected faults (429 in both Retry-After forms, 5xx bursts, resets, slow answers, repeated pages,
// expired cursors, duplicated and out-of-order versions). The table and ledger must equal the simulator's
// expected state. A poller that dies between publishing a page and committing its cursor is shown by parts:
// the cursor stays (poll-feed.test.ts), a lapsed lease passes on (cursor-store.test.ts), a version delivered
// twice counts once (consumer.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { handlersFor } from '../support/handlers.js';
import { type RunningMoto, workerMoto } from '../support/moto.js';
import { readLedger } from '../support/pipeline.js';

let moto: RunningMoto;
let aws: AwsClients;
let resources: PipelineResources;
let sim: RunningSimulator;

beforeAll(async () => {
  moto = await workerMoto();
  aws = useEmulator(moto);
  resources = await createPipelineResources(aws);
});
afterAll(async () => {
  await sim?.close();
  await moto?.stop();
});

/** The table and ledger, in the simulator's expected-state shape. */
async function actualState() {
  const items = await scanOrders(aws, resources.ordersTable);
  const orders = new Map(
    [...items.values()].map((item) => [
      Number(item.id),
      { id: item.id, version: item.version, status: item.status, vendorId: item.vendorId, total: item.total },
    ]),
  );
  return { orders, sales: await readLedger(aws, resources.ordersTable) };
}

describe('generated feed', () => {
  it('ends with exactly the expected table and ledger despite every injected fault', {
    timeout: 300_000,
  }, async () => {
    sim = await startSimulator({
      token: TEST_TOKEN,
      feed: {
        seed: 7,
        orders: 60,
        vendors: 6,
        currencies: ['EUR', 'GBP'],
        duplicateVersions: 0.03,
        outOfOrderVersions: 0.03,
      },
      faults: {
        seed: 5,
        rateLimit: 0.1,
        retryAfterSeconds: 1,
        serverError: 0.1,
        serverErrorBurst: 2,
        connectionReset: 0.1,
        slow: 0.05,
        slowMs: 50,
        repeatPage: 0.1,
        expireCursor: 0.1,
      },
    });
    // No downstream queue here: an undrained queue slows moto's sends (LOCAL-AWS.md). Two pages a run
    // keep the orders queue shallow, as a concurrently running consumer does on AWS. Expired cursors
    // recover from the high-water mark minus 30 minutes (the bounded replay).
    const handlers = handlersFor(
      aws,
      pipelineEnv(resources, sim.url, {
        PAGE_SIZE: '20',
        MAX_PAGES_PER_RUN: '2',
        DOWNSTREAM_QUEUE_URLS: '{}',
        CURSOR_RECOVERY_LOOKBACK_MINUTES: '30',
      }),
    );
    const expected = sim.expected();

    let caughtUpRuns = 0;
    for (let run = 0; run < 200 && caughtUpRuns < 2; run++) {
      try {
        const outcome = await handlers.poll();
        caughtUpRuns = outcome.kind === 'caught-up' && outcome.versionsPublished === 0 ? caughtUpRuns + 1 : 0;
      } catch {
        // A failed run (e.g. retries exhausted) is retried by the next scheduled run, as on AWS.
      }
      await drainQueue(aws, resources.ordersQueueUrl, handlers);
    }

    const faults = sim.faultCounts();
    expect(expected.distinctVersions).toBeGreaterThan(150);
    for (const kind of ['rate-limit', 'server-error', 'connection-reset', 'repeat-page', 'expire-cursor']) {
      expect(
        faults[kind] ?? 0,
        `fault ${kind} was injected (${JSON.stringify(faults)}, ${sim.requests.length} requests)`,
      ).toBeGreaterThan(0);
    }
    const actual = await actualState();
    expect(actual.orders).toEqual(expected.orders);
    expect(actual.sales).toEqual(expected.sales);
  });
});
