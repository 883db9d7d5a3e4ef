// The one wiring of the dispatcher (functions/README.md, "Dispatcher"). Each run: 1. takes the dispatch lock
// (held: the holder runs once more; a request an earlier scan answered: nothing to do) 2. scans the registry
// 3. seeds the initial set's missing rows 4. plans (core/fleet/dispatch.ts) 5. invokes the poller
// asynchronously with each batch 6. releases the lock with the batches on their way and the feeds left
// waiting 7. publishes the fleet's gauges; then again while requests came in meanwhile and time is left.
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { Context } from 'aws-lambda';
import { type DispatchLock, DynamoFeedRegistry } from '../core/adapters/dynamo-feed-registry.js';
import { invokeAsync, unreservedConcurrency } from '../core/adapters/lambda-invoke.js';
import { tokenParameterVersion } from '../core/adapters/ssm-token.js';
import {
  type BatchEvent,
  batchEventOf,
  type DispatchPlan,
  dispatchRequestOf,
  type FeedRow,
  planDispatch,
} from '../core/fleet/dispatch.js';
import { FLEET_GAUGES, type FunctionMetrics } from '../core/observability/metric-names.js';
import { NO_METRICS } from '../core/observability/powertools.js';
import { span, tracer } from '../core/observability/tracer.js';
import type { DispatcherConfig } from './config.js';

export interface DispatcherClients {
  dynamo: DynamoDBClient;
  lambda: LambdaClient;
  ssm: SSMClient;
}

/** What a dispatch reads and writes, each replaceable (tests, local mode: the poller in this process). */
export interface DispatcherPorts {
  registry: Pick<DynamoFeedRegistry, 'scan' | 'seedMissing' | 'lockDispatch' | 'unlockDispatch'>;
  /** Starts the poller with one batch (AWS: an asynchronous invoke); resolves once it is on its way. */
  startPoller(event: BatchEvent): Promise<void>;
  /** The token parameter's current version (never its value); undefined: unknown. */
  tokenVersion(parameterName: string): Promise<number | undefined>;
  /** Concurrent executions the account leaves unreserved; undefined: unknown. */
  unreservedConcurrency(): Promise<number | undefined>;
}

export interface DispatcherOverrides extends Partial<DispatcherPorts> {
  logger?: Logger;
  metrics?: FunctionMetrics;
  now?: () => number;
}

export interface DispatchResult {
  /** dispatched: at least one round ran; held: another dispatcher runs (it runs once more); redundant: a later scan saw it. */
  outcome: 'dispatched' | 'held' | 'redundant';
  rounds: number;
  /** Batches started and their feeds, over all rounds. */
  batches: number;
  feeds: number;
  /** Due feeds the last round left waiting (the budget was spent). */
  waiting: number;
  seeded: string[];
}

/** A round starts only with this much of the invocation left (a scan of thousands of rows and the invokes). */
const ROUND_RESERVE_MS = 10_000;
/** The account's unreserved concurrency is read at most this often (quotas change rarely). */
const ACCOUNT_CHECK_EVERY_MS = 10 * 60_000;

export class DispatchFailedError extends Error {
  constructor(readonly failedBatches: number) {
    super(
      `dispatch failed to start ${failedBatches} poller batch(es); their feeds wait for the next dispatch`,
    );
    this.name = 'DispatchFailedError';
  }
}

export function buildDispatcher(
  clients: DispatcherClients,
  config: DispatcherConfig,
  overrides: DispatcherOverrides = {},
): (event: unknown, context: Context) => Promise<DispatchResult> {
  const logger = overrides.logger ?? new Logger({ serviceName: 'order-feed-dispatcher' });
  const metrics = overrides.metrics ?? NO_METRICS;
  const now = overrides.now ?? Date.now;
  const ports: DispatcherPorts = {
    registry: overrides.registry ?? new DynamoFeedRegistry(clients.dynamo, config.cursorTableName),
    startPoller:
      overrides.startPoller ?? ((event) => invokeAsync(clients.lambda, config.pollerFunctionName, event)),
    tokenVersion: overrides.tokenVersion ?? ((name) => tokenParameterVersion(clients.ssm, name)),
    unreservedConcurrency: overrides.unreservedConcurrency ?? (() => unreservedConcurrency(clients.lambda)),
  };
  let account: { checkedAt: number; unreserved: number | undefined } | undefined;

  /** maxConcurrentPollers, and never more than the configured share of what the account leaves unreserved. */
  async function pollerBudget(at: number): Promise<number> {
    const configured = config.dispatch.maxConcurrentPollers;
    if (account === undefined || at - account.checkedAt >= ACCOUNT_CHECK_EVERY_MS) {
      let unreserved: number | undefined;
      try {
        unreserved = await ports.unreservedConcurrency();
      } catch (error) {
        logger.warn('could not read the account concurrency; keeping maxConcurrentPollers', {
          maxConcurrentPollers: configured,
          error: messageOf(error),
        });
      }
      account = { checkedAt: at, unreserved };
    }
    const { unreserved } = account;
    if (unreserved === undefined) return configured;
    return Math.max(1, Math.min(configured, Math.floor(unreserved * config.accountConcurrencyShare)));
  }

  /** Versions of the token parameters of feeds waiting out a 401 backoff (a new one ends it at once). */
  async function tokenVersions(rows: readonly FeedRow[], at: number): Promise<Map<string, number>> {
    const names = new Set(
      rows
        .filter((row) => row.authRetryNotBefore !== undefined && row.authRetryNotBefore > at)
        .flatMap((row) => (row.tokenParameterName === undefined ? [] : [row.tokenParameterName])),
    );
    const versions = new Map<string, number>();
    await Promise.all(
      [...names].map(async (name) => {
        try {
          const version = await ports.tokenVersion(name);
          if (version !== undefined) versions.set(name, version);
        } catch (error) {
          // Its feeds keep their backoff (the poller would read the version again anyway).
          logger.warn('could not read a token parameter version', {
            parameter: name,
            error: messageOf(error),
          });
        }
      }),
    );
    return versions;
  }

  /** Steps 2 to 7 under the lock; returns whether a request came in meanwhile (run once more). */
  async function dispatchOnce(
    lock: DispatchLock,
    owner: string,
    at: number,
    dispatcher: string,
    result: DispatchResult,
  ): Promise<boolean> {
    let plan: DispatchPlan;
    const failed = new Set<string>();
    try {
      let rows = await ports.registry.scan();
      const seeded = await ports.registry.seedMissing(config.initialFeeds, rows, at);
      if (seeded.length > 0) {
        metrics.count('FeedsSeeded', seeded.length);
        logger.info('registered the initial set’s missing feeds', { seeded });
        result.seeded.push(...seeded);
        rows = await ports.registry.scan();
      }
      plan = planDispatch({
        rows,
        now: at,
        dispatchId: at.toString(36),
        inFlight: lock.inFlight,
        ended: lock.ended,
        tokenVersions: await tokenVersions(rows, at),
        settings: { ...config.dispatch, maxConcurrentPollers: await pollerBudget(at) },
      });
    } catch (error) {
      // The lock goes back as it was found: the next dispatch is not held up for the lock's lifetime.
      await ports.registry.unlockDispatch(owner, lock.inFlight, 0).catch(() => undefined);
      throw error;
    }
    const { sliceMs } = plan;
    await Promise.all(
      plan.batches.map(async (batch) => {
        try {
          await ports.startPoller(batchEventOf(batch, at, sliceMs, dispatcher));
        } catch (error) {
          failed.add(batch.batchId);
          metrics.count('PollerInvokeFailures');
          logger.error('could not start a poller batch; its feeds wait for the next dispatch', {
            batchId: batch.batchId,
            feeds: batch.feedIds.length,
            error: messageOf(error),
          });
        }
      }),
    );
    // A batch that did not start is not on its way, and its feeds wait (pollers that end ask for a dispatch).
    const started = plan.batches.filter((batch) => !failed.has(batch.batchId));
    const notStarted = plan.batches.length - started.length;
    const feedsOf = (batches: typeof started) =>
      batches.reduce((sum, batch) => sum + batch.feedIds.length, 0);
    const waiting = plan.waiting.length + feedsOf(plan.batches) - feedsOf(started);
    const again = await ports.registry.unlockDispatch(
      owner,
      plan.inFlight.filter((batch) => !failed.has(batch.batchId)),
      waiting,
      lock.ended,
    );
    result.batches += started.length;
    result.feeds += feedsOf(started);
    result.waiting = waiting;
    for (const [key, name] of Object.entries(FLEET_GAUGES))
      metrics.count(name, plan.gauges[key as keyof typeof FLEET_GAUGES]);
    metrics.publish();
    logger.info('dispatched', {
      dispatchId: at.toString(36),
      batches: started.length,
      feedsDispatched: feedsOf(started),
      sliceMs,
      waiting,
      gauges: plan.gauges,
    });
    if (notStarted > 0) throw new DispatchFailedError(notStarted);
    return again;
  }

  async function dispatch(event: unknown, context: Context): Promise<DispatchResult> {
    const result: DispatchResult = {
      outcome: 'dispatched',
      rounds: 0,
      batches: 0,
      feeds: 0,
      waiting: 0,
      seeded: [],
    };
    // The schedule's tick (or any other event) dispatches now; a request only if no later scan answered it.
    let requestedAt = dispatchRequestOf(event)?.requestedAt ?? now();
    for (;;) {
      const at = now();
      const lock = await ports.registry.lockDispatch(
        context.awsRequestId,
        at,
        context.getRemainingTimeInMillis(),
        requestedAt,
      );
      if (lock === 'held' || lock === 'redundant') {
        if (result.rounds === 0) result.outcome = lock;
        logger.info(
          lock === 'held'
            ? 'another dispatch runs; it runs once more for this one'
            : 'a later dispatch has already seen this request; nothing to do',
          { requestedAt: new Date(requestedAt).toISOString() },
        );
        return result;
      }
      result.rounds += 1;
      const again = await dispatchOnce(lock, context.awsRequestId, at, context.invokedFunctionArn, result);
      if (!again) return result;
      if (context.getRemainingTimeInMillis() < ROUND_RESERVE_MS) {
        // The request stays noted on the lock item: the next tick (or request) dispatches.
        logger.warn('a dispatch was requested meanwhile, but this invocation has no time left for it');
        return result;
      }
      requestedAt = now();
    }
  }

  return async (event, context) => {
    logger.addContext(context);
    return span('## dispatch', { runId: context.awsRequestId }, async (subsegment) => {
      tracer?.annotateColdStart();
      tracer?.addServiceNameAnnotation();
      try {
        const result = await dispatch(event, context);
        subsegment?.addMetadata('outcome', result.outcome);
        subsegment?.addMetadata('batches', result.batches);
        return result;
      } catch (error) {
        if (!(error instanceof DispatchFailedError))
          logger.error('dispatch failed; the next tick dispatches again', { error: messageOf(error) });
        throw error;
      }
    });
  };
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
