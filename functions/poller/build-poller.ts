// The one wiring of adapters into pollFeed's ports, for a batch of feeds per invocation (functions/README.md,
// "Poller"): 1. read the batch's items (one read) 2. poll every feed at once, each with its own lease, cursor
// and settings from its row, for at most the batch's slice, parsing one page at a time in the invocation
// 3. ask the dispatcher for a dispatch when a feed is behind or feeds wait. A failed feed is thrown at the
// end (Lambda counts an error), never before the others are done.
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { Context } from 'aws-lambda';
import type { Agent } from 'undici';
import { DynamoCursorStore } from '../core/adapters/dynamo-cursor-store.js';
import { DynamoFeedRegistry, FeedRegistryConflictError } from '../core/adapters/dynamo-feed-registry.js';
import { budgetItemKey, DynamoRequestBudgetStore } from '../core/adapters/dynamo-request-budget.js';
import { invokeAsync } from '../core/adapters/lambda-invoke.js';
import { S3Quarantine } from '../core/adapters/s3-quarantine.js';
import { SqsFanoutPublisher } from '../core/adapters/sqs-fanout-publisher.js';
import { SsmTokenProvider } from '../core/adapters/ssm-token.js';
import { type BatchEvent, batchOf, type DispatchRequest, leftBehind } from '../core/fleet/dispatch.js';
import { FeedConfigError, parseFeedConfig } from '../core/fleet/feed-config.js';
import {
  noCounts,
  oneAtATime,
  type PollDeps,
  type PollOutcome,
  type PollOutcomeKind,
  pollFeed,
  pollSettingsOf,
} from '../core/ingest/poll-feed.js';
import type {
  DispatchRequests,
  FeedItem,
  FeedStates,
  PollSettings,
  TokenParameter,
} from '../core/ingest/ports.js';
import { RequestBudget } from '../core/ingest/request-budget.js';
import type { FunctionMetrics } from '../core/observability/metric-names.js';
import { NO_METRICS } from '../core/observability/powertools.js';
import { span, tracer } from '../core/observability/tracer.js';
import { withRequestBudget } from '../core/partner/budgeted-dispatcher.js';
import { createPartnerAgent, createPartnerClient } from '../core/partner/client.js';
import type { PartnerApi } from '../core/partner/types.js';
import type { PollerConfig } from './config.js';

export interface PollerClients {
  dynamo: DynamoDBClient;
  sqs: SQSClient;
  s3: S3Client;
  ssm: SSMClient;
  /** Asks the dispatcher (its ARN in the batch event) for a dispatch; none: the poller never asks. */
  lambda?: LambdaClient;
  /** The request budget's own client, with few retries (each call also has a deadline); default `dynamo`. */
  budgetDynamo?: DynamoDBClient;
}

/** What a caller replaces: a port, the log and metrics sinks (default: INFO logs, no metrics), the clock. */
export interface PollerOverrides
  extends Partial<Pick<PollDeps, 'cursorStore' | 'publisher' | 'quarantine' | 'sleep' | 'feedStates'>> {
  /** The partner API of a feed (default: the client on its base URL and token, through its token's budget). */
  partner?: (settings: PollSettings) => PartnerApi;
  /** A token parameter read afresh after a 401 (default: SSM). */
  tokens?: (parameterName: string) => TokenParameter;
  /** Where the poller asks for a dispatch (default: the batch's dispatcher, invoked asynchronously). */
  dispatchRequests?: DispatchRequests;
  logger?: Logger;
  metrics?: FunctionMetrics;
  now?: () => number;
  /** False: per-feed pacing only, no request budget shared with the other feeds (the bench's comparison). */
  shareBudget?: boolean;
}

/** One feed's run in a batch: pollFeed's outcome, or `error` with what was thrown. */
export type FeedRunResult = PollOutcome & {
  feedId: string;
  error?: { name: string; message: string; code?: string | undefined };
};
/** What an invocation returns: each feed's run, and whether it asked for a dispatch. */
export interface PollResult {
  batchId: string;
  feeds: FeedRunResult[];
  dispatchRequested: boolean;
}

/** A batch in which a feed failed (a 401, a lost lease, an error): Lambda counts the invocation an error. */
export class PollRunFailedError extends Error {
  constructor(readonly result: PollResult) {
    const failed = result.feeds.filter((feed) => feed.failed).map((feed) => `${feed.feedId} ${feed.kind}`);
    super(`poll run failed: ${failed.join(', ')}`);
    this.name = 'PollRunFailedError';
  }
}

export function buildPoller(
  clients: PollerClients,
  config: PollerConfig,
  overrides: PollerOverrides = {},
): (event: unknown, context: Context) => Promise<PollResult> {
  const logger = overrides.logger ?? new Logger({ serviceName: 'order-feed-poller' });
  const metrics = overrides.metrics ?? NO_METRICS;
  const now = overrides.now ?? Date.now;
  const cursorStore = overrides.cursorStore ?? new DynamoCursorStore(clients.dynamo, config.cursorTableName);
  const registry = new DynamoFeedRegistry(clients.dynamo, config.cursorTableName);
  const feedStates: FeedStates = overrides.feedStates ?? {
    stop: (feedId, reason, at) =>
      registry.setState(feedId, 'stopped', at, reason).catch((error: unknown) => {
        // Paused or removed by an operator meanwhile: that state stands.
        if (!(error instanceof FeedRegistryConflictError)) throw error;
      }),
  };
  const shared = {
    log: logger,
    metrics,
    now,
    cursorStore,
    feedStates,
    publisher:
      overrides.publisher ??
      new SqsFanoutPublisher(clients.sqs, [
        config.ordersQueueUrl,
        ...Object.values(config.downstreamQueueUrls),
      ]),
    quarantine: overrides.quarantine ?? new S3Quarantine(clients.s3, config.quarantineBucketName),
    ...(overrides.sleep ? { sleep: overrides.sleep } : {}),
  };

  // Kept across warm invocations: a token's cache, its budget and a client per base URL, one Agent.
  const tokenProviders = new Map<string, SsmTokenProvider>();
  const budgets = new Map<string, RequestBudget>();
  const partners = new Map<string, PartnerApi>();
  let agent: Agent | undefined;
  const tokenProvider = (name: string) => {
    const provider = tokenProviders.get(name) ?? new SsmTokenProvider(clients.ssm, name);
    tokenProviders.set(name, provider);
    return provider;
  };
  const tokensOf = overrides.tokens ?? tokenProvider;

  /** A token's request budget, shared by its feeds in this process and, through its item, by every process. */
  function budgetOf(tokenParameterName: string): RequestBudget {
    let budget = budgets.get(tokenParameterName);
    if (budget) return budget;
    budget = new RequestBudget({
      store: new DynamoRequestBudgetStore(clients.budgetDynamo ?? clients.dynamo, config.cursorTableName),
      key: budgetItemKey(tokenParameterName),
      cap: config.partnerRequestsPerSecond,
      // The feeds go on without the budget (their own pace and the client's 429 handling still hold).
      onStoreError: (error) =>
        logger.warn('request budget unavailable; this request is not paced with the other feeds', {
          tokenParameter: tokenParameterName,
          error: error instanceof Error ? error.message : String(error),
        }),
      onLongHold: ({ clamped, askedMs, heldMs, until, retryAfter, date }) => {
        metrics.count('LongRateLimitHolds');
        const what = clamped ? 'longer than the longest hold; holding for the longest' : 'over a minute';
        logger.warn(`partner API asked every feed on the token to wait ${what}`, {
          tokenParameter: tokenParameterName,
          askedMs,
          heldMs,
          holdUntil: new Date(until).toISOString(),
          retryAfter,
          partnerDate: date,
        });
      },
    });
    budgets.set(tokenParameterName, budget);
    return budget;
  }

  /** Every partner request taken from the token's request budget, shared by the feeds (a cursor table item). */
  function partnerOf(settings: PollSettings): PartnerApi {
    if (overrides.partner) return overrides.partner(settings);
    const { tokenParameterName, partnerBaseUrl } = settings;
    const key = `${tokenParameterName}\u0000${partnerBaseUrl}`;
    let partner = partners.get(key);
    if (partner) return partner;
    agent ??= createPartnerAgent();
    const provider = tokenProvider(tokenParameterName);
    partner = createPartnerClient({
      baseUrl: partnerBaseUrl,
      token: () => provider.token(),
      arrayEncoding: config.arrayQueryEncoding,
      maxBodyBytes: config.maxPageBodyBytes,
      dispatcher:
        overrides.shareBudget === false ? agent : withRequestBudget(agent, budgetOf(tokenParameterName)),
    });
    partners.set(key, partner);
    return partner;
  }

  /** The default: the batch's dispatcher, invoked asynchronously; the batch's end write reads the feeds waiting. */
  function dispatchRequestsOf(batch: BatchEvent['batch']): DispatchRequests | undefined {
    if (overrides.dispatchRequests) return overrides.dispatchRequests;
    const { dispatcher } = batch;
    if (dispatcher === undefined || !clients.lambda) return undefined;
    const lambda = clients.lambda;
    return {
      request: (requestedAt, by) =>
        invokeAsync(lambda, dispatcher, { dispatchRequest: { requestedAt, by } } satisfies DispatchRequest),
      end: (batchId) => registry.endBatch(batchId),
    };
  }

  async function pollOne(
    feedId: string,
    item: FeedItem | undefined,
    run: { runId: string; batch: BatchEvent['batch']; startedAt: number; remainingMs: number },
    pageTurns: ReturnType<typeof oneAtATime>,
  ): Promise<FeedRunResult> {
    const skipped = (kind: PollOutcomeKind): FeedRunResult => ({
      feedId,
      kind,
      failed: false,
      ...noCounts(),
      secondsSinceCaughtUp: undefined,
    });
    const dispatch = { batchId: run.batch.batchId, dispatchedAt: run.batch.dispatchedAt };
    if (item?.config === undefined) {
      logger.warn('the feed has no registry row; nothing to poll', { feedId });
      return skipped('unregistered');
    }
    if (item.feedState !== 'enabled') {
      logger.info(`the feed is ${item.feedState}; this run does nothing`, { feedId });
      return skipped('disabled');
    }
    let settings: PollSettings;
    try {
      settings = pollSettingsOf(feedId, parseFeedConfig(item.config), config);
    } catch (error) {
      if (!(error instanceof FeedConfigError)) throw error;
      const stopReason = `the feed's configuration on its row is invalid (${error.message}); fix it with ops feeds set`;
      logger.error('the feed’s configuration on its row is invalid; nothing polled', {
        feedId,
        error: error.message,
      });
      await cursorStore
        .record(feedId, item.state.revision, { outcome: 'config-invalid', at: now(), dispatch, stopReason })
        .catch(() => false);
      return skipped('config-invalid');
    }
    const deadline = run.startedAt + run.remainingMs - config.safetyMarginMs;
    const outcome = await pollFeed(
      { ...shared, partner: partnerOf(settings), tokens: tokensOf(settings.tokenParameterName), pageTurns },
      settings,
      {
        runId: run.runId,
        item,
        deadline,
        requestDeadline: deadline + config.safetyMarginMs / 2,
        leaseExpiresAt: run.startedAt + run.remainingMs + config.leaseGraceMs,
        sliceEndsAt: run.startedAt + run.batch.sliceMs,
        dispatch,
      },
    );
    // Its pace and lag are on its outcome line (`poll run finished`), which the dashboard charts: no metric.
    return { feedId, ...outcome };
  }

  /** Each feed of the batch at once; one that throws is reported, never waited for by the others. */
  async function pollBatch(batch: BatchEvent['batch'], context: Context): Promise<PollResult> {
    const startedAt = now();
    const run = {
      runId: context.awsRequestId,
      batch,
      startedAt,
      remainingMs: context.getRemainingTimeInMillis(),
    };
    const items = await cursorStore.read(batch.feedIds);
    // The memory of one parsed page (and its hand-off) at a time in this invocation.
    const pageTurns = oneAtATime();
    const feeds = await Promise.all(
      batch.feedIds.map((feedId) =>
        pollOne(feedId, items.get(feedId), run, pageTurns).catch((error: unknown): FeedRunResult => {
          // E.g. a queue or the cursor table unavailable: the cursor was not committed past the failed page.
          const code = error instanceof Error && 'code' in error ? error.code : undefined;
          const described =
            error instanceof Error
              ? {
                  name: error.name,
                  message: error.message,
                  code: typeof code === 'string' ? code : undefined,
                }
              : { name: 'Error', message: String(error) };
          logger.error('poll run failed; the next run resumes from the committed cursor', {
            feedId,
            error: described,
          });
          return {
            feedId,
            kind: 'error',
            failed: true,
            ...noCounts(),
            secondsSinceCaughtUp: undefined,
            error: described,
          };
        }),
      ),
    );
    for (const feed of feeds) {
      const { error: _, ...line } = feed;
      if (feed.kind !== 'error') logger.info('poll run finished', line);
    }
    return { batchId: batch.batchId, feeds, dispatchRequested: false };
  }

  const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

  /**
   * Says the batch ended, then (when a feed is behind, or the last dispatch left feeds waiting for a slot)
   * returns the request for the next dispatch, sent as the invocation's last act: the dispatch counts the
   * batch running until it ended, so no work of this invocation overlaps the batches that request starts.
   */
  async function endBatch(batch: BatchEvent['batch'], feeds: FeedRunResult[], runId: string) {
    const requests = dispatchRequestsOf(batch);
    if (!requests) return undefined;
    try {
      const waiting = await requests.end(batch.batchId);
      if (waiting === 0 && !feeds.some((feed) => leftBehind(feed.kind))) return undefined;
      metrics.count('DispatchRequests');
      return () =>
        requests.request(now(), runId).catch((error: unknown) => {
          // The next tick (a minute at most) dispatches instead.
          logger.warn('could not ask for a dispatch; the next tick dispatches', { error: messageOf(error) });
        });
    } catch (error) {
      // The dispatch counts the batch running until the grace; the next tick (a minute at most) dispatches.
      logger.warn('could not end the batch or ask for a dispatch; the next tick dispatches', {
        error: messageOf(error),
      });
      return undefined;
    }
  }

  async function invoke(event: unknown, context: Context): Promise<PollResult> {
    const batch = batchOf(event);
    if (!batch) {
      // An event from before the fleet (a schedule's, a continuation's), still on its way after a deploy.
      logger.warn('not a batch from the dispatcher; nothing to poll');
      return { batchId: '', feeds: [], dispatchRequested: false };
    }
    let result: PollResult | undefined;
    let ask: (() => Promise<void>) | undefined;
    try {
      result = await pollBatch(batch, context);
      if (result.feeds.some((feed) => feed.failed)) throw new PollRunFailedError(result);
      return result;
    } finally {
      try {
        // A 429's hold is written without holding up the request: it lands before the invocation returns.
        await Promise.all([...budgets.values()].map((budget) => budget.settled()));
        ask = await endBatch(batch, result?.feeds ?? [], context.awsRequestId);
        if (ask && result) result.dispatchRequested = true;
      } finally {
        metrics.publish();
      }
      await ask?.();
    }
  }

  return async (event, context) => {
    logger.addContext(context);
    const batch = batchOf(event);
    // The run id is the `<runId>` of every correlation id this run writes, and of its leases' owners.
    const annotations = { runId: context.awsRequestId, batchId: batch?.batchId ?? '' };
    return span('## poll run', annotations, async (subsegment) => {
      tracer?.annotateColdStart();
      tracer?.addServiceNameAnnotation();
      const result = await invoke(event, context);
      subsegment?.addMetadata('feeds', result.feeds.length);
      subsegment?.addMetadata(
        'pages',
        result.feeds.reduce((sum, feed) => sum + feed.pages, 0),
      );
      subsegment?.addMetadata(
        'versionsPublished',
        result.feeds.reduce((sum, feed) => sum + feed.versionsPublished, 0),
      );
      return result;
    });
  };
}
