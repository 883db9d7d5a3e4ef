// The deployed pipeline, run in this process: the real poller and consumer handlers, driven the way
// Lambda drives them on AWS, from the deployed configuration.
//   schedule      the EventBridge rule (rate(1 minute) by default) shortened: the next poller run starts
//                 as soon as the previous one ended and the orders queue is shallow; once a run finds
//                 nothing new, every `idlePollIntervalMs`
//   event source  the deployed mapping (batch size, ReportBatchItemFailures, maximum concurrency) over
//                 the real queue: failed records come back after `retryDelaySeconds` and the queue's own
//                 redrive policy moves them to the DLQ after maxReceiveCount receives
// Both run at once, as on AWS: the consumer drains while the poller fetches. Without `watch` the run
// ends once the partner has nothing more (a poll reached the end of the stream and nothing came after the
// committed cursor: scheduling.ts, decideAtTheEnd) or the feed stopped in a way it cannot get past by itself
// (a documented stop, e.g. a cursor cycle), and the queue is empty (every message applied or dead-lettered).
// A partner that fails (down, 5xx, unreadable, rate-limiting) is waited for, with a backoff, until nothing
// has progressed for `giveUpAfterMs` (scheduling.ts, decideWait); meanwhile the progress snapshot says what
// the poller last reported and when the next run and the give-up are due.
// Each poller invocation's request id names this process (stale-lease.ts), so that a lease left by a
// killed local process is released at once rather than after its expiry.
import type { Logger } from '@aws-lambda-powertools/logger';
import { UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import { buildPoller, type FeedRunResult } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import { failedRunOf, singleFeedBatch, writeFeedRow } from '../harness/single-feed.js';
import { formatDuration } from '../ops/format.js';
import type { LocalAwsClients } from './aws.js';
import { queueDepth } from './data.js';
import type { Deployment } from './deployment.js';
import { type FleetFeedEnd, fleetFeedEnd, runFleet } from './fleet.js';
import { lambdaContext } from './lambda-context.js';
import { DEFAULT_TUNING, type LocalTuning } from './options.js';
import {
  AUTH_FAILED_MESSAGE,
  decideAfterRun,
  decideAtTheEnd,
  decideWait,
  type FinishedRun,
  giveUpAfterOf,
  lastProgressAt,
  mayStartRun,
} from './scheduling.js';
import { type SqsHandler, startEventSourceWorkers } from './sqs-event-source.js';
import { localInvocationId, releaseDeadLease } from './stale-lease.js';

export interface PipelineCounters {
  polls: number;
  pages: number;
  versionsPublished: number;
  applied: number;
  stale: number;
  /** Records the poller quarantined (could not publish). */
  rejected: number;
  /** Records the consumer reported failed (each retry counts). */
  failedMessages: number;
  partnerRetries: number;
  rateLimitWaits: number;
  cursorRecoveries: number;
}

/** How a run ended; `gave-up`: nothing progressed for the give-up time (the partner, most often, was down). */
export type RunOutcome = 'drained' | 'auth-failed' | 'feed-stopped' | 'gave-up' | 'interrupted';

/** A feed whose last run failed: what the poller reported, and when the next run and the give-up are due. */
export interface WaitingFeed {
  feedId: string;
  /** The last failure, as the poller reported it (e.g. retry-later's reason and message). */
  failure: string;
  /** Failed runs in a row. */
  failedRuns: number;
  /** Milliseconds until the next run (0: it is running). */
  nextRunInMs: number;
  /** Milliseconds until local mode gives up if nothing progresses; undefined: it never does (--watch). */
  givesUpInMs: number | undefined;
}

export interface ProgressSnapshot {
  elapsedMs: number;
  counters: PipelineCounters;
  /** Orders queue: waiting + in flight + delayed. */
  queueDepth: number;
  /** Seconds since the feed was last caught up, as the last poller run reported it. */
  lagSeconds: number | undefined;
  lastPoll: string | undefined;
  /** The feeds waiting for the partner (their last run failed), for the progress line. */
  waiting: WaitingFeed[];
}

export interface LocalPipelineOptions {
  aws: LocalAwsClients;
  deployment: Deployment;
  /** Partner API base URL for this run: overrides the deployed PARTNER_BASE_URL in this process. */
  partnerBaseUrl: string;
  /** Keep polling after catching up (ends only with `stop()`, a 401, a documented stop or the give-up time). */
  watch?: boolean;
  /**
   * Give up when nothing progressed (no page committed, no version applied) for this long; failed runs are
   * retried meanwhile after 1, 2, 4… × idlePollIntervalMs, at most 30 s apart. Default: 10 minutes, and
   * never with `watch`.
   */
  giveUpAfterMs?: number;
  /** Keep the deployed log level (INFO) and CloudWatch metrics output instead of WARN and none. */
  verbose?: boolean;
  tuning?: Partial<LocalTuning>;
  onProgress?: (snapshot: ProgressSnapshot) => void;
  /** One-line notes for the user (lease released, run failed, …). */
  note?: (message: string) => void;
  /**
   * A fleet (fleet.ts): these feeds' rows are registered, and the dispatcher drives them as on AWS, instead of a
   * scheduler per deployed feed. The run ends when each has drained or stopped.
   */
  fleet?: { feedIds: readonly string[] };
}

/** One feed of a fleet: how it ended and what its runs did. */
export interface FleetFeedRun {
  feedId: string;
  end: FleetFeedEnd | undefined;
  /** Its last run's outcome (the poller's kind). */
  lastRun: string | undefined;
  polls: number;
  pages: number;
  versionsPublished: number;
  quarantined: number;
  partnerRetries: number;
  rateLimitWaits: number;
  cursorRecoveries: number;
}

/** What a feed's runs add up (FeedRunResult's counts). */
const FLEET_RUN_COUNTS = [
  'pages',
  'versionsPublished',
  'quarantined',
  'partnerRetries',
  'rateLimitWaits',
  'cursorRecoveries',
] as const;

/** A fleet's feed before its first run. */
export function fleetFeedRunOf(feedId: string): FleetFeedRun {
  const counts = Object.fromEntries(FLEET_RUN_COUNTS.map((key) => [key, 0])) as Record<
    (typeof FLEET_RUN_COUNTS)[number],
    number
  >;
  return { feedId, end: undefined, lastRun: undefined, polls: 0, ...counts };
}

export interface LocalPipelineResult {
  outcome: RunOutcome;
  counters: PipelineCounters;
  /** Why the run ended, for auth-failed, feed-stopped and gave-up. */
  detail?: string;
  /** The poller's outcome kind that stopped the feed, for feed-stopped (e.g. stuck-cursor). */
  stoppedBy?: string;
  elapsedMs: number;
  /** A fleet's feeds, in its order. */
  feeds?: FleetFeedRun[];
}

export interface LocalPipeline {
  /** Resolves when the run ends; rejects on an error local mode cannot wait out (e.g. the emulator gone). */
  readonly done: Promise<LocalPipelineResult>;
  /** Stop scheduling, let the current invocations finish; `done` then resolves as interrupted. */
  stop(): void;
  snapshot(): ProgressSnapshot;
  /** The environments the handlers were started with (as deployed, with the local overrides). */
  readonly environments: Readonly<HandlerEnvironments>;
}

export class LocalPipelineError extends Error {
  override readonly name = 'LocalPipelineError';
}

export { AUTH_FAILED_MESSAGE } from './scheduling.js';

/** Each function's environment: its deployed variables plus the local overrides. */
export interface HandlerEnvironments {
  /** Every feed's poller, in the deployment's order. */
  pollers: { feedId: string; env: Record<string, string> }[];
  /** The one poller function's (a fleet's batches) and the dispatcher's. */
  poller: Record<string, string>;
  dispatcher: Record<string, string>;
  consumer: Record<string, string>;
}

/**
 * The handlers' environments: each function's deployed variables (Lambda-only NODE_OPTIONS left out)
 * with the local overrides: PARTNER_BASE_URL of this run, the page cap, and silent logs and no metrics
 * unless verbose. Their own names do not collide; the POWERTOOLS_* ones do, hence one map each.
 */
export function handlerEnvironments(
  options: Pick<LocalPipelineOptions, 'deployment' | 'partnerBaseUrl' | 'verbose'>,
  tuning: LocalTuning,
): HandlerEnvironments {
  const { deployment } = options;
  // Quiet: the handlers print nothing themselves; their warnings and errors become notes (noteLogs).
  const quiet: Record<string, string> = options.verbose
    ? {}
    : { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' };
  const pollers = deployment.pollers.map(({ feedId, function: fn }) => {
    const env: Record<string, string> = {
      ...fn.environment,
      PARTNER_BASE_URL: options.partnerBaseUrl,
      ...quiet,
    };
    // Unset (no cap) or above the local cap: the local cap.
    const deployedPages = Number(env.MAX_PAGES_PER_RUN ?? Number.POSITIVE_INFINITY);
    if (tuning.maxPagesPerRun !== undefined && !(deployedPages <= tuning.maxPagesPerRun)) {
      env.MAX_PAGES_PER_RUN = String(tuning.maxPagesPerRun);
    }
    delete env.NODE_OPTIONS;
    return { feedId, env };
  });
  const consumer: Record<string, string> = { ...deployment.consumer.environment, ...quiet };
  delete consumer.NODE_OPTIONS;
  const dispatcher: Record<string, string> = { ...deployment.dispatcher.environment, ...quiet };
  delete dispatcher.NODE_OPTIONS;
  const poller = pollers[0]?.env ?? {};
  return { pollers, poller, dispatcher, consumer };
}

/**
 * moto runs an enabled SQS event source mapping itself: every SendMessage makes it receive a batch and
 * try to invoke the function, which needs Docker, fails, and so burns receive counts until the messages
 * are dead-lettered (and stalls the serialised emulator meanwhile). Local mode is the event source, so
 * it disables the emulator's copy of the mapping first; only in an emulator on this machine.
 */
async function takeOverEventSource(
  aws: LocalAwsClients,
  deployment: Deployment,
  note: (message: string) => void,
): Promise<void> {
  if (!deployment.eventSource.enabled) return;
  if (!aws.endpoint.loopback) {
    note('not disabling the event source mapping at a non-local endpoint: two consumers may read the queue');
    return;
  }
  await aws.lambda.send(
    new UpdateEventSourceMappingCommand({ UUID: deployment.eventSource.uuid, Enabled: false }),
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The partner client's retry reasons (functions/core/partner/errors.ts, RetryReason) in words; others as named. */
const RETRY_REASONS: Record<string, string> = {
  network: 'partner unreachable',
  'server-error': 'partner answered 5xx',
  unreadable: 'unreadable answers',
  'rate-limited': 'rate-limited (429)',
};

/**
 * The poller reports why a run ended retry-later in one warning carrying the client's `reason`, `statusCode`
 * and `error` (poll-feed.ts, fetchFailure): `report` gets it in words, as a reader of the logs would on AWS.
 * The logger still logs it as before.
 */
function reportRetryLater(logger: Logger, report: (failure: string) => void): void {
  const warn = logger.warn;
  logger.warn = (...args: Parameters<Logger['warn']>) => {
    const attributes = args[1];
    if (
      typeof attributes === 'object' &&
      !(attributes instanceof Error) &&
      typeof attributes.reason === 'string'
    ) {
      const { reason, statusCode, error } = attributes;
      const words =
        reason === 'server-error' && typeof statusCode === 'number'
          ? `partner answered ${statusCode}`
          : (RETRY_REASONS[reason] ?? reason);
      report(typeof error === 'string' ? `${words}: ${error}` : words);
    }
    Reflect.apply(warn, logger, args);
  };
}

/**
 * Without --verbose a handler prints no log line of its own (JSON among local mode's lines is hard to read):
 * each warning or error it logs becomes one of local mode's one-line notes instead (`who`: the function, and
 * the feed when there are several), its message and the error it names, the first time that message comes;
 * repeats are what the counters and the progress line show (--verbose prints every line as deployed).
 */
export function noteLogs(logger: Logger, note: (message: string) => void, who: string): void {
  const seen = new Set<string>();
  for (const level of ['warn', 'error', 'critical'] as const) {
    const log = logger[level];
    logger[level] = (...args: Parameters<Logger['warn']>) => {
      const [input, extra] = args;
      const message = typeof input === 'string' ? input : String(input.message ?? '');
      if (!seen.has(message)) {
        seen.add(message);
        note(`${who}: ${message}${errorOf(extra)}`);
      }
      Reflect.apply(log, logger, args);
    };
  }
}

/** The error a log line's attributes name (an Error, or `error` as text or as { message }), as ": …". */
function errorOf(extra: unknown): string {
  if (extra instanceof Error) return `: ${extra.message}`;
  const error =
    typeof extra === 'object' && extra !== null ? (extra as { error?: unknown }).error : undefined;
  if (typeof error === 'string') return `: ${error}`;
  if (typeof error === 'object' && error !== null && typeof (error as Error).message === 'string') {
    return `: ${(error as Error).message}`;
  }
  return '';
}

/** Why local mode gave up, naming the window and the last run's failure. */
function giveUpDetail(giveUpAfterMs: number, lastFailure: string | undefined): string {
  const waited = `after ${formatDuration(giveUpAfterMs)} without progress (no page committed, no version applied)`;
  // A thrown run is this machine's side (the emulator, most often), a held lease another run's: not the partner.
  const partner = !(lastFailure?.startsWith('failed') || lastFailure === 'ended lease-held');
  const lead = partner ? 'gave up waiting for the partner' : 'gave up';
  return `${lead} ${waited}${lastFailure === undefined ? '' : `; the last run ${lastFailure}`}`;
}

/** What a feed's run adds to the pipeline's counters (the poller's quarantined records are `rejected`). */
function addRunCounts(counters: PipelineCounters, run: FeedRunResult): void {
  counters.pages += run.pages;
  counters.versionsPublished += run.versionsPublished;
  counters.rejected += run.quarantined;
  counters.cursorRecoveries += run.cursorRecoveries;
  counters.partnerRetries += run.partnerRetries;
  counters.rateLimitWaits += run.rateLimitWaits;
}

export function emptyCounters(): PipelineCounters {
  return {
    polls: 0,
    pages: 0,
    versionsPublished: 0,
    applied: 0,
    stale: 0,
    rejected: 0,
    failedMessages: 0,
    partnerRetries: 0,
    rateLimitWaits: 0,
    cursorRecoveries: 0,
  };
}

export async function startLocalPipeline(options: LocalPipelineOptions): Promise<LocalPipeline> {
  const { aws, deployment } = options;
  const tuning: LocalTuning = { ...DEFAULT_TUNING, ...options.tuning };
  const note = options.note ?? (() => undefined);
  const environments = handlerEnvironments(options, tuning);
  // The real handlers, built by their factories from each function's environment (as deployed, with the
  // local overrides) and this process's emulator clients: no process.env, no module state, so several
  // local pipelines can run in one process.
  const consumerTotals = { applied: 0, stale: 0 };
  // A version applied is progress for every feed (scheduling.ts, lastProgressAt).
  let versionAppliedAt: number | undefined;
  const consumerObservability = createObservability('order-feed-consumer', environments.consumer);
  if (!options.verbose) noteLogs(consumerObservability.logger, note, 'consumer');
  const consumer = buildConsumer(aws, loadConsumerConfig(environments.consumer), {
    ...consumerObservability,
    onBatchSettled: (counts) => {
      consumerTotals.applied += counts.applied;
      consumerTotals.stale += counts.stale;
      if (counts.applied > 0) versionAppliedAt = Date.now();
    },
  });
  // The failure each feed's poller reported last (its retry-later warning), for the progress line.
  const reportedFailures = new Map<string, string>();
  // One poller per feed, each scheduled on its own like its EventBridge rule; they share the consumer.
  const feeds = environments.pollers.map(({ feedId, env }, index) => {
    const deployed = deployment.pollers[index];
    if (deployed === undefined) throw new LocalPipelineError(`no deployed feed ${feedId}`);
    // The one poller function on a batch of this one feed, as the dispatcher would send it; an instance per
    // feed, as each feed's scheduler runs its own invocations. The row is written as the initial set says.
    const observability = createObservability('order-feed-poller', env);
    const config = loadPollerConfig(env);
    const handler = buildPoller(aws, config, observability);
    let registered: Promise<void> | undefined;
    const poller = {
      feedId,
      async poll(context: Context): Promise<FeedRunResult> {
        registered ??= writeFeedRow(aws.dynamo, config.cursorTableName, deployed.initial);
        await registered;
        const result = await handler(singleFeedBatch(feedId, context.getRemainingTimeInMillis()), context);
        const [run] = result.feeds;
        if (run === undefined) throw new LocalPipelineError(`the poller ran no feed for ${feedId}`);
        return run;
      },
    };
    reportRetryLater(observability.logger, (failure) => reportedFailures.set(feedId, failure));
    if (!options.verbose) {
      const who = environments.pollers.length > 1 ? `feed ${feedId}: poller` : 'poller';
      noteLogs(observability.logger, note, who);
    }
    return { feedId, deployed: deployed.function, poller };
  });
  type Feed = (typeof feeds)[number];
  const lagByFeed = new Map<string, number>();
  const waitingByFeed = new Map<
    string,
    { failure: string; failedRuns: number; nextRunAt: number; giveUpAt: number | undefined }
  >();
  const giveUpAfterMs = giveUpAfterOf(options.giveUpAfterMs, options.watch === true);
  const startedAt = Date.now();
  const counters = emptyCounters();
  const totalsAtStart = { ...consumerTotals };
  let depth = Number.POSITIVE_INFINITY;
  let lastPoll: string | undefined;
  let stopping = false;

  const snapshot = (): ProgressSnapshot => {
    counters.applied = consumerTotals.applied - totalsAtStart.applied;
    counters.stale = consumerTotals.stale - totalsAtStart.stale;
    const now = Date.now();
    return {
      elapsedMs: Date.now() - startedAt,
      counters: { ...counters },
      queueDepth: Number.isFinite(depth) ? depth : 0,
      // The feed furthest behind speaks for the deployment.
      lagSeconds: lagByFeed.size === 0 ? undefined : Math.max(...lagByFeed.values()),
      lastPoll,
      waiting: [...waitingByFeed].map(([feedId, waiting]) => ({
        feedId,
        failure: waiting.failure,
        failedRuns: waiting.failedRuns,
        nextRunInMs: Math.max(0, waiting.nextRunAt - now),
        givesUpInMs: waiting.giveUpAt === undefined ? undefined : Math.max(0, waiting.giveUpAt - now),
      })),
    };
  };

  const refreshDepth = async (): Promise<number> => {
    depth = (await queueDepth(aws, deployment.queueUrl)).total;
    return depth;
  };

  // ---- schedule: the poller, one run at a time ----------------------------------------------------
  async function invokePoller(feed: Feed): Promise<{ result: FeedRunResult } | { error: unknown }> {
    const context = {
      ...lambdaContext(feed.deployed.name, feed.deployed.timeoutSeconds * 1000),
      // The lease owner's run id: names this process, so a restart can tell that a lease's holder is gone.
      awsRequestId: localInvocationId(),
    };
    try {
      return { result: await feed.poller.poll(context) };
    } catch (error) {
      const failed = failedRunOf(error);
      return failed ? { result: failed } : { error };
    }
  }

  /** Waits until the consumer has drained what a poll published; true if none of it changed the table. */
  async function changedNothing(appliedBefore: number): Promise<boolean> {
    while (!stopping && (await refreshDepth()) > 0) await sleep(100);
    return consumerTotals.applied === appliedBefore;
  }

  type PollerEnd =
    | { kind: 'caught-up' }
    | { kind: 'stopped' }
    | { kind: 'auth-failed'; detail: string }
    | { kind: 'feed-stopped'; stoppedBy: string; detail: string }
    | { kind: 'gave-up'; detail: string };

  /**
   * A feed's poller scheduler: runs its poller one invocation at a time, as decided by scheduling.ts, and
   * gives up once nothing has progressed for `giveUpAfterMs`.
   */
  async function pollerLoop(feed: Feed): Promise<PollerEnd> {
    let notBefore = 0;
    // Failed runs in a row (thrown, or retry-later with nothing fetched): the backoff doubles with each.
    let stalled = 0;
    let pageCommittedAt: number | undefined;
    let lastFailure: string | undefined;
    // Whether the last run was a replay after an expired cursor that brought nothing new (decideAtTheEnd).
    let emptyReplay = false;
    for (;;) {
      while (!stopping && !mayStartRun(Date.now(), notBefore, depth, tuning)) await sleep(50);
      if (stopping) return { kind: 'stopped' };
      const appliedBefore = consumerTotals.applied;
      reportedFailures.delete(feed.feedId);
      const run = await invokePoller(feed);
      counters.polls += 1;
      let finished: FinishedRun;
      if ('error' in run) finished = run;
      else {
        const { result } = run;
        const failure = reportedFailures.get(feed.feedId);
        finished = failure === undefined ? result : { ...result, failure };
        addRunCounts(counters, result);
        lastPoll = result.kind;
        if (result.secondsSinceCaughtUp !== undefined)
          lagByFeed.set(feed.feedId, result.secondsSinceCaughtUp);
        if (result.pages > 0) {
          pageCommittedAt = Date.now();
          stalled = 0;
          waitingByFeed.delete(feed.feedId);
        }
        // Let the consumer see what was just published before deciding whether the queue is shallow.
        if (result.versionsPublished > 0) await refreshDepth().catch(() => undefined);
      }
      const decision = decideAfterRun(finished, stalled, tuning);
      if (decision.action !== 'check-caught-up') emptyReplay = false;
      // The next run's delay, when there is one.
      let delayMs: number;
      switch (decision.action) {
        case 'end-auth-failed':
          return { kind: 'auth-failed', detail: decision.detail };
        case 'end-feed-stopped':
          // The summary's headline says it for one feed; with several it does not say which.
          if (feeds.length > 1) note(`${feedLabel(feed)}${decision.detail}`);
          return { kind: 'feed-stopped', stoppedBy: decision.kind, detail: decision.detail };
        case 'stall':
          stalled += 1;
          lastFailure = decision.why;
          delayMs = decision.delayMs;
          break;
        case 'check-caught-up': {
          if ('error' in run) continue;
          const quiet = run.result.versionsPublished === 0 || (await changedNothing(appliedBefore));
          const next = decideAtTheEnd(run.result, quiet, emptyReplay, tuning, options.watch === true);
          if (next.action === 'end-caught-up') return { kind: 'caught-up' };
          emptyReplay = next.emptyReplay;
          delayMs = next.delayMs;
          break;
        }
        case 'release-dead-lease': {
          const pid = await releaseDeadLease(aws.dynamo, deployment.cursorTable, feed.feedId);
          if (pid !== undefined)
            note(`released the feed lease left by local process ${pid}, which no longer runs`);
          delayMs = pid === undefined ? tuning.idlePollIntervalMs : 0;
          break;
        }
        case 'run-next':
          delayMs = decision.delayMs;
          break;
      }
      if (decision.action !== 'stall' && !('error' in finished) && finished.pages === 0) {
        lastFailure = `ended ${finished.kind}`;
      }
      const now = Date.now();
      const progressAt = lastProgressAt({
        startedAtMs: startedAt,
        pageCommittedAtMs: pageCommittedAt,
        versionAppliedAtMs: versionAppliedAt,
      });
      const wait = decideWait(now, progressAt, delayMs, giveUpAfterMs);
      if (wait.action === 'give-up') {
        const detail = giveUpDetail(giveUpAfterMs ?? 0, lastFailure);
        note(`${feedLabel(feed)}${detail}`);
        return { kind: 'gave-up', detail };
      }
      notBefore = wait.nextRunAtMs;
      if (decision.action === 'stall') {
        const giveUp =
          wait.giveUpAtMs === undefined
            ? ''
            : `, giving up in ${formatDuration(wait.giveUpAtMs - now)} without progress`;
        note(
          `${feedLabel(feed)}poller run ${decision.why} (${stalled} in a row); next run in ${formatDuration(notBefore - now)}${giveUp}`,
        );
        waitingByFeed.set(feed.feedId, {
          failure: decision.why,
          failedRuns: stalled,
          nextRunAt: notBefore,
          giveUpAt: wait.giveUpAtMs,
        });
      }
    }
  }

  const feedLabel = (feed: Feed): string => (feeds.length > 1 ? `feed ${feed.feedId}: ` : '');

  /**
   * Every feed's scheduler at once. A 401, a give-up or an error in one stops the others (on AWS they would
   * go on; locally one partner answers them all); the run is caught up when every feed is.
   */
  async function allPollerLoops(): Promise<PollerEnd> {
    const ends = await Promise.allSettled(
      feeds.map((feed) =>
        pollerLoop(feed).then(
          (end) => {
            if (end.kind === 'auth-failed' || end.kind === 'gave-up') stopping = true;
            return end;
          },
          (error: unknown) => {
            stopping = true;
            throw error;
          },
        ),
      ),
    );
    const failed = ends.find((end) => end.status === 'rejected');
    if (failed) throw failed.reason;
    const values = ends.flatMap((end) => (end.status === 'fulfilled' ? [end.value] : []));
    const authFailed = values.find((end) => end.kind === 'auth-failed');
    if (authFailed) return authFailed;
    const gaveUp = values.find((end) => end.kind === 'gave-up');
    if (gaveUp) return gaveUp;
    if (values.some((end) => end.kind === 'stopped')) return { kind: 'stopped' };
    const feedStopped = values.find((end) => end.kind === 'feed-stopped');
    if (feedStopped) return feedStopped;
    return { kind: 'caught-up' };
  }

  // ---- a fleet: the dispatcher and the batches it starts (fleet.ts) -----------------------------------
  const fleetRuns = new Map<string, FleetFeedRun>(
    (options.fleet?.feedIds ?? []).map((feedId) => [feedId, fleetFeedRunOf(feedId)]),
  );

  /** A handler's warnings and errors as notes, unless verbose (noteLogs). */
  function quietly<T extends { logger: Logger }>(observability: T, who: string): T {
    if (!options.verbose) noteLogs(observability.logger, note, who);
    return observability;
  }

  /** The fleet until each feed drained or stopped; its end in the terms of the per-feed schedulers'. */
  async function fleetLoop(feedIds: readonly string[]): Promise<PollerEnd> {
    let pageCommittedAt: number | undefined;
    const end = await runFleet({
      aws,
      deployment,
      pollerEnv: environments.poller,
      dispatcherEnv: environments.dispatcher,
      feedIds,
      observability: {
        poller: () => quietly(createObservability('order-feed-poller', environments.poller), 'poller'),
        dispatcher: quietly(
          createObservability('order-feed-dispatcher', environments.dispatcher),
          'dispatcher',
        ),
      },
      onRun: (run) => {
        counters.polls += 1;
        addRunCounts(counters, run);
        lastPoll = run.kind;
        if (run.secondsSinceCaughtUp !== undefined) lagByFeed.set(run.feedId, run.secondsSinceCaughtUp);
        if (run.pages > 0) pageCommittedAt = Date.now();
        const feed = fleetRuns.get(run.feedId);
        if (feed === undefined) return;
        feed.lastRun = run.kind;
        feed.end = fleetFeedEnd(run.kind);
        feed.polls += 1;
        for (const key of FLEET_RUN_COUNTS) feed[key] += run[key];
      },
      stopping: () => stopping,
      giveUpAt: () =>
        giveUpAfterMs === undefined
          ? undefined
          : lastProgressAt({
              startedAtMs: startedAt,
              pageCommittedAtMs: pageCommittedAt,
              versionAppliedAtMs: versionAppliedAt,
            }) + giveUpAfterMs,
      note,
    });
    if (end.kind === 'stopped') return end;
    if (end.kind === 'gave-up') {
      const behind = [...fleetRuns.values()].filter((feed) => feed.end === undefined);
      const detail = `gave up after ${formatDuration(giveUpAfterMs ?? 0)} without progress (no page committed, no version applied); ${behind.length} feed(s) not drained, e.g. ${behind
        .slice(0, 3)
        .map((feed) => `${feed.feedId} (last run ${feed.lastRun ?? 'none'})`)
        .join(', ')}`;
      return { kind: 'gave-up', detail };
    }
    // The fleet ends as its worst feed: a refused token, then a documented stop; else it drained.
    const failed = (kind: FleetFeedEnd) => feedIds.filter((feedId) => end.feeds.get(feedId) === kind);
    const refused = failed('auth-failed');
    const stopped = failed('feed-stopped');
    const list = (ids: string[]) =>
      `${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ` and ${ids.length - 5} more` : ''}`;
    if (refused.length > 0) {
      return {
        kind: 'auth-failed',
        detail: `${AUTH_FAILED_MESSAGE} for ${refused.length} feed(s): ${list(refused)}; the other feeds went on`,
      };
    }
    if (stopped.length > 0) {
      const kinds = [...new Set(stopped.map((feedId) => fleetRuns.get(feedId)?.lastRun ?? ''))];
      return {
        kind: 'feed-stopped',
        stoppedBy: kinds.join(', '),
        detail: `${stopped.length} feed(s) stopped (${kinds.join(', ')}): ${list(stopped)}; the other feeds went on`,
      };
    }
    return { kind: 'caught-up' };
  }

  // ---- event source: the consumer, up to `concurrency` batches at once ------------------------------
  const { eventSource } = deployment;
  await takeOverEventSource(aws, deployment, note);
  const consume: SqsHandler = eventSource.reportBatchItemFailures
    ? consumer
    : async (event, context) => {
        // Without ReportBatchItemFailures Lambda ignores the response: a returned batch is deleted whole.
        await consumer(event, context);
        return undefined;
      };
  const concurrency = Math.min(tuning.consumerConcurrency, eventSource.maximumConcurrency ?? 1000);

  const done = (async (): Promise<LocalPipelineResult> => {
    await refreshDepth();
    // Keeps the queue's depth fresh for the scheduler; a progress snapshot for the user every 2 s.
    let monitoring = true;
    let depthTimer: NodeJS.Timeout | undefined;
    const watchDepth = (): void => {
      depthTimer = setTimeout(async () => {
        await refreshDepth().catch(() => undefined);
        if (monitoring) watchDepth();
      }, 250);
    };
    watchDepth();
    const report = options.onProgress;
    const progressTimer = report ? setInterval(() => report(snapshot()), 2000) : undefined;
    const workers = startEventSourceWorkers({
      sqs: aws.sqs,
      queueUrl: deployment.queueUrl,
      consume,
      context: () => lambdaContext(deployment.consumer.name, deployment.consumer.timeoutSeconds * 1000),
      concurrency,
      eventSource: {
        batchSize: Math.min(eventSource.batchSize, 10),
        retryDelaySeconds: tuning.retryDelaySeconds,
        visibilityTimeoutSeconds: tuning.visibilityTimeoutSeconds,
        queueArn: eventSource.queueArn,
      },
      emptyReceiveDelayMs: tuning.emptyReceiveDelayMs,
      onFailed: (count) => {
        counters.failedMessages += count;
      },
      note,
    });
    let outcome: RunOutcome = 'interrupted';
    let detail: string | undefined;
    let stoppedBy: string | undefined;
    try {
      const end = options.fleet ? await fleetLoop(options.fleet.feedIds) : await allPollerLoops();
      // A fleet's 401 ends one feed, not the run: the others' versions are applied before the summary.
      const fleetRefused = options.fleet !== undefined && end.kind === 'auth-failed';
      if ((end.kind === 'auth-failed' && !fleetRefused) || end.kind === 'gave-up') {
        outcome = end.kind;
        detail = end.detail;
      } else if (end.kind === 'caught-up' || end.kind === 'feed-stopped' || fleetRefused) {
        // What was published before the end (or the stop) is applied before the summary.
        while (!stopping) {
          if ((await refreshDepth()) === 0) {
            outcome = end.kind === 'caught-up' ? 'drained' : end.kind;
            break;
          }
          await sleep(250);
        }
        if (end.kind === 'feed-stopped' || end.kind === 'auth-failed') detail = end.detail;
        if (end.kind === 'feed-stopped') stoppedBy = end.stoppedBy;
      }
    } finally {
      monitoring = false;
      clearTimeout(depthTimer);
      clearInterval(progressTimer);
      await workers.stop();
    }
    return {
      outcome,
      counters: snapshot().counters,
      elapsedMs: Date.now() - startedAt,
      ...(detail === undefined ? {} : { detail }),
      ...(stoppedBy === undefined ? {} : { stoppedBy }),
      ...(options.fleet ? { feeds: [...fleetRuns.values()] } : {}),
    };
  })();

  return {
    done,
    stop() {
      stopping = true;
    },
    snapshot,
    environments,
  };
}
