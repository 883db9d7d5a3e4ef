// Section 14: a fleet of feeds (issue 32). Three parts:
//   1. measured here, in-process on moto and the partner simulator over HTTP: the real dispatcher and poller
//      handlers (functions/dispatcher, functions/poller), N feeds registered as rows (5 tokens), both on one
//      clock (`clock`: the real one plus an offset that jumps a minute only when nothing runs, so the
//      leases, dispatch times and dispatch requests the two compare are on the same time line).
//      a. catch-up: every feed new with the same backlog (P pages: every feed reads every vendor of the
//         stream's first P × pageSize entries); dispatches run when a poller asks (as its async invoke would)
//         and at the schedule's tick; the time to drain, each feed's pace while served, the most pollers at once;
//      b. one idle tick of all N (each feed now on a vendor of its own), caught up: wall time, DynamoDB writes
//         and requests, and the bytes logged (INFO, metrics on, as deployed) per feed polled;
//      c. steady state on the real clock: the dispatcher ticks every real minute while new versions arrive
//         (the simulator shows the stream's next entries, spread evenly over M minutes, on random feeds):
//         freshness, each version's arrival → its message published by its feed's poller;
//      d. a feed added (its row, then the dispatch `ops feeds add` asks for) → its first order stored.
//   2. the AWS model (fleet-simulation.ts: the real planDispatch on a fake clock) at the defaults;
//   3. the idle cost of a feed (fleet-cost.ts), with the bytes and writes measured in 1b.
import { loadavg } from 'node:os';
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { DISPATCH_DEFAULTS, type DispatchSettings } from '../../functions/core/fleet/dispatch.js';
import { parseFeedConfig } from '../../functions/core/fleet/feed-config.js';
import { createObservability, NO_METRICS } from '../../functions/core/observability/powertools.js';
import { buildDispatcher } from '../../functions/dispatcher/build-dispatcher.js';
import { loadDispatcherConfig } from '../../functions/dispatcher/config.js';
import { buildPoller, PollRunFailedError } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import { DISPATCHER_TIMEOUT } from '../../infra/constructs/dispatcher.js';
import {
  createPipelineResources,
  drainQueue,
  pipelineEnv,
  scanOrders,
  useEmulator,
} from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import type { RunningMoto } from '../../tools/local/moto.js';
import { startSimulator } from '../../tools/simulator/index.js';
import {
  dispatcherFixedPerMonth,
  FIXED_ALARMS,
  FIXED_METRICS,
  IDLE_RUN,
  type IdleRun,
  idleCostLines,
  totals,
} from './fleet-cost.js';
import { FAIRNESS_TARGET, type FeedShare, fleetShares, type ServedFeed, spread } from './fleet-share.js';
import { fetchedBy, type SimulatedFeed, STATED_AWS, simulateFleet } from './fleet-simulation.js';
import { FLEET_PRICES } from './prices.js';
import { figure, formatNumber, type Section } from './report.js';

const TOKENS = 5;
const tokenValue = (i: number) => `bench-fleet-token-${i}-6c1e0f`;
const MINUTE = 60_000;
/** Section 12's measured run → row (p99), added to partner → published for freshness to the row. */
const RUN_TO_ROW_S = 2.7;

export interface FleetMeasurement {
  feeds: number;
  pageSize: number;
  catchUp: {
    feeds: number;
    /** Versions each feed had to fetch (the same for every feed), and their pages. */
    backlog: number;
    pages: number;
    drainMs: number;
    /**
     * Each feed's pace while served (its versions ÷ the time it was served, the sum over its runs of the run's
     * invocation start → its lease given back; waiting for a slot is not served time) and its share
     * (fleet-share.ts: that pace against an equal split of what the emulator delivered meanwhile).
     */
    shares: FeedShare[];
    /**
     * Each feed's catch-up as it ran (s from the catch-up's start): its runs' served intervals and batch sizes,
     * and when each of its pages was published; what a spread is read from (early or late, which token).
     */
    timelines: Array<{
      feedId: string;
      runs: Array<{ start: number; end: number; batchSize: number }>;
      pages: number[];
    }>;
    /** The same shares' spread with each run ending at its last page published (the pace's former end). */
    lastPageSpread: number;
    /** Mean share of the feeds by the size of the batch of their first run (diagnostic: a batch's page turns). */
    shareByBatchSize: Array<{ size: number; feeds: number; meanShare: number }>;
    /** The machine's 1-minute load average while the catch-up ran: first, highest and last of samples 5 s apart. */
    load: { first: number; max: number; last: number };
    /** Feeds that needed more than one run (their slice ended first). */
    multiRun: number;
    /** Runs of the catch-up's feeds, all told (a feed's slice ends: its next run is another dispatch's). */
    feedRuns: number;
    peakPollers: number;
    dispatches: number;
    invocations: number;
    /** Dispatches that failed (their names): the next request or tick dispatched instead. */
    dispatchErrors: string[];
  };
  idleTick: {
    wallMs: number;
    invocations: number;
    dynamoWrites: number;
    dynamoRequests: number;
    logBytes: number;
    logLines: number;
    dispatchErrors: number;
    /** The poller's `poll run finished` lines: the one line a feed's idle poll writes. */
    feedLineBytes: number;
  };
  steady: {
    minutes: number;
    arrivals: number;
    /** Each arrived version: its arrival → its message published, ms (never published: not in here). */
    freshnessMs: number[];
    unpublished: number;
    ticks: number;
    /** Ticks' wall time: dispatch → every batch it started returned. */
    tickWallMs: number[];
    peakPollers: number;
  };
  addFeed: { toFirstPageMs: number; toStoredOrderMs: number };
}

/** Counts DynamoDB calls of a client (writes: Put/Update/Delete/batch/transact). */
function countCalls(client: { send: (...args: never[]) => unknown }) {
  const counts = { writes: 0, requests: 0 };
  const send = client.send.bind(client) as (...args: unknown[]) => unknown;
  (client as { send: unknown }).send = (command: { constructor: { name: string } }, ...rest: unknown[]) => {
    counts.requests += 1;
    if (/^(Update|Put|Delete)Item|BatchWrite|TransactWrite/.test(command.constructor.name))
      counts.writes += 1;
    return send(command, ...rest);
  };
  return counts;
}

/** What the functions print (stdout and stderr) while `run` runs: bytes and lines, and nothing reaches the terminal. */
async function capturingOutput<T>(run: () => Promise<T>) {
  const lines: string[] = [];
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const capture = (chunk: unknown) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  process.stdout.write = capture as typeof process.stdout.write;
  process.stderr.write = capture as typeof process.stderr.write;
  try {
    return { result: await run(), lines };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function measureFleet(options: {
  moto: RunningMoto;
  feeds: number;
  /** Of them, the feeds that catch up at once (the first ones); the others join for the idle tick on. */
  catchUpFeeds: number;
  backlogPages: number;
  pageSize: number;
  arrivalsPerFeedMinute: number;
  steadyMinutes: number;
  seed: number;
  progress: (message: string) => void;
}): Promise<FleetMeasurement> {
  const { moto, feeds: count, pageSize } = options;
  const terminal = process.stderr.write;
  const backlog = options.backlogPages * pageSize;
  const arrivals = Math.round(count * options.arrivalsPerFeedMinute * options.steadyMinutes);
  await moto.reset();
  const aws = useEmulator(moto);
  // A vendor per feed; about 3 versions an order, so the stream holds the backlog and every arrival.
  const sim = await startSimulator({
    token: tokenValue(0),
    additionalTokens: Array.from({ length: TOKENS - 1 }, (_, i) => tokenValue(i + 1)),
    feed: { seed: options.seed, orders: Math.ceil((backlog + arrivals) / 2) + 10, vendors: count },
  });
  sim.showFirst(backlog);
  let purging = true;
  let purges: Promise<void> | undefined;
  try {
    const resources = await createPipelineResources(aws, { token: tokenValue(0) });
    const tokenNames = [resources.tokenParameter];
    for (let i = 1; i < TOKENS; i += 1) {
      const name = `/bench-fleet/token-${i}`;
      await aws.ssm.send(
        new PutParameterCommand({ Name: name, Type: 'SecureString', Value: tokenValue(i), Overwrite: true }),
      );
      tokenNames.push(name);
    }
    // moto's SendMessage scans the whole queue, so it slows as the queue grows: purged in the background, as
    // section 7 does (this measures the pollers, not moto's queue). Stopped for the added feed's consumer.
    purges = (async () => {
      while (purging) {
        await aws.sqs
          .send(new PurgeQueueCommand({ QueueUrl: resources.ordersQueueUrl }))
          .catch(() => undefined);
        await sleep(1_000);
      }
    })();
    // As deployed: INFO logs, metrics on (EMF to stdout); no downstream subscriber.
    const env = pipelineEnv(resources, sim.url, {
      DOWNSTREAM_QUEUE_URLS: '{}',
      PAGE_SIZE: String(pageSize),
      MAX_PAGES_PER_RUN: '1000',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      POWERTOOLS_METRICS_DISABLED: 'false',
      POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedIngester',
    });
    const registry = new DynamoFeedRegistry(aws.dynamo, resources.cursorTable);
    const feedIds = Array.from({ length: count }, (_, i) => `feed-${String(i + 1).padStart(5, '0')}`);
    const vendorOf = (i: number) => `vendor-${i + 1}`;
    // One clock for the dispatcher and the poller: the real one, `ahead` a minute more each time the
    // catch-up's tick finds nothing running (a minute passes with nothing to see).
    const ahead = { ms: 0 };
    const clock = () => Date.now() + ahead.ms;
    const catchUpIds = feedIds.slice(0, Math.min(count, options.catchUpFeeds));
    /** `write(feed, i)` for the feeds from..to of feedIds (i: the feed's index), 50 at a time. */
    const each = async (from: number, to: number, write: (feedId: string, i: number) => Promise<unknown>) => {
      for (let i = from; i < to; i += 50)
        await Promise.all(feedIds.slice(i, Math.min(to, i + 50)).map((id, j) => write(id, i + j)));
    };
    const register = (feedId: string, i: number, vendorIds?: string[]) =>
      registry.register(
        feedId,
        parseFeedConfig({
          tokenParameterName: tokenNames[i % TOKENS],
          pageSize,
          ...(vendorIds ? { vendorIds } : {}),
        }),
        'enabled',
        clock(),
      );
    options.progress(`fleet: registering ${catchUpIds.length} feeds`);
    // Every feed of the catch-up reads every vendor: the same backlog for each (equal backlogs).
    await each(0, catchUpIds.length, (id, i) => register(id, i));

    // The real handlers; the poller's publisher notes when each feed's versions went out, and in which run
    // (a run: its invocation's start, its batch's size, its last page published, its lease given back, its
    // invocation's end).
    const runsOf = new Map<
      string,
      Array<{ start: number; batchSize: number; lastPublished?: number; released?: number; ended?: number }>
    >();
    const published = new Map<string, Array<{ at: number; versions: number }>>();
    const firstPublished = new Map<string, number>();
    const realPublisher = new SqsFanoutPublisher(aws.sqs, [resources.ordersQueueUrl]);
    const publisher = {
      async publish(messages: Parameters<SqsFanoutPublisher['publish']>[0]) {
        await realPublisher.publish(messages);
        const at = performance.now();
        const byFeed = new Map<string, number>();
        for (const message of messages) {
          const key = `${message.attributes.orderId?.StringValue}:${message.attributes.version?.StringValue}`;
          if (!firstPublished.has(key)) firstPublished.set(key, at);
          const { feedId } = (JSON.parse(message.body) as { source: { feedId: string } }).source;
          byFeed.set(feedId, (byFeed.get(feedId) ?? 0) + 1);
        }
        for (const [feedId, versions] of byFeed) record(feedId, at, versions);
      },
    };
    function record(feedId: string, at: number, versions: number) {
      const list = published.get(feedId) ?? [];
      list.push({ at, versions });
      published.set(feedId, list);
      const run = runsOf.get(feedId)?.at(-1);
      if (run) run.lastPublished = at;
    }
    const dynamoCounts = countCalls(aws.dynamo);
    /** A feed's run ends when it gives its lease up (its slice over, or caught up), whatever its batch still does. */
    class TimedCursorStore extends DynamoCursorStore {
      override async release(...args: Parameters<DynamoCursorStore['release']>) {
        await super.release(...args);
        const run = runsOf.get(args[0].feedId)?.at(-1);
        if (run) run.released = performance.now();
      }
    }
    const poller = buildPoller(aws, loadPollerConfig(env), {
      ...createObservability('order-feed-poller', env),
      publisher,
      cursorStore: new TimedCursorStore(aws.dynamo, resources.cursorTable),
      now: clock,
      dispatchRequests: {
        request: async (requestedAt) => void dispatch({ dispatchRequest: { requestedAt } }),
        end: (batchId) => registry.endBatch(batchId),
      },
    });
    const lastOutcome = new Map<string, string>();
    const caughtUp = (ids: readonly string[]) =>
      ids.every((feedId) => lastOutcome.get(feedId) === 'caught-up');
    /** Ticks (a minute apart on the clock) until every feed of `ids` is caught up. */
    const untilCaughtUp = async (ids: readonly string[]) => {
      for (let tick = 0; tick < 30 && !caughtUp(ids); tick += 1) {
        dispatch({ source: 'aws.events' });
        await settle();
        ahead.ms += MINUTE;
      }
      if (!caughtUp(ids)) throw new Error(`fleet: not every feed caught up after 30 ticks`);
    };
    const running = new Set<Promise<unknown>>();
    const pollers = { now: 0, peak: 0 };
    let invocations = 0;
    let dispatches = 0;
    const settings: DispatchSettings = DISPATCH_DEFAULTS;
    const dispatcher = buildDispatcher(
      aws,
      loadDispatcherConfig({
        CURSOR_TABLE_NAME: resources.cursorTable,
        POLLER_FUNCTION_NAME: 'poller',
        MAX_CONCURRENT_POLLERS: String(settings.maxConcurrentPollers),
      }),
      {
        // Lambda's asynchronous invoke: the poller runs on its own.
        startPoller: async (event) => {
          invocations += 1;
          pollers.now += 1;
          pollers.peak = Math.max(pollers.peak, pollers.now);
          const started = performance.now();
          const feedRuns = event.batch.feedIds.map((feedId) => {
            const feedRun = { start: started, batchSize: event.batch.feedIds.length } as {
              start: number;
              batchSize: number;
              ended?: number;
            };
            runsOf.set(feedId, [...(runsOf.get(feedId) ?? []), feedRun]);
            return feedRun;
          });
          const run = poller(event, lambdaContext('poller', 900_000))
            .catch((error: unknown) => {
              if (!(error instanceof PollRunFailedError)) throw error;
              return error.result;
            })
            .then((result) => {
              for (const feed of result.feeds) lastOutcome.set(feed.feedId, feed.kind);
            })
            .finally(() => {
              for (const feedRun of feedRuns) feedRun.ended = performance.now();
              pollers.now -= 1;
              running.delete(run);
            });
          running.add(run);
        },
        unreservedConcurrency: async () => undefined,
        ...createObservability('order-feed-dispatcher', env),
        now: clock,
      },
    );
    // A dispatch that fails (e.g. past its timeout on a busy machine: its lock taken by the next) is a failed
    // invocation, as on Lambda; the next request or tick dispatches. Counted, not thrown.
    const dispatchErrors: string[] = [];
    function dispatch(event: unknown) {
      dispatches += 1;
      const run = dispatcher(event, lambdaContext('dispatcher', DISPATCHER_TIMEOUT.toMilliseconds()))
        .catch(
          (error: unknown) => void dispatchErrors.push(error instanceof Error ? error.name : String(error)),
        )
        .finally(() => running.delete(run));
      running.add(run);
      return run;
    }
    const settle = async () => {
      while (running.size > 0) await Promise.allSettled([...running]);
    };

    // a. Catch-up: every feed new, with the same backlog, all at once.
    options.progress(`fleet: catch-up of ${catchUpIds.length} feeds × ${backlog} versions at once`);
    const loads = [loadavg()[0] ?? 0];
    const sampler = setInterval(() => {
      loads.push(loadavg()[0] ?? 0);
      if (loads.length % 6 !== 0) return;
      const done = catchUpIds.filter((feedId) => lastOutcome.get(feedId) === 'caught-up').length;
      // Past the capture of the functions' output, to the terminal.
      const capturing = process.stderr.write;
      process.stderr.write = terminal;
      options.progress(
        `fleet: catch-up, ${done} of ${catchUpIds.length} caught up, ${invocations} poller invocations, ${dispatches} dispatches, load ${formatNumber(loads.at(-1) ?? 0)}`,
      );
      process.stderr.write = capturing;
    }, 5_000);
    const catchUp = await capturingOutput(async () => {
      const started = performance.now();
      await untilCaughtUp(catchUpIds);
      return started;
    }).finally(() => clearInterval(sampler));
    loads.push(loadavg()[0] ?? 0);
    const startedAt = catchUp.result;
    let multiRun = 0;
    let feedRuns = 0;
    let drainMs = 0;
    const served: ServedFeed[] = [];
    const toLastPage: ServedFeed[] = [];
    const timelines: FleetMeasurement['catchUp']['timelines'] = [];
    const sinceStart = (at: number) => Math.round(at - startedAt) / 1000;
    for (const feedId of catchUpIds) {
      const pages = published.get(feedId) ?? [];
      const versions = pages.reduce((sum, page) => sum + page.versions, 0);
      if (versions !== backlog)
        throw new Error(`fleet catch-up: ${feedId} published ${versions} versions of ${backlog}`);
      // Its catch-up's runs: up to the one that published its last page. Once caught up, its schedule polls it
      // again every minute (idle polls in large batches): no backlog, not served in the catch-up.
      const caughtUpAt = pages.at(-1)?.at ?? startedAt;
      const runs = (runsOf.get(feedId) ?? []).filter((run) => run.start <= caughtUpAt);
      if (runs.length > 1) multiRun += 1;
      feedRuns += runs.length;
      // Each run: its invocation's start → its lease given back (none: the invocation's end).
      const intervals = (end: (run: (typeof runs)[number]) => number | undefined) =>
        runs.map((run) => ({ start: run.start, end: end(run) ?? run.ended ?? run.start }));
      served.push({ feedId, runs: intervals((run) => run.released), published: pages });
      timelines.push({
        feedId,
        runs: intervals((run) => run.released).map((interval, i) => ({
          start: sinceStart(interval.start),
          end: sinceStart(interval.end),
          batchSize: runs[i]?.batchSize ?? 0,
        })),
        pages: pages.map((page) => sinceStart(page.at)),
      });
      toLastPage.push({ feedId, runs: intervals((run) => run.lastPublished), published: pages });
      drainMs = Math.max(drainMs, (pages.at(-1)?.at ?? startedAt) - startedAt);
    }
    const shares = fleetShares(served);
    const bySize = new Map<number, number[]>();
    for (const share of shares) {
      const size = runsOf.get(share.feedId)?.[0]?.batchSize ?? 0;
      bySize.set(size, [...(bySize.get(size) ?? []), share.share]);
    }
    const catchUpResult = {
      feeds: catchUpIds.length,
      backlog,
      pages: options.backlogPages,
      drainMs,
      shares,
      timelines,
      lastPageSpread: spread(fleetShares(toLastPage).map((share) => share.share)),
      shareByBatchSize: [...bySize]
        .sort(([a], [b]) => a - b)
        .map(([size, list]) => ({
          size,
          feeds: list.length,
          meanShare: list.reduce((sum, value) => sum + value, 0) / list.length,
        })),
      load: { first: loads[0] ?? 0, max: Math.max(...loads), last: loads.at(-1) ?? 0 },
      multiRun,
      feedRuns,
      peakPollers: pollers.peak,
      dispatches,
      invocations,
      dispatchErrors: [...dispatchErrors],
    };

    // b. One idle tick of all, a minute on, each feed now on a vendor of its own (the cursor stays at the end),
    // the others added and polled once first (their first poll: the shown entries of their vendor).
    options.progress(`fleet: ${count - catchUpIds.length} more feeds, then one idle tick of ${count}`);
    await each(catchUpIds.length, count, (id, i) => register(id, i, [vendorOf(i)]));
    await each(0, catchUpIds.length, (id, i) =>
      registry.update(
        id,
        'SET #config.vendorIds = :vendors',
        'attribute_exists(#config)',
        { ':vendors': [vendorOf(i)] },
        'the bench feed has no row',
      ),
    );
    await capturingOutput(() => untilCaughtUp(feedIds));
    const before = { ...dynamoCounts, invocations, errors: dispatchErrors.length };
    const idle = await capturingOutput(async () => {
      const started = performance.now();
      dispatch({ source: 'aws.events' });
      await settle();
      return performance.now() - started;
    });
    const feedLines = idle.lines.filter((line) => line.includes('"poll run finished"'));
    const bytes = (lines: string[]) => lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
    const idleTick = {
      wallMs: idle.result,
      invocations: invocations - before.invocations,
      dynamoWrites: dynamoCounts.writes - before.writes,
      dynamoRequests: dynamoCounts.requests - before.requests,
      logBytes: bytes(idle.lines),
      logLines: idle.lines.length,
      dispatchErrors: dispatchErrors.length - before.errors,
      feedLineBytes: bytes(feedLines) / Math.max(1, feedLines.length),
    };

    // c. Steady state on the real clock: a tick every minute while versions arrive evenly over M minutes.
    const minutes = options.steadyMinutes;
    options.progress(
      `fleet: steady state, ${arrivals} new versions over ${minutes} minutes, a tick a minute`,
    );
    // The version each next stream entry carries (one entry, one new orderId:version: no duplicates served).
    const arrivalKeys: string[] = [];
    let shown = sim.oracle('stream', backlog).versionKeys;
    for (let n = backlog + 1; n <= backlog + arrivals; n += 1) {
      const next = sim.oracle('stream', n).versionKeys;
      for (const key of next) if (!shown.has(key)) arrivalKeys.push(key);
      shown = next;
    }
    const arrivedAt = new Map<string, number>();
    pollers.peak = pollers.now;
    const ticks = minutes + 2;
    const tickWallMs: number[] = [];
    const steadyStart = performance.now();
    await capturingOutput(async () => {
      const every = (minutes * MINUTE) / Math.max(1, arrivals);
      const arriving = (async () => {
        for (let k = 1; k <= arrivals; k += 1) {
          await sleep(Math.max(0, steadyStart + k * every - performance.now()));
          sim.showFirst(backlog + k);
          arrivedAt.set(arrivalKeys[k - 1] ?? '', performance.now());
        }
      })();
      // The schedule fires on time whatever still runs (EventBridge does); a tick's wall time is noted when
      // everything it started has returned before the next.
      for (let j = 1; j <= ticks; j += 1) {
        await sleep(Math.max(0, steadyStart + j * MINUTE - performance.now()));
        const tick = performance.now();
        dispatch({ source: 'aws.events' });
        if (await Promise.race([settle().then(() => true), sleep(MINUTE - 2_000).then(() => false)]))
          tickWallMs.push(performance.now() - tick);
      }
      await arriving;
      await settle();
    });
    const freshnessMs: number[] = [];
    for (const [key, at] of arrivedAt) {
      const out = firstPublished.get(key);
      if (out !== undefined) freshnessMs.push(out - at);
    }
    const steady = {
      minutes,
      arrivals,
      freshnessMs,
      unpublished: arrivedAt.size - freshnessMs.length,
      ticks,
      tickWallMs,
      peakPollers: pollers.peak,
    };

    // d. A feed added: its row (ops feeds add), the dispatch it asks for, the consumer, its first stored order.
    options.progress('fleet: a feed added');
    purging = false;
    await purges;
    await aws.sqs.send(new PurgeQueueCommand({ QueueUrl: resources.ordersQueueUrl }));
    const consumer = buildConsumer(aws, loadConsumerConfig(env), { logger: NO_LOGGER, metrics: NO_METRICS });
    // The new feed reads a vendor of the fleet's from the start of the stream (its own cursor): the only feed due.
    const addedVendor = String([...sim.expected().orders.values()][0]?.vendorId ?? vendorOf(0));
    const added = await capturingOutput(async () => {
      const started = performance.now();
      await registry.register(
        'feed-added',
        parseFeedConfig({ tokenParameterName: tokenNames[0], vendorIds: [addedVendor], pageSize }),
        'enabled',
        clock(),
      );
      dispatch({ dispatchRequest: { requestedAt: clock() } });
      // The consumer runs beside the pollers (the queue's event source): the feed's first order is stored once
      // its first page is out, whatever else that dispatch started (the fleet's idle polls, when due: before
      // 2026-11-28 18:50 the consumer waited for them all, 41 s once the add came as a tick's feeds fell due).
      while (!published.has('feed-added') && performance.now() - started < 5 * MINUTE) await sleep(20);
      const page = (published.get('feed-added')?.[0]?.at ?? Number.NaN) - started;
      await drainQueue(aws, resources.ordersQueueUrl, { consume: consumer });
      const stored = (await scanOrders(aws, resources.ordersTable)).size > 0;
      const storedMs = stored ? performance.now() - started : Number.NaN;
      await settle();
      return { toFirstPageMs: page, toStoredOrderMs: storedMs };
    });
    return {
      feeds: count,
      pageSize,
      catchUp: catchUpResult,
      idleTick,
      steady,
      addFeed: added.result,
    };
  } finally {
    purging = false;
    await purges;
    aws.destroy();
    await sim.close();
  }
}

const NO_LOGGER = createObservability('order-feed-consumer', {
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_METRICS_DISABLED: 'true',
}).logger;

/** The model's runs (fleet-simulation.ts) at the defaults: an idle fleet with arrivals, and a catch-up. */
export function modelFleet(options: { idleFeeds: number; catchUpFeeds: number; catchUpBacklog: number }) {
  const base = { settings: DISPATCH_DEFAULTS, ...STATED_AWS };
  const feedsOf = (count: number, fields: Partial<SimulatedFeed>): SimulatedFeed[] =>
    Array.from({ length: count }, (_, i) => ({
      feedId: `f${i}`,
      token: `token-${i % 5}`,
      scheduleMinutes: 1,
      backlog: 0,
      ...fields,
      // Steady state: caught up, last dispatched at some moment of the last minute; 3 versions in 10 minutes.
      ...(fields.caughtUpAt === undefined
        ? {}
        : {
            caughtUpAt: -((i * 997) % MINUTE),
            arrivals: [0, 1, 2].map((k) => MINUTE + ((i * 7_919 + k * 193_013) % (9 * MINUTE))),
          }),
    }));
  const idle = simulateFleet({
    ...base,
    feeds: feedsOf(options.idleFeeds, { caughtUpAt: 0 }),
    durationMs: 11 * MINUTE,
  });
  const freshness = [...idle.feeds.values()].flatMap((record) => record.freshnessMs).sort((a, b) => a - b);
  const at = (p: number) =>
    freshness[Math.min(freshness.length - 1, Math.ceil(p * freshness.length) - 1)] ?? 0;
  const catchUpFleet = feedsOf(options.catchUpFeeds, { backlog: options.catchUpBacklog });
  const catchUp = simulateFleet({
    ...base,
    feeds: catchUpFleet,
    durationMs: 6 * 3_600_000,
    untilDrained: true,
  });
  const records = [...catchUp.feeds.values()];
  const firstDrain = Math.min(...records.map((record) => record.drainedAt ?? Number.POSITIVE_INFINITY));
  const fetchedAtFirst = records.map((record) => fetchedBy(record, firstDrain));
  return {
    idle: {
      feeds: options.idleFeeds,
      fetchedP50Ms: at(0.5),
      fetchedP99Ms: at(0.99),
      peakPollers: idle.peakPollers,
      invocationsPerMinute: idle.invocations / (idle.endedAt / MINUTE),
    },
    catchUp: {
      feeds: options.catchUpFeeds,
      backlog: options.catchUpBacklog,
      drainedMs: Math.max(...records.map((record) => record.drainedAt ?? Number.NaN)),
      fairness: Math.min(...fetchedAtFirst) / Math.max(...fetchedAtFirst),
      peakPollers: catchUp.peakPollers,
    },
    maxConcurrentPollers: DISPATCH_DEFAULTS.maxConcurrentPollers,
  };
}

export type FleetModel = ReturnType<typeof modelFleet>;

/** The idle run the cost model takes, with the bytes and writes measured in the idle tick. */
export function measuredIdleRun(m: FleetMeasurement): IdleRun {
  const invocationBytes =
    (m.idleTick.logBytes - m.idleTick.feedLineBytes * m.feeds) / Math.max(1, m.idleTick.invocations);
  return {
    ...IDLE_RUN,
    outcomeLineBytes: Math.round(m.idleTick.feedLineBytes),
    invocationLogBytes: Math.round(invocationBytes),
    writesPerPoll: m.idleTick.dynamoWrites / m.feeds,
  };
}

/** All-in idle cost per feed per month (per-feed lines and the deployment's fixed share) and its floor. */
export function fleetIdleCost(feeds: number, scheduleMinutes: number, run: IdleRun = IDLE_RUN) {
  const lines = idleCostLines(
    { feeds, scheduleMinutes, batchSize: DISPATCH_DEFAULTS.batchSize, todayIdleFeedMetrics: 4 },
    run,
  );
  const sum = totals(lines);
  const fixed = dispatcherFixedPerMonth(feeds, run);
  return { lines, ...sum, fixed, allIn: sum.dispatcher + fixed.total / feeds };
}

/** `costFeeds`: the fleet sizes the idle cost is shown at (the line items at the first). */
export function fleetSection(
  m: FleetMeasurement | undefined,
  model: FleetModel,
  costFeeds: readonly number[],
): Section {
  const run = m ? measuredIdleRun(m) : IDLE_RUN;
  const costs = costFeeds.map((feeds) => ({ feeds, ...fleetIdleCost(feeds, 1, run) }));
  const cost = costs[0] ?? { feeds: 1_000, ...fleetIdleCost(1_000, 1, run) };
  const modelFeeds = cost.feeds;
  const figures = [];
  const formulas: string[] = [];
  if (m) {
    const n = m.feeds;
    const cu = m.catchUp;
    const st = m.steady;
    const paces = cu.shares.map((share) => share.pace);
    const shares = cu.shares.map((share) => share.share);
    const freshP99 = percentile(st.freshnessMs, 99) / 1000;
    figures.push(
      figure(`${n} feeds measured: one idle tick, wall time`, 's', m.idleTick.wallMs / 1000),
      figure(`  idle tick: DynamoDB writes per feed`, '', m.idleTick.dynamoWrites / n),
      figure(`  idle tick: DynamoDB requests per feed`, '', m.idleTick.dynamoRequests / n),
      figure(`  idle tick: log bytes per idle poll (dispatcher's share in)`, 'B', m.idleTick.logBytes / n),
      figure(
        `${cu.feeds} feeds measured: catch-up, ${cu.backlog} versions (${cu.pages} pages) each, all new at once: drained`,
        's',
        cu.drainMs / 1000,
      ),
      figure(
        `  catch-up: largest / smallest share of the emulator while served (smallest ≥ 0.7×)`,
        '×',
        spread(shares),
        1,
        FAIRNESS_TARGET,
      ),
      figure(`  catch-up: fastest / slowest pace while served (the emulator's speed in)`, '×', spread(paces)),
      figure(`  catch-up: load average while it ran, highest (2 cores)`, '', cu.load.max),
      figure(
        `  catch-up: pollers at once, most (maxConcurrentPollers)`,
        '',
        cu.peakPollers,
        DISPATCH_DEFAULTS.maxConcurrentPollers,
        1,
      ),
      figure(
        `${n} feeds measured, steady state at 1 minute: arrival → published p99 (+ row ${RUN_TO_ROW_S} s)`,
        's',
        freshP99 + RUN_TO_ROW_S,
        90,
        1,
      ),
      figure(
        `  steady state: pollers at once, most (maxConcurrentPollers)`,
        '',
        st.peakPollers,
        DISPATCH_DEFAULTS.maxConcurrentPollers,
        1,
      ),
      figure(
        `  add a feed → its first stored order (its dispatch asked)`,
        's',
        m.addFeed.toStoredOrderMs / 1000,
      ),
      figure(
        `  the same, the request lost: the next tick (≤ 60 s) + that`,
        's',
        60 + m.addFeed.toStoredOrderMs / 1000,
        60 + m.addFeed.toFirstPageMs / 1000,
        1.05,
      ),
    );
    const s = (ms: number) => formatNumber(ms / 1000);
    formulas.push(
      `fleet measured (${n} feeds, 5 tokens, pageSize ${m.pageSize}, moto + simulator, the real dispatcher and poller on one clock): idle tick ${s(m.idleTick.wallMs)} s, ${m.idleTick.invocations} poller invocations, ${m.idleTick.dynamoWrites} DynamoDB writes and ${m.idleTick.dynamoRequests} requests, ${m.idleTick.logLines} log lines / ${m.idleTick.logBytes} B (a feed's outcome line ${formatNumber(m.idleTick.feedLineBytes)} B)`,
      `  catch-up: every feed reads the same ${cu.backlog} versions; pace_i = versions_i ÷ Σ over feed i's runs (invocation start → its lease given back), waiting for a slot not counted: p50 ${formatNumber(percentile(paces, 50))} versions/s, min ${formatNumber(Math.min(...paces))}, max ${formatNumber(Math.max(...paces))}; share_i = pace_i ÷ (the fleet's versions a second in feed i's served intervals ÷ the mean number of feeds served in them): min ${formatNumber(Math.min(...shares))}, p5 ${formatNumber(percentile(shares, 5))}, p50 ${formatNumber(percentile(shares, 50))}, p95 ${formatNumber(percentile(shares, 95))}, max ${formatNumber(Math.max(...shares))} (each run ending at its last page published instead: spread ${formatNumber(cu.lastPageSpread)}); mean share by the size of a feed's first batch: ${cu.shareByBatchSize.map(({ size, feeds, meanShare }) => `${size}: ${formatNumber(meanShare)} (${feeds} feeds)`).join(', ')}; load average ${formatNumber(cu.load.first)} → ${formatNumber(cu.load.last)}, highest ${formatNumber(cu.load.max)}; ${cu.multiRun} feeds needed more than one run (${cu.feedRuns} runs, ${formatNumber((cu.feeds * cu.pages) / cu.feedRuns)} pages a run); ${cu.dispatches} dispatches (${cu.dispatchErrors.length} failed: ${cu.dispatchErrors.join(', ') || 'none'}; idle tick: ${m.idleTick.dispatchErrors}), ${cu.invocations} poller invocations, peak ${cu.peakPollers}`,
      `  steady state: ${st.arrivals} versions arriving evenly over ${st.minutes} minutes on random feeds (the simulator shows the stream's next entry), ${st.ticks} ticks a real minute apart; freshness = the version's arrival → its message published, p50 ${s(percentile(st.freshnessMs, 50))} s, p99 ${s(percentile(st.freshnessMs, 99))} s, max ${s(Math.max(0, ...st.freshnessMs))} s, ${st.unpublished} never published; to the row add section 12's run → row p99 (${RUN_TO_ROW_S} s); ticks' wall time ${st.tickWallMs.map((ms) => s(ms)).join(', ')} s (${st.ticks - st.tickWallMs.length} ran into the next)`,
      `  add a feed: row → first page published ${s(m.addFeed.toFirstPageMs)} s, → first order stored ${s(m.addFeed.toStoredOrderMs)} s`,
    );
  }
  const idle = model.idle;
  const cu = model.catchUp;
  figures.push(
    figure(
      `model, ${idle.feeds} idle feeds: partner → fetched p99 (+ row 2.7 s)`,
      's',
      idle.fetchedP99Ms / 1000 + 2.7,
      90,
      1,
    ),
    figure(
      `  model: pollers at once, most (maxConcurrentPollers)`,
      '',
      idle.peakPollers,
      model.maxConcurrentPollers,
      1,
    ),
    figure(`model, ${cu.feeds} feeds × ${cu.backlog} versions at once: drained`, 's', cu.drainedMs / 1000),
    figure(
      `  model: fastest / slowest fetched at the first drain (≥ 0.7×)`,
      '×',
      1 / cu.fairness,
      1,
      FAIRNESS_TARGET,
    ),
    figure(`  model catch-up: pollers at once, most`, '', cu.peakPollers, model.maxConcurrentPollers, 1),
  );
  formulas.push(
    `fleet model (the real planDispatch on a fake clock, defaults): ${idle.feeds} idle feeds, 3 versions each in 10 minutes: fetched p50 ${formatNumber(idle.fetchedP50Ms / 1000)} s, p99 ${formatNumber(idle.fetchedP99Ms / 1000)} s, ${formatNumber(idle.invocationsPerMinute)} poller invocations a minute; freshness to the row adds section 12's run → row (~2.7 s)`,
  );
  const perFeed = (value: number) => `$${value.toFixed(4)}`;
  for (const { feeds, allIn, floor } of costs) {
    figures.push(
      figure(`idle feed, 1-minute schedule, ${feeds} feeds: all-in per month`, '$', allIn, 0.15, 1),
      figure(
        `  ${feeds} feeds: all-in vs the floor (invocation share, writes, logs)`,
        '$',
        allIn,
        floor,
        1.2,
      ),
    );
  }
  figures.push(figure(`  today's shape (a function, rule, FeedId metrics, alarm a feed)`, '$', cost.today));
  formulas.push(
    `idle cost per feed per month at a 1-minute schedule (${modelFeeds} feeds, batches of ${DISPATCH_DEFAULTS.batchSize}; log bytes and writes measured above): line item | today | fleet | floor`,
    ...cost.lines.map(
      (line) =>
        `  ${line.item.padEnd(42)} ${perFeed(line.today).padStart(8)} ${perFeed(line.dispatcher).padStart(8)} ${line.floor === undefined ? '' : perFeed(line.floor).padStart(8)}   ${line.how}`,
    ),
    `  ${'per feed'.padEnd(42)} ${perFeed(cost.today).padStart(8)} ${perFeed(cost.dispatcher).padStart(8)} ${perFeed(cost.floor).padStart(8)}`,
    `  ${'deployment fixed ÷ feeds'.padEnd(42)} ${''.padStart(8)} ${perFeed(cost.fixed.total / modelFeeds).padStart(8)}            $${cost.fixed.total.toFixed(2)} a month: ${FIXED_METRICS} metrics ($${FLEET_PRICES.metricPerMonth} each), ${FIXED_ALARMS} alarms ($${FLEET_PRICES.alarmPerMonth} each), a dashboard ($${FLEET_PRICES.dashboardPerMonth}), the dispatcher's runs`,
    `  ${'all-in'.padEnd(42)} ${perFeed(cost.today).padStart(8)} ${perFeed(cost.allIn).padStart(8)} ${perFeed(cost.floor).padStart(8)}   ${(cost.allIn / cost.floor).toFixed(2)}× the floor`,
    ...costs.map(
      ({ feeds, allIn, floor, fixed }) =>
        `  at ${feeds} feeds: all-in $${allIn.toFixed(4)} (fixed share $${(fixed.total / feeds).toFixed(4)}), ${(allIn / floor).toFixed(2)}× the floor; without the fixed share ${((allIn - fixed.total / feeds) / floor).toFixed(2)}×`,
    ),
  );
  return {
    id: 'fleet',
    title: m
      ? `Fleet: ${m.feeds} feeds measured (moto, the real dispatcher and poller), ${idle.feeds} in the AWS model, idle cost per feed`
      : `Fleet: ${idle.feeds} feeds in the AWS model, idle cost per feed`,
    floorIs:
      'targets: freshness p99 ≤ 90 s, pollers ≤ maxConcurrentPollers, fairness: each feed’s share of the emulator while served, smallest ≥ 0.7 × largest (largest / smallest ≤ 1.43), idle all-in ≤ $0.15 and ≤ 1.2× its floor',
    figures,
    formulas,
    details: { measured: m, model, costs },
  };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
}
