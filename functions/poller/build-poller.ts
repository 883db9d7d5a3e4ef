// The one wiring of adapters into pollFeed's ports; a failed outcome is thrown so Lambda counts an error.
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { Context } from 'aws-lambda';
import { DynamoCursorStore } from '../core/adapters/dynamo-cursor-store.js';
import { budgetItemKey, DynamoRequestBudgetStore } from '../core/adapters/dynamo-request-budget.js';
import { LambdaContinuation } from '../core/adapters/lambda-continuation.js';
import { S3Quarantine } from '../core/adapters/s3-quarantine.js';
import { SqsFanoutPublisher } from '../core/adapters/sqs-fanout-publisher.js';
import { SsmTokenProvider } from '../core/adapters/ssm-token.js';
import { continuationOf } from '../core/ingest/continuation.js';
import { type PollDeps, type PollOutcome, pollFeed } from '../core/ingest/poll-feed.js';
import type { Continuation } from '../core/ingest/ports.js';
import { RequestBudget } from '../core/ingest/request-budget.js';
import type { FunctionMetrics } from '../core/observability/metric-names.js';
import { NO_METRICS } from '../core/observability/powertools.js';
import { span, tracer } from '../core/observability/tracer.js';
import { withRequestBudget } from '../core/partner/budgeted-dispatcher.js';
import { createPartnerAgent, createPartnerClient } from '../core/partner/client.js';
import type { PollerConfig } from './config.js';

export interface PollerClients {
  dynamo: DynamoDBClient;
  sqs: SQSClient;
  s3: S3Client;
  ssm: SSMClient;
  /** Invokes the poller itself at once while a backlog lasts; none (and no `overrides.continuation`): no chains. */
  selfInvoke?: LambdaClient;
  /** The request budget's own client, with few retries (each call also has a deadline); default `dynamo`. */
  budgetDynamo?: DynamoDBClient;
}

/** What a caller replaces: a port, the log and metrics sinks (default: INFO logs, no metrics), the clock. */
export interface PollerOverrides
  extends Partial<
    Pick<PollDeps, 'cursorStore' | 'partner' | 'publisher' | 'quarantine' | 'sleep' | 'tokens'>
  > {
  logger?: Logger;
  metrics?: FunctionMetrics;
  continuation?: Continuation;
  now?: () => number;
  /** False: per-feed pacing only, no request budget shared with the other feeds (the bench's comparison). */
  shareBudget?: boolean;
}

/** What an invocation returns: the run's outcome, and the chain step it started at once, if it did. */
export type PollResult = Omit<PollOutcome, 'next'> & { continuedWith?: number };

export class PollRunFailedError extends Error {
  constructor(readonly outcome: PollResult) {
    super(`poll run failed: ${outcome.kind}`);
    this.name = 'PollRunFailedError';
  }
}

export function buildPoller(
  clients: PollerClients,
  config: PollerConfig,
  overrides: PollerOverrides = {},
): (event: unknown, context: Context) => Promise<PollResult> {
  const { feedId } = config;
  const logger = overrides.logger ?? new Logger({ serviceName: 'order-feed-poller' });
  const metrics = overrides.metrics ?? NO_METRICS;
  const now = overrides.now ?? Date.now;
  const ssmToken = new SsmTokenProvider(clients.ssm, config.tokenParameterName);
  const continuation =
    overrides.continuation ?? (clients.selfInvoke ? new LambdaContinuation(clients.selfInvoke) : undefined);
  let budget: RequestBudget | undefined;
  const deps: PollDeps = {
    log: logger,
    metrics,
    now,
    tokens: overrides.tokens ?? ssmToken,
    cursorStore: overrides.cursorStore ?? new DynamoCursorStore(clients.dynamo, config.cursorTableName),
    partner: overrides.partner ?? budgetedPartner(),
    publisher:
      overrides.publisher ??
      new SqsFanoutPublisher(clients.sqs, [
        config.ordersQueueUrl,
        ...Object.values(config.downstreamQueueUrls),
      ]),
    quarantine: overrides.quarantine ?? new S3Quarantine(clients.s3, config.quarantineBucketName),
    ...(overrides.sleep ? { sleep: overrides.sleep } : {}),
  };

  /** Every partner request taken from the token's request budget, shared by the feeds (a cursor table item). */
  function budgetedPartner() {
    const agent = createPartnerAgent();
    if (overrides.shareBudget !== false) {
      budget = new RequestBudget({
        store: new DynamoRequestBudgetStore(clients.budgetDynamo ?? clients.dynamo, config.cursorTableName),
        key: budgetItemKey(config.tokenParameterName),
        cap: config.partnerRequestsPerSecond,
        // The feed goes on without the budget (its own pace and the client's 429 handling still hold).
        onStoreError: (error) =>
          logger.warn('request budget unavailable; this request is not paced with the other feeds', {
            feedId,
            error: error instanceof Error ? error.message : String(error),
          }),
        onLongHold: ({ clamped, askedMs, heldMs, until, retryAfter, date }) => {
          metrics.count('LongRateLimitHolds');
          const what = clamped ? 'longer than the longest hold; holding for the longest' : 'over a minute';
          logger.warn(`partner API asked every feed on the token to wait ${what}`, {
            feedId,
            askedMs,
            heldMs,
            holdUntil: new Date(until).toISOString(),
            retryAfter,
            partnerDate: date,
          });
        },
      });
    }
    return createPartnerClient({
      baseUrl: config.partnerBaseUrl,
      token: () => ssmToken.token(),
      arrayEncoding: config.arrayQueryEncoding,
      maxBodyBytes: config.maxPageBodyBytes,
      dispatcher: budget ? withRequestBudget(agent, budget) : agent,
    });
  }

  async function invoke(event: unknown, context: Context): Promise<PollResult> {
    const startedAt = now();
    const remainingMs = context.getRemainingTimeInMillis();
    try {
      const deadline = startedAt + remainingMs - config.safetyMarginMs;
      const current = continuationOf(event);
      const { next, ...outcome } = await pollFeed(deps, config, {
        owner: context.awsRequestId,
        deadline,
        requestDeadline: deadline + config.safetyMarginMs / 2,
        leaseExpiresAt: startedAt + remainingMs + config.leaseGraceMs,
        ...(current ? { continuation: current } : {}),
        canContinue: continuation !== undefined,
      });
      metrics.milliseconds('RunDurationMs', now() - startedAt);
      metrics.milliseconds('PaceDelayMs', outcome.paceDelayMs);
      if (outcome.secondsSinceCaughtUp !== undefined)
        metrics.seconds('SecondsSinceCaughtUp', outcome.secondsSinceCaughtUp);
      const result: PollResult = outcome;
      // pollFeed has already handed the lease over to `next`; a failed invoke leaves the next run to the
      // schedule, once the handed-over lease lapses.
      if (continuation && next) {
        try {
          await continuation.request(next, context.invokedFunctionArn);
          result.continuedWith = next.continuation.chain;
        } catch (error) {
          logger.warn('could not start the next run at once; the schedule will', {
            feedId,
            error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
          });
        }
      }
      logger.info('poll run finished', { feedId, ...result });
      if (result.failed) throw new PollRunFailedError(result);
      return result;
    } catch (error) {
      if (!(error instanceof PollRunFailedError)) {
        // E.g. a queue or the cursor table unavailable: the cursor was not committed past the failed page.
        const code = error instanceof Error && 'code' in error ? error.code : undefined;
        logger.error('poll run failed; the next run resumes from the committed cursor', {
          feedId,
          error:
            error instanceof Error
              ? {
                  name: error.name,
                  message: error.message,
                  code: typeof code === 'string' ? code : undefined,
                }
              : String(error),
        });
      }
      throw error;
    } finally {
      try {
        // A 429's hold is written without holding up the request: it lands before the invocation returns.
        await budget?.settled();
      } finally {
        metrics.publish();
      }
    }
  }

  return async (event, context) => {
    logger.addContext(context);
    // The run id is the lease owner and the `<runId>` of every correlation id this run writes.
    return span('## poll run', { feedId, runId: context.awsRequestId }, async (subsegment) => {
      tracer?.annotateColdStart();
      tracer?.addServiceNameAnnotation();
      const result = await invoke(event, context);
      subsegment?.addMetadata('outcome', result.kind);
      subsegment?.addMetadata('pages', result.pages);
      subsegment?.addMetadata('versionsPublished', result.versionsPublished);
      return result;
    });
  };
}
