// A fleet through the whole pipeline on moto and the simulator: the dispatcher (its initial set of 20 feeds
// seeded into the cursor table, beside a paused and a removed feed it never dispatches) starts the poller per batch, the poller polls each batch's feeds at once and asks
// for the next dispatch while any is behind, the consumer drains the orders queue. Each feed has its own vendor;
// three tokens are shared by 19 feeds; one feed's token is refused (401). The schedule's ticks are a clock the
// test moves a minute at a time; the poller runs in this process, as the dispatcher's asynchronous invoke would
// start it. The orders table, the ledger and the history must equal the simulator's, every version once.

import { Logger } from '@aws-lambda-powertools/logger';
import { paginateScan } from '@aws-sdk/client-dynamodb';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import { initialFeedsText } from '../../functions/core/fleet/feed-config.js';
import type { FunctionMetrics } from '../../functions/core/observability/metric-names.js';
import { buildDispatcher } from '../../functions/dispatcher/build-dispatcher.js';
import { loadDispatcherConfig } from '../../functions/dispatcher/config.js';
import { buildPoller, type PollResult, PollRunFailedError } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import { drainQueue, pipelineEnv, scanOrders, TEST_TOKEN } from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { pipelineOnMoto } from '../support/handlers.js';
import { readLedger, scanHistory } from '../support/pipeline.js';

const pipeline = pipelineOnMoto();
let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const FEEDS = 20;
/** Token parameters and the feeds on each: 10, 5 and 4 feeds share a token; the last feed's is refused. */
const TOKENS = [
  { name: '', value: TEST_TOKEN, feeds: 10 },
  { name: '/fleet/token-b', value: 'token-b-5d9e2c', feeds: 5 },
  { name: '/fleet/token-c', value: 'token-c-81f0aa', feeds: 4 },
  { name: '/fleet/refused', value: 'refused-token-0b7e', feeds: 1 },
];
const silent = new Logger({ serviceName: 'test', logLevel: 'SILENT' });

describe('a fleet of 20 feeds: dispatch, pollers, consumer', () => {
  it('ends with the table, ledger and history exact, one budget per token, the refused feed in its backoff, paused and removed feeds never polled, and the gauges saying so', {
    timeout: 300_000,
  }, async () => {
    const { aws, resources } = pipeline;
    TOKENS[0] = { ...(TOKENS[0] as (typeof TOKENS)[number]), name: resources.tokenParameter };
    for (const token of TOKENS.slice(1)) {
      await aws.ssm.send(
        new PutParameterCommand({
          Name: token.name,
          Type: 'SecureString',
          Value: token.value,
          Overwrite: true,
        }),
      );
    }
    // Vendors 1 to 19 have orders; the refused feed's vendor-20 has none (its feed never reads anything).
    sim = await startSimulator({
      token: TEST_TOKEN,
      additionalTokens: TOKENS.slice(1, 3).map((token) => token.value),
      feed: { seed: 11, orders: 80, vendors: FEEDS - 1, currencies: ['EUR', 'GBP'] },
    });
    const feedTokens = TOKENS.flatMap((token) => Array.from({ length: token.feeds }, () => token.name));
    const feeds = feedTokens.map((tokenParameterName, index) => ({
      id: `feed-${index + 1}`,
      tokenParameterName,
      vendorIds: [`vendor-${index + 1}`],
    }));

    // The deployment: the poller's environment, the dispatcher's with the initial set (as the stack writes them).
    const env = pipelineEnv(resources, sim.url, {
      MAX_PAGES_PER_RUN: '1',
      DOWNSTREAM_QUEUE_URLS: '{}',
    });
    const dispatcherConfig = loadDispatcherConfig(
      { CURSOR_TABLE_NAME: resources.cursorTable, POLLER_FUNCTION_NAME: 'poller' },
      initialFeedsText({ pageSize: 10 }, feeds),
    );
    const registry = new DynamoFeedRegistry(aws.dynamo, resources.cursorTable);
    // Two feeds beside the initial set, as `ops feeds add` and `pause`/`remove` leave them: never polled.
    for (const state of ['paused', 'removed'] as const)
      await registry.register(
        `${state}-feed`,
        {
          tokenParameterName: resources.tokenParameter,
          vendorIds: [`vendor-${state}`],
          purpose: 'stream',
          pageSize: 10,
          scheduleMinutes: 1,
        },
        state,
        Date.now(),
      );
    const requests: number[] = [];
    const poller = buildPoller(aws, loadPollerConfig(env), {
      logger: silent,
      dispatchRequests: {
        request: async (requestedAt) => void requests.push(requestedAt),
        end: (batchId) => registry.endBatch(batchId),
      },
    });
    const started: Array<Promise<PollResult | PollRunFailedError>> = [];
    const gauges: Array<Record<string, number>> = [];
    let current: Record<string, number> = {};
    const metrics: FunctionMetrics = {
      count: (name, value = 1) => {
        current[name] = value;
      },
      publish: () => {
        gauges.push(current);
        current = {};
      },
    };
    // The schedule's clock: a minute further at each tick the test makes.
    const ahead = { ms: 0 };
    const dispatcher = buildDispatcher(
      { dynamo: aws.dynamo, ssm: aws.ssm, lambda: aws.lambda },
      dispatcherConfig,
      {
        // Lambda's asynchronous invoke: queued, run on its own.
        startPoller: async (event) => {
          started.push(
            poller(event, lambdaContext('poller', 60_000)).catch((error: unknown) => {
              if (error instanceof PollRunFailedError) return error;
              throw error;
            }),
          );
        },
        unreservedConcurrency: async () => undefined,
        logger: silent,
        metrics,
        now: () => Date.now() + ahead.ms,
      },
    );
    const consumer = buildConsumer(aws, loadConsumerConfig(env), { logger: silent });
    const expected = sim.expected();
    const actualOrders = async () =>
      new Map(
        [...(await scanOrders(aws, resources.ordersTable)).values()].map((item) => [
          Number(item.id),
          {
            id: item.id,
            version: item.version,
            status: item.status,
            vendorId: item.vendorId,
            total: item.total,
          },
        ]),
      );

    const runs: PollResult['feeds'] = [];
    let ticks = 0;
    for (let round = 0; round < 200; round += 1) {
      const requested = requests.splice(0).at(-1);
      const event =
        requested === undefined ? { source: 'aws.events' } : { dispatchRequest: { requestedAt: requested } };
      await dispatcher(event, lambdaContext('dispatcher', 60_000));
      for (const ended of await Promise.all(started.splice(0)))
        runs.push(...(ended instanceof PollRunFailedError ? ended.result.feeds : ended.feeds));
      await drainQueue(aws, resources.ordersQueueUrl, { consume: consumer });
      if (requests.length > 0) continue;
      // Nothing asked for: the next tick of the schedule, a minute on.
      ahead.ms += 60_000;
      ticks += 1;
      const caughtUp = runs.filter((run) => run.kind === 'caught-up' && run.versionsPublished === 0);
      if (ticks >= 2 && new Set(caughtUp.map((run) => run.feedId)).size === FEEDS - 1) break;
    }

    // Exact: the table, the ledger and one history entry per version served.
    expect(expected.distinctVersions).toBeGreaterThan(200);
    expect(await actualOrders()).toEqual(expected.orders);
    expect(await readLedger(aws, resources.ordersTable)).toEqual(expected.sales);
    const history = await scanHistory(aws, resources.historyTable);
    expect(history).toHaveLength(expected.distinctVersions);

    // Each feed read its own vendor with its own token; the refused one asked once and waits out its backoff.
    const byToken = (value: string) =>
      sim?.requests.filter((request) => request.authorization === `Bearer ${value}`);
    expect(byToken('refused-token-0b7e')?.map((request) => request.status)).toEqual([401]);
    for (const request of sim.requests.filter((entry) => entry.status === 200)) {
      const vendors = new URL(request.url, sim.url).searchParams.getAll('vendorIds');
      expect(vendors).toHaveLength(1);
      expect(vendors).not.toContain('vendor-paused');
      expect(vendors).not.toContain('vendor-removed');
    }
    const rows = new Map<string, Record<string, unknown>>();
    for await (const page of paginateScan({ client: aws.dynamo }, { TableName: resources.cursorTable }))
      for (const item of page.Items ?? []) rows.set(String(item.feedId?.S), unmarshall(item));
    expect(rows.get('feed-20')).toMatchObject({
      feedState: 'enabled',
      lastRunOutcome: 'auth-failed',
      authFailures: 1,
      stopReason: expect.stringContaining('401'),
    });
    for (const feed of feeds.slice(0, FEEDS - 1)) {
      expect(rows.get(feed.id)).toMatchObject({
        lastRunOutcome: 'caught-up',
        config: { vendorIds: feed.vendorIds },
      });
      expect(rows.get(feed.id)).not.toHaveProperty('leaseOwner');
    }
    // One request budget per token, shared by its feeds.
    expect([...rows.keys()].filter((key) => /^budget#[^#]+$/.test(key)).sort()).toEqual(
      TOKENS.map((token) => `budget#${token.name}`).sort(),
    );
    // Feeds behind went in batches of their own and asked for the next dispatch; the last gauges: one auth failing.
    expect(runs.some((run) => run.kind === 'page-limit')).toBe(true);
    expect(gauges.at(-1)).toMatchObject({
      AuthFailingFeeds: 1,
      StaleFeeds: 0,
      StoppedFeeds: 0,
      UnregisteredFeeds: 0,
    });
  });
});
