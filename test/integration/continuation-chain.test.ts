// Self-continuation against the emulator and the simulator: a backlog much larger than one run drains through a
// chain of runs that follow one another at once (each started by the one before, as Lambda's asynchronous
// invoke would), with nothing lost and nothing counted twice; and a run that dies in the middle of the chain
// (after publishing a page, before committing it) ends the chain, and the next scheduled run resumes from the
// committed cursor. The real poller with the real adapters; only the invoke is played by the test, in order.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { type ContinuationEvent, continuationOf } from '../../functions/core/ingest/continuation.js';
import type { PollResult } from '../../functions/poller/build-poller.js';
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
import { type RunningMoto, startMoto } from '../support/moto.js';
import { readLedger } from '../support/pipeline.js';

const FUNCTION_TIMEOUT_MS = 60_000;
let moto: RunningMoto;
let aws: AwsClients;
let resources: PipelineResources;
let sim: RunningSimulator;

beforeAll(async () => {
  moto = await startMoto();
  aws = useEmulator(moto);
  // ~200 versions: about 20 pages of 10, at most 3 pages a run: a chain of about seven runs.
  sim = await startSimulator({ token: TEST_TOKEN, feed: { seed: 11, orders: 75, vendors: 3 } });
});
afterAll(async () => {
  await sim?.close();
  await moto?.stop();
});
beforeEach(async () => {
  await moto.reset();
  resources = await createPipelineResources(aws);
});

interface Invocation {
  event: unknown;
  result?: PollResult;
  error?: unknown;
}

/**
 * Plays Lambda for one poller: invokes it with `event`, then with every event it asks to be started with,
 * one after another, until a run asks for none. `crashOnPublish` kills the process on that publish (counted
 * over the whole chain): the page is on the queue, its cursor not committed and the lease not released.
 */
async function runChain(
  event: unknown,
  options: { crashOnPublish?: number; clockSkewMs?: number } = {},
): Promise<Invocation[]> {
  const env = pipelineEnv(resources, sim.url, {
    PAGE_SIZE: '10',
    MAX_PAGES_PER_RUN: '3',
    DOWNSTREAM_QUEUE_URLS: '{}',
  });
  const realStore = new DynamoCursorStore(aws.dynamo, resources.cursorTable);
  const realPublisher = new SqsFanoutPublisher(aws.sqs, [resources.ordersQueueUrl]);
  let publishes = 0;
  let dead = false;
  const pending: unknown[] = [event];
  const { poll } = handlersFor(aws, env, {
    pollerTimeoutMs: FUNCTION_TIMEOUT_MS,
    poller: {
      publisher: {
        async publish(messages) {
          await realPublisher.publish(messages);
          publishes += 1;
          if (publishes === options.crashOnPublish) {
            dead = true;
            throw new Error('process killed');
          }
        },
      },
      // A killed process neither commits nor releases.
      cursorStore: {
        acquire: (...args) => realStore.acquire(...args),
        recordAuthFailure: (...args) => realStore.recordAuthFailure(...args),
        commit: (...args) => (dead ? Promise.reject(new Error('process killed')) : realStore.commit(...args)),
        release: (...args) => (dead ? Promise.resolve() : realStore.release(...args)),
      },
      continuation: { request: async (next: ContinuationEvent) => void pending.push(next) },
      now: () => Date.now() + (options.clockSkewMs ?? 0),
      shareBudget: false,
    },
  });
  const invocations: Invocation[] = [];
  while (pending.length > 0) {
    const next = pending.shift();
    const invocation: Invocation = { event: next };
    try {
      invocation.result = await poll(next);
    } catch (error) {
      // Lambda's asynchronous invoke of the poller has no retries (schedule.ts): the chain ends here.
      invocation.error = error;
    }
    invocations.push(invocation);
    // The consumer drains meanwhile, as on AWS (an undrained queue also slows moto's sends).
    await drainQueue(aws, resources.ordersQueueUrl, consumer());
  }
  return invocations;
}

const consumer = () => handlersFor(aws, pipelineEnv(resources, sim.url, { DOWNSTREAM_QUEUE_URLS: '{}' }));

async function expectExactState(): Promise<void> {
  await drainQueue(aws, resources.ordersQueueUrl, consumer());
  const expected = sim.expected();
  const stored = await scanOrders(aws, resources.ordersTable);
  expect(
    new Map([...stored.values()].map((order) => [Number(order.id), [order.version, order.status]])),
  ).toEqual(new Map([...expected.orders.values()].map((order) => [order.id, [order.version, order.status]])));
  expect(await readLedger(aws, resources.ordersTable)).toEqual(expected.sales);
}

const chainOf = (invocations: Invocation[]) =>
  invocations.map((invocation) => continuationOf(invocation.event)?.continuation.chain ?? 0);

describe('a backlog drained by a chain of continuations', () => {
  it('runs one run after another from one scheduled tick until caught up, losing and doubling nothing', {
    timeout: 180_000,
  }, async () => {
    const invocations = await runChain({ source: 'aws.events' });

    expect(invocations.length).toBeGreaterThanOrEqual(5);
    // The scheduled run (0), then continuations 1, 2, 3, … in order, each started by the run before.
    expect(chainOf(invocations)).toEqual(invocations.map((_, index) => index));
    expect(invocations.slice(0, -1).every((run) => run.result?.kind === 'page-limit')).toBe(true);
    expect(invocations.at(-1)?.result).toMatchObject({ kind: 'caught-up' });
    expect(invocations.at(-1)?.result?.continuedWith).toBeUndefined();
    await expectExactState();
  });

  it('ends the chain when a run dies mid-page; the next scheduled run resumes from the committed cursor', {
    timeout: 180_000,
  }, async () => {
    // The third run's second page (publish 8) is published, then the process dies before committing it.
    const broken = await runChain({ source: 'aws.events' }, { crashOnPublish: 8 });

    expect(chainOf(broken)).toEqual([0, 1, 2]);
    expect(broken.at(-1)?.error).toEqual(new Error('process killed'));

    // The next tick comes after the dead run's lease has lapsed (timeout + grace) and starts a new chain.
    const resumed = await runChain({ source: 'aws.events' }, { clockSkewMs: 3 * FUNCTION_TIMEOUT_MS });

    expect(resumed[0]?.result?.kind).toBe('page-limit');
    expect(resumed.at(-1)?.result).toMatchObject({ kind: 'caught-up' });
    expect(resumed.every((run) => run.error === undefined)).toBe(true);
    await expectExactState();
  });
});
