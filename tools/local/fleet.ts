// A fleet of feeds in local mode (`npm start -- --feeds N`): N feeds registered as rows of the registry at
// runtime, polled as the deployed stack polls them. The dispatcher's handler runs in this process on its
// rule's schedule (every minute) and on every dispatch request a poller makes; each batch it starts is a
// poller invocation run in this process at once (the poller's asynchronous invoke), several side by side,
// each in an instance of its own as Lambda runs concurrent invocations in containers of their own.
//   fleetPlan      the feeds: the generated feed's vendors dealt over N feeds, FEEDS_PER_TOKEN feeds a token
//   registerFleet  tokens into SSM, rows into the registry, the deployment's initial feeds paused
//   runFleet       dispatcher and pollers until every feed has drained or stopped
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import type { BatchEvent } from '../../functions/core/fleet/dispatch.js';
import { type FeedConfig, parseFeedConfig } from '../../functions/core/fleet/feed-config.js';
import type { FunctionMetrics } from '../../functions/core/observability/metric-names.js';
import { buildDispatcher } from '../../functions/dispatcher/build-dispatcher.js';
import { loadDispatcherConfig } from '../../functions/dispatcher/config.js';
import { buildPoller, type FeedRunResult, PollRunFailedError } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import { writeFeedRow } from '../harness/single-feed.js';
import { DEFAULT_VENDORS, generatedVendorIds } from '../simulator/generated-feed.js';
import type { LocalAwsClients } from './aws.js';
import { type Deployment, storeToken } from './deployment.js';
import { lambdaContext } from './lambda-context.js';
import { localInvocationId } from './stale-lease.js';

/** Feeds that read with one token parameter (so with one request budget), at most. */
export const FEEDS_PER_TOKEN = 4;
export const MAX_FLEET_FEEDS = 1000;

export interface FleetFeed {
  feedId: string;
  config: FeedConfig;
  /** Reads with a token the partner refuses (`--revoked-token-feeds`): its runs end 401. */
  revoked: boolean;
}

export interface FleetPlan {
  feeds: FleetFeed[];
  /** Token parameter → the token stored in it. */
  tokens: Map<string, string>;
  /** Vendors of the generated feed the fleet reads (the simulator serves that many). */
  vendors: number;
}

/**
 * `n` feeds `feed-001` … over the generated feed's vendors (max(5, n) of them, dealt round-robin: distinct
 * sets that together read every vendor), FEEDS_PER_TOKEN feeds to a token parameter; then `revoked` feeds
 * `revoked-1` … reading the vendors of feed-001 … again with a token parameter whose token the partner refuses.
 * Every token comes from `newToken`; the caller lets the simulator accept the good ones.
 */
export function fleetPlan(
  n: number,
  revoked: number,
  tokenParameterPath: string,
  newToken: () => string,
): FleetPlan {
  const vendors = Math.max(DEFAULT_VENDORS, n);
  const vendorIds = generatedVendorIds(vendors);
  const width = Math.max(3, String(n).length);
  const tokens = new Map<string, string>();
  const parameter = (name: string) => {
    const key = `${tokenParameterPath.replace(/\/?$/, '/')}${name}`;
    if (!tokens.has(key)) tokens.set(key, newToken());
    return key;
  };
  const feeds: FleetFeed[] = Array.from({ length: n }, (_, index) => ({
    feedId: `feed-${String(index + 1).padStart(width, '0')}`,
    config: parseFeedConfig({
      tokenParameterName: parameter(`fleet-token-${Math.floor(index / FEEDS_PER_TOKEN) + 1}`),
      vendorIds: vendorIds.filter((_, vendor) => vendor % n === index),
    }),
    revoked: false,
  }));
  for (let index = 0; index < revoked; index += 1) {
    feeds.push({
      feedId: `revoked-${index + 1}`,
      config: parseFeedConfig({
        tokenParameterName: parameter('fleet-token-revoked'),
        vendorIds: feeds[index % n]?.config.vendorIds,
      }),
      revoked: true,
    });
  }
  return { feeds, tokens, vendors };
}

/** The tokens the partner should accept (every one but the revoked feeds'). */
export function acceptedTokens(plan: FleetPlan): string[] {
  const refused = new Set(plan.feeds.filter((feed) => feed.revoked).map((f) => f.config.tokenParameterName));
  return [...plan.tokens].filter(([name]) => !refused.has(name)).map(([, token]) => token);
}

/**
 * Stores the tokens in the emulator's SSM (SecureString) and writes each feed's row through the registry
 * (created, or its configuration replaced and the feed enabled: the plan is what runs); the deployment's
 * initial feeds that are not in the plan are paused, so only the fleet is polled (they keep their cursors).
 */
export async function registerFleet(
  aws: LocalAwsClients,
  deployment: Deployment,
  plan: FleetPlan,
): Promise<void> {
  for (const [name, token] of plan.tokens) await storeToken(aws, name, token);
  const ids = new Set(plan.feeds.map((feed) => feed.feedId));
  const rows = [
    ...deployment.pollers
      .filter(({ feedId }) => !ids.has(feedId))
      .map(({ initial }) => ({ ...initial, state: 'paused' as const })),
    ...plan.feeds.map(({ feedId, config }) => ({ feedId, config, state: 'enabled' as const })),
  ];
  // A few at a time: moto serialises its requests anyway.
  for (let start = 0; start < rows.length; start += 10) {
    await Promise.all(
      rows.slice(start, start + 10).map((row) => writeFeedRow(aws.dynamo, deployment.cursorTable, row)),
    );
  }
}

/** How a feed of the fleet ended. */
export type FleetFeedEnd = 'drained' | 'auth-failed' | 'feed-stopped';

/** The outcomes after which a feed waits for an operator (or a new token): it is done for this run. */
const STOPPED = new Set([
  'stuck-cursor',
  'missing-next-page-id',
  'order-over-body-cap',
  'config-invalid',
  'disabled',
  'unregistered',
]);

/** A feed's end from its last run's outcome; undefined: it goes on (behind, or waiting to be retried). */
export function fleetFeedEnd(kind: string | undefined): FleetFeedEnd | undefined {
  if (kind === 'caught-up') return 'drained';
  if (kind === 'auth-failed' || kind === 'auth-backoff') return 'auth-failed';
  return kind !== undefined && STOPPED.has(kind) ? 'feed-stopped' : undefined;
}

export interface FleetRunOptions {
  aws: LocalAwsClients;
  deployment: Deployment;
  /** The poller's and the dispatcher's environments, as deployed with the local overrides. */
  pollerEnv: Record<string, string>;
  dispatcherEnv: Record<string, string>;
  /** The feeds this run waits for. */
  feedIds: readonly string[];
  observability: {
    poller: () => { logger: Logger; metrics: FunctionMetrics };
    dispatcher: { logger: Logger; metrics: FunctionMetrics };
  };
  /** Each feed's run, as a poller invocation reports it. */
  onRun: (run: FeedRunResult) => void;
  stopping: () => boolean;
  /** When the run should give up (nothing progressed for the give-up time); undefined: never. */
  giveUpAt: () => number | undefined;
  note: (message: string) => void;
}

export type FleetEnd =
  | { kind: 'ended'; feeds: Map<string, FleetFeedEnd> }
  | { kind: 'stopped' }
  | { kind: 'gave-up' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs the dispatcher (at once, on its rule's schedule and on each request) and the poller batches it
 * starts, until every feed of `feedIds` has ended (fleetFeedEnd) with no dispatch and no batch running.
 */
export async function runFleet(options: FleetRunOptions): Promise<FleetEnd> {
  const { aws, deployment, note } = options;
  const registry = new DynamoFeedRegistry(aws.dynamo, deployment.cursorTable);
  const pollerConfig = loadPollerConfig(options.pollerEnv);
  const last = new Map<string, string>();
  let running = 0;
  let failure: { error: unknown } | undefined;

  // Warm poller instances, reused as Lambda reuses a container once its invocation ended.
  type Poller = ReturnType<typeof buildPoller>;
  const idle: Poller[] = [];
  const dispatchRequests = {
    request: async (requestedAt: number, by: string) => {
      dispatch({ dispatchRequest: { requestedAt, by } });
    },
    end: (batchId: string) => registry.endBatch(batchId),
  };
  const pollerInstance = (): Poller =>
    idle.pop() ?? buildPoller(aws, pollerConfig, { ...options.observability.poller(), dispatchRequests });

  const record = (runs: readonly FeedRunResult[]) => {
    for (const run of runs) {
      last.set(run.feedId, run.kind);
      options.onRun(run);
    }
  };

  /** The poller's asynchronous invoke: on its way at once, run here beside the others. */
  const startPoller = async (event: BatchEvent): Promise<void> => {
    running += 1;
    const poller = pollerInstance();
    const context: Context = {
      ...lambdaContext(deployment.poller.name, deployment.poller.timeoutSeconds * 1000),
      awsRequestId: localInvocationId(),
    };
    void poller(event, context)
      .then(
        (result) => record(result.feeds),
        (error: unknown) => {
          // A feed that failed (a 401, a lost lease) fails the invocation; the others' runs are in it.
          if (error instanceof PollRunFailedError) record(error.result.feeds);
          else failure ??= { error };
        },
      )
      .finally(() => {
        idle.push(poller);
        running -= 1;
      });
  };

  const dispatcher = buildDispatcher(
    aws,
    loadDispatcherConfig(options.dispatcherEnv, options.deployment.initialFeedsText),
    {
      ...options.observability.dispatcher,
      startPoller,
      // Local mode has the whole machine's concurrency: maxConcurrentPollers as deployed.
      unreservedConcurrency: async () => undefined,
    },
  );
  function dispatch(event: unknown): void {
    running += 1;
    const context: Context = {
      ...lambdaContext(deployment.dispatcher.name, deployment.dispatcher.timeoutSeconds * 1000),
      awsRequestId: localInvocationId(),
    };
    void dispatcher(event, context)
      .catch((error: unknown) => {
        // The next tick (or request) dispatches again, as on AWS.
        note(`dispatch failed: ${error instanceof Error ? error.message : String(error)}`);
      })
      .finally(() => {
        running -= 1;
      });
  }

  // The rule's first tick now, then at its rate.
  dispatch({ source: 'local.schedule' });
  const tick = setInterval(
    () => dispatch({ source: 'local.schedule' }),
    deployment.schedule.intervalMs ?? 60_000,
  );
  try {
    for (;;) {
      await sleep(100);
      if (failure) throw failure.error;
      if (options.stopping()) {
        while (running > 0) await sleep(50);
        return { kind: 'stopped' };
      }
      const ends = new Map(options.feedIds.map((id) => [id, fleetFeedEnd(last.get(id))]));
      if (running === 0 && [...ends.values()].every((end) => end !== undefined)) {
        return { kind: 'ended', feeds: ends as Map<string, FleetFeedEnd> };
      }
      const giveUpAt = options.giveUpAt();
      if (giveUpAt !== undefined && Date.now() >= giveUpAt) {
        while (running > 0) await sleep(50);
        return { kind: 'gave-up' };
      }
    }
  } finally {
    clearInterval(tick);
  }
}
