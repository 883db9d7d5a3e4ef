// One seed through the in-process pipeline on moto: the stack's resources from its template
// (tools/harness/pipeline.ts), the functions built by their own factories (buildPoller, buildConsumer) from
// the environment the stack gives them, the partner simulator with the seed's data and faults. The schedule
// is emulated as local mode does: the next poller run at once while there is more, a little later after a
// run that could not go on; the consumer drains the queue after each run.
//
// Ends when the partner has nothing more (two runs in a row caught up with nothing new), when the same
// documented stop ends three runs without progress between them (as its alarm would ring), or when the seed
// makes no progress (once its outages are over) or runs out of its budget. Then it gathers what the
// invariants need.

import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import type { FunctionMetrics } from '../../functions/core/observability/metric-names.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import type { FeedRunResult } from '../../functions/poller/build-poller.js';
import type { AwsAt } from '../../tools/aws.js';
import {
  createPipelineResources,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  quarantinedKeys,
  scanOrders,
} from '../../tools/harness/pipeline.js';
import { failedRunOf, singleFeedPoller } from '../../tools/harness/single-feed.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import type { RunningMoto } from '../../tools/local/moto.js';
import { readBudgets } from '../../tools/ops/budget.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import type { RetryAfterForm } from '../../tools/simulator/types.js';
import { readSalesLedger } from '../../tools/store/sales-ledger.js';
import type { Partner } from './draw.js';
import { POLLER_TIMEOUT_MS, type RunRecord, type SeedEnd, type SeedObservation } from './invariants.js';
import {
  answeredNoPage,
  OutputCapture,
  PeakRss,
  peakObservedRate,
  rateLimitWaitsMs,
  stalledMs,
  textOfError,
} from './observe.js';
import { runbookStops } from './runbook.js';
import { countMessages, historyKeys, storedCursorPosition } from './stored.js';

const FEED_ID = 'partner-feed';

export interface InProcessSeed {
  observation: SeedObservation;
  faultCounts: Record<string, number>;
  outcomes: Record<string, number>;
}

/** Records the functions' metric counts (what the alarms watch). */
function metricsRecorder(counts: Record<string, number>): FunctionMetrics {
  return {
    count: (name, value = 1) => {
      counts[name] = (counts[name] ?? 0) + value;
    },
    publish: () => undefined,
  };
}

/** The outcomes after which the next run follows at once (scheduling.ts, MORE_TO_FETCH, and a caught-up run). */
const AT_ONCE = new Set(['page-limit', 'out-of-time', 'lease-lost', 'stale-continuation', 'caught-up']);
/**
 * A documented stop ends this many runs, with no progress and no run that read on between them, before the seed
 * calls it a stop.
 */
const STOP_RUNS = 3;

export async function runInProcess(
  partner: Partner,
  shared: { moto: RunningMoto; aws: AwsAt },
  logFile: string | undefined,
): Promise<InProcessSeed> {
  const { moto, aws } = shared;
  const token = `fuzz-${partner.seed}-${randomBytes(9).toString('hex')}`;
  await moto.reset();
  const resources = await createPipelineResources(aws, { token });
  const sim = await startSimulator({ token, feed: partner.feed, faults: partner.faults });
  const capture = new OutputCapture(token);
  const metrics: Record<string, number> = {};
  const loop = monitorEventLoopDelay({ resolution: 20 });
  const rss = new PeakRss();
  try {
    const handlers = buildHandlers(aws, resources, sim, partner, metrics);
    capture.start();
    loop.enable();
    const ran = await schedule(partner, handlers, sim, aws, resources, capture);
    loop.disable();
    const now = Date.now();
    const cursor = await storedCursorPosition(aws, resources.cursorTable, FEED_ID);
    const stored = await storedState(aws, resources);
    capture.stop();
    if (logFile) writeFileSync(logFile, capture.tail());
    const observation: SeedObservation = {
      partner,
      end: ran.end,
      stream: sim.oracle('stream'),
      delivered: sim.oracle('delivered'),
      deliveredBeforeCursor: sim.oracle('delivered', cursor),
      stored,
      runs: ran.runs,
      requests: [...sim.requests],
      metrics,
      peakRssGrowthMb: rss.growthMb(),
      maxStallMs: loop.max / 1e6,
      tokenSeenIn: [
        ...capture.seenIn(),
        ...ran.tokenSeenIn,
        ...(sim.requests.some((r) => r.url.includes(token)) ? ['a request URL'] : []),
      ],
      budget: {
        ...ran.budget,
        peakObservedRate: peakObservedRate(sim.requests),
        cap: partner.pipeline.requestsPerSecond,
      },
      now,
    };
    return { observation, faultCounts: sim.faultCounts(), outcomes: ran.outcomes };
  } finally {
    loop.disable();
    capture.stop();
    await sim.close();
  }
}

interface Handlers {
  poll(): Promise<FeedRunResult>;
  drain(): Promise<unknown>;
}

function buildHandlers(
  aws: AwsAt,
  resources: PipelineResources,
  sim: RunningSimulator,
  partner: Partner,
  metrics: Record<string, number>,
): Handlers {
  const { pipeline } = partner;
  const env = pipelineEnv(resources, sim.url, {
    FEED_ID,
    PAGE_SIZE: String(pipeline.pageSize),
    MAX_PAGES_PER_RUN: String(pipeline.maxPagesPerRun),
    MAX_PAGE_BODY_BYTES: String(pipeline.maxPageBodyBytes),
    // No downstream queue: an undrained queue slows moto's sends (LOCAL-AWS.md).
    DOWNSTREAM_QUEUE_URLS: '{}',
    POWERTOOLS_LOG_LEVEL: pipeline.logLevel,
    ...(pipeline.lookbackMinutes === undefined
      ? {}
      : { CURSOR_RECOVERY_LOOKBACK_MINUTES: String(pipeline.lookbackMinutes) }),
    ...(pipeline.requestsPerSecond === undefined
      ? {}
      : { PARTNER_REQUESTS_PER_SECOND: String(pipeline.requestsPerSecond) }),
  });
  const recorder = metricsRecorder(metrics);
  // The fleet's poller on this one feed, a batch of it per run (the schedule below stands for the dispatcher).
  const poller = singleFeedPoller(aws, env, {
    logger: createObservability('order-feed-poller', env).logger,
    metrics: recorder,
  });
  const consumer = buildConsumer(aws, loadConsumerConfig(env), {
    logger: createObservability('order-feed-consumer', env).logger,
    metrics: recorder,
  });
  return {
    poll: () => poller.poll(lambdaContext('poller', POLLER_TIMEOUT_MS)),
    drain: () => drainQueue(aws, resources.ordersQueueUrl, { consume: consumer }),
  };
}

/** The emulated schedule: runs until drained, a documented stop three times, no progress, or the budget. */
async function schedule(
  partner: Partner,
  handlers: Handlers,
  sim: RunningSimulator,
  aws: AwsAt,
  resources: PipelineResources,
  capture: OutputCapture,
) {
  const stops = new Set(runbookStops().map((stop) => stop.outcome));
  const started = Date.now();
  const idleMs = partner.profile === 'fast' ? 300 : 2_000;
  const runs: RunRecord[] = [];
  const outcomes: Record<string, number> = {};
  const tokenSeenIn: string[] = [];
  const budget = { maxHoldAheadMs: 0, maxRate: 0 };
  // Progress is the stored cursor reaching further into the stream than ever (a replay after an expired
  // cursor reads pages, but goes nowhere new).
  let furthest = 0;
  let lastProgress = started;
  let runsWithoutProgress = 0;
  let quiet = 0;
  let stop = { outcome: '', runs: 0 };
  // The consumer's time draining what was published is the partner's volume, not the seed going round (a
  // flood of 600 versions took 38 s to drain on a loaded moto), and the waits the spec makes a client take for
  // its 429s are its limit (seed 626: a third of its answers 429s): the budget counts the rest.
  let drainingMs = 0;
  const retryAfterOf = partnerRetryAfter(partner);
  // Runs whose every request the partner answered with no page (5xx, 429s, resets, 3xx, non-pages): the
  // partner's outage, which no ingester makes progress through (seed 988: 28 of 32 requests failed).
  const downRuns: Array<{ from: number; to: number }> = [];
  let end: SeedEnd | undefined;
  while (!end) {
    const now = Date.now();
    const timedOver = started + partner.timedFaultsMs;
    const heldMs = rateLimitWaitsMs(sim.requests, retryAfterOf, now);
    if (now - started - drainingMs - heldMs > partner.budgetMs) {
      end = {
        kind: 'over-budget',
        detail: `not done after ${Math.round((now - started) / 1000)} s (${Math.round(drainingMs / 1000)} s of it draining, ${Math.round(heldMs / 1000)} s waiting out 429s): ${lastOutcomes(runs)}`,
      };
      break;
    }
    // The stall clock leaves out the 429 waits too (seed 837: a drained feed's one request met five 429s in a
    // row, 30 s of waits the spec makes, then 5xx until the run gave up: 39 s with no progress of 30), and the
    // runs the partner answered with no page at all (seed 988).
    const stallFrom = Math.max(lastProgress, timedOver);
    const stalledFor = stalledMs(sim.requests, retryAfterOf, downRuns, stallFrom, now);
    const quickStall = runsWithoutProgress >= partner.stallRuns && stalledFor >= 45_000;
    if (now > timedOver && (stalledFor > partner.stallMs || quickStall)) {
      end = {
        kind: 'no-progress',
        detail: `the cursor went no further in ${runsWithoutProgress} run(s), ${Math.round(stalledFor / 1000)} s: ${lastOutcomes(runs)}; ${lastHeard(capture)}`,
      };
      break;
    }
    const before = sim.requests.length;
    const t0 = Date.now();
    let result: FeedRunResult | undefined;
    let failure: string | undefined;
    try {
      result = await handlers.poll();
    } catch (error) {
      result = failedRunOf(error);
      if (result === undefined) failure = `error: ${error instanceof Error ? error.name : 'thrown'}`;
      const text = textOfError(error);
      if (text.includes(capture.token)) tokenSeenIn.push(`a poller error (${failure ?? result?.kind})`);
      capture.note(text);
    }
    const kind = result?.kind ?? failure ?? 'error';
    const asked = sim.requests.slice(before);
    if (asked.length > 0 && asked.every(answeredNoPage)) downRuns.push({ from: t0, to: Date.now() });
    runs.push({
      outcome: kind,
      ms: Date.now() - t0,
      pages: result?.pages ?? 0,
      requests: sim.requests.length - before,
    });
    outcomes[kind] = (outcomes[kind] ?? 0) + 1;
    const drainStarted = Date.now();
    await handlers.drain();
    drainingMs += Date.now() - drainStarted;
    for (const view of await readBudgets(aws, resources.cursorTable, Date.now()).catch(() => [])) {
      budget.maxHoldAheadMs = Math.max(budget.maxHoldAheadMs, view.holdUntil - Date.now());
      budget.maxRate = Math.max(budget.maxRate, view.rate);
    }
    const position = await storedCursorPosition(aws, resources.cursorTable, FEED_ID);
    const progressed = position > furthest;
    if (progressed) furthest = position;
    // A caught-up run went as far as the stream goes, wherever its cursor stands (a repeated page may hand back
    // an older cursor, and following it re-reads without skipping: rule 6); what is left is the quiet that
    // ends the seed, within its budget. Not a stall (seed 647: drained at 40 s, then a repeated page).
    const reachedEnd = progressed || kind === 'caught-up';
    if (reachedEnd) lastProgress = Date.now();
    runsWithoutProgress = reachedEnd || Date.now() < timedOver ? 0 : runsWithoutProgress + 1;
    const nothingNew = kind === 'caught-up' && result?.versionsPublished === 0 && result.quarantined === 0;
    // A run that fetched nothing and ends retry-later (5xx or 429s on the caught-up feed's one request) is no
    // news either way: it neither ends nor breaks the quiet (seed 285 alternated the two until no-progress).
    const nothingFetched = kind === 'retry-later' && (result?.pages ?? 0) === 0;
    quiet = nothingNew ? quiet + 1 : nothingFetched ? quiet : 0;
    if (quiet >= 2) end = { kind: 'drained' };
    // After a 401 the next runs wait out the token's backoff: the same stop. After a stop only an operator
    // resumes (order-over-body-cap), the feed's row is `stopped` and each run of it ends `disabled`: the same stop.
    const stopped =
      kind === 'auth-backoff'
        ? 'auth-failed'
        : kind === 'disabled' && stop.outcome !== ''
          ? stop.outcome
          : kind;
    const documented = stops.has(stopped) && stopped !== 'retry-later';
    // Runs that fail for passing reasons in between (a 5xx, a maintenance page) do not end a stop; progress
    // does, and so does a run that read a page and went on, as three runs in a row make the `StuckCursor` alarm
    // (seed 99: a page repeated twice running ended a run `stuck-cursor`, the next read on; three such, spread
    // over 249 runs of replays after expired cursors, were taken for one stop).
    const wentOn = (result?.pages ?? 0) > 0 && !documented && kind !== 'retry-later';
    if (documented) stop = { outcome: stopped, runs: stop.outcome === stopped ? stop.runs + 1 : 1 };
    else if (progressed || wentOn) stop = { outcome: '', runs: 0 };
    if (stop.runs >= STOP_RUNS) end = { kind: 'stopped', outcome: stop.outcome };
    if (!end && !AT_ONCE.has(kind)) await sleep(idleMs);
  }
  return { end, runs, outcomes, tokenSeenIn, budget };
}

/**
 * The n-th 429's Retry-After as the client reads it, in ms (tools/simulator/faults.ts serves the drawn forms in
 * turn): an HTTP-date at most 2 s more (it rounds up to a second, the partner's Date down); undefined where the
 * client takes its default; a far-future value, over what the client waits.
 */
function partnerRetryAfter({ faults }: Partner): (nth: number) => number | undefined {
  const forms = faults.retryAfterForms?.length ? faults.retryAfterForms : (['seconds', 'http-date'] as const);
  const seconds = (faults.retryAfterSeconds ?? 1) * 1000;
  const ms = {
    seconds,
    'http-date': seconds + 2_000,
    'past-date': 0,
    'far-future-seconds': 10 * YEAR_MS,
    'far-future-date': 10 * YEAR_MS,
    junk: undefined,
    absent: undefined,
  } satisfies Record<RetryAfterForm, number | undefined>;
  return (nth) => ms[forms[nth % forms.length] ?? 'seconds'];
}

const YEAR_MS = 365 * 86_400_000;

function lastHeard(capture: OutputCapture): string {
  const warning = capture.lastWarning();
  return warning ? `last logged: ${warning}` : 'nothing logged';
}

function lastOutcomes(runs: readonly RunRecord[]): string {
  const last = runs.slice(-5).map((run) => run.outcome);
  return last.length > 0 ? `last runs ended ${last.join(', ')}` : 'no run ended';
}

async function storedState(aws: AwsAt, resources: PipelineResources) {
  return {
    orders: await scanOrders(aws, resources.ordersTable),
    history: await historyKeys(aws, resources.historyTable),
    sales: await readSalesLedger(aws.dynamo, resources.ordersTable),
    quarantined: await quarantinedKeys(aws, resources.quarantineBucket),
    deadLettered: await countMessages(aws, resources.ordersDlqUrl),
  };
}
