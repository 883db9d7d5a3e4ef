// The pipeline against the simulator's production-like generated feed: some 300 versions with
// injected faults (429 in both Retry-After forms, 5xx bursts, resets, slow answers, repeated pages,
// expired cursors, duplicated and out-of-order versions), and a poller that crashes between publishing
// a page and committing its cursor. The table and ledger must equal the simulator's expected state.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSqsClient } from '../../functions/core/adapters/aws-clients.js';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import { S3Quarantine } from '../../functions/core/adapters/s3-quarantine.js';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { pollFeed } from '../../functions/core/ingest/poll-feed.js';
import type { CursorStore, OrderVersionPublisher } from '../../functions/core/ingest/ports.js';
import { createPartnerClient } from '../../functions/core/partner/client.js';
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
import { type RunningSimulator, type SimulatorOptions, startSimulator } from '../../tools/simulator/index.js';
import { CountingMetrics, MemoryLog } from '../support/fakes.js';
import { handlersFor } from '../support/handlers.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { readLedger } from '../support/pipeline.js';
import { pollerConfig } from '../support/poller-config.js';

let moto: RunningMoto;
let aws: AwsClients;
let resources: PipelineResources;
const simulators: RunningSimulator[] = [];

beforeAll(async () => {
  moto = await startMoto();
  aws = useEmulator(moto);
});
afterAll(async () => {
  await Promise.all(simulators.map((sim) => sim.close()));
  await moto?.stop();
});
beforeEach(async () => {
  await moto.reset();
  resources = await createPipelineResources(aws);
});

async function simulator(options: Omit<SimulatorOptions, 'token'>): Promise<RunningSimulator> {
  const sim = await startSimulator({ token: TEST_TOKEN, ...options });
  simulators.push(sim);
  return sim;
}

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
    const sim = await simulator({
      feed: {
        seed: 7,
        orders: 100,
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
    expect(expected.distinctVersions).toBeGreaterThan(250);
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

  it('loses nothing and counts nothing twice when the poller crashes between publishing and committing', {
    timeout: 120_000,
  }, async () => {
    const sim = await simulator({ feed: { seed: 3, orders: 30, vendors: 3 } });
    const handlers = handlersFor(aws, pipelineEnv(resources, sim.url, { DOWNSTREAM_QUEUE_URLS: '{}' }));
    const partner = createPartnerClient({ baseUrl: sim.url, token: async () => TEST_TOKEN });
    const realPublisher = new SqsFanoutPublisher(createSqsClient(), [resources.ordersQueueUrl]);
    const cursorStore = new DynamoCursorStore(aws.dynamo, resources.cursorTable);
    const portsWith = (cursors: CursorStore, publisher: OrderVersionPublisher, now: () => number) => ({
      cursorStore: cursors,
      partner,
      publisher,
      quarantine: new S3Quarantine(aws.s3, resources.quarantineBucket),
      metrics: new CountingMetrics(),
      log: new MemoryLog(),
      now,
    });
    const settings = pollerConfig({
      feedId: 'partner-feed',
      maxPagesPerRun: 100,
      authBackoff: { initialMs: 1, maxMs: 1 },
    });
    const crashAfterPublishing = 3;

    // Run 1 publishes page 3 and then "dies" before its commit: the process is gone, so it neither
    // commits nor releases its lease.
    let published = 0;
    const crashingPublisher: OrderVersionPublisher = {
      async publish(messages) {
        await realPublisher.publish(messages);
        published += 1;
        if (published === crashAfterPublishing) throw new Error('process killed');
      },
    };
    const deadProcess: CursorStore = Object.assign(Object.create(cursorStore), {
      release: async () => undefined,
    });
    const leaseMs = 30_000;
    const crashedAt = Date.now();
    await expect(
      pollFeed(portsWith(deadProcess, crashingPublisher, Date.now), settings, {
        owner: 'crashed-run',
        deadline: Date.now() + 60_000,
        leaseExpiresAt: Date.now() + leaseMs,
      }),
    ).rejects.toThrow('process killed');
    const cursorAfterCrash = (await cursorStore.acquire('partner-feed', 'probe', crashedAt, crashedAt + 1))
      ?.state;
    expect(cursorAfterCrash).toBeUndefined(); // the dead run's lease is still held

    // Run 2 comes after the lease has lapsed and resumes from the last committed cursor (page 3 again).
    const outcome = await pollFeed(
      portsWith(cursorStore, realPublisher, () => Date.now() + leaseMs + 1),
      settings,
      {
        owner: 'next-run',
        deadline: Date.now() + leaseMs + 60_000,
        leaseExpiresAt: Date.now() + 2 * leaseMs + 60_000,
      },
    );
    await drainQueue(aws, resources.ordersQueueUrl, handlers);

    const expected = sim.expected();
    const actual = await actualState();
    expect(outcome.kind).toBe('caught-up');
    expect(actual.orders).toEqual(expected.orders);
    expect(actual.sales).toEqual(expected.sales);
  });
});
