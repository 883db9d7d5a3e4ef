// Poller Lambda: EventBridge schedule → pollFeed. Wiring only; the logic is in core/ingest/poll-feed.ts.
import type { Context } from 'aws-lambda';
import {
  createDynamoDbClient,
  createS3Client,
  createSqsClient,
  createSsmClient,
} from '../core/adapters/aws-clients.js';
import { DynamoCursorStore } from '../core/adapters/dynamo-cursor-store.js';
import { S3Quarantine } from '../core/adapters/s3-quarantine.js';
import { SqsFanoutPublisher } from '../core/adapters/sqs-fanout-publisher.js';
import { SsmTokenProvider } from '../core/adapters/ssm-token.js';
import { type PollOutcome, pollFeed } from '../core/ingest/poll-feed.js';
import { countOn, createObservability, logPort, MetricUnit } from '../core/observability/powertools.js';
import { createPartnerClient } from '../core/partner/client.js';
import { loadPollerConfig } from './config.js';

const config = loadPollerConfig(process.env);
const { logger, metrics } = createObservability('order-feed-poller');
const count = countOn(metrics);
/** Retries of the current invocation (reported in its result; invocations never overlap in a container). */
const invocationRetries = { partnerRetries: 0, rateLimitWaits: 0 };
const tokens = new SsmTokenProvider(createSsmClient(), config.tokenParameterName);
const partner = createPartnerClient({
  baseUrl: config.partnerBaseUrl,
  token: () => tokens.token(),
  arrayEncoding: config.arrayQueryEncoding,
  onRetry: (event) => {
    const rateLimited = event.kind === 'rate-limited';
    count(rateLimited ? 'RateLimitWaits' : 'PartnerRetries');
    if (rateLimited) invocationRetries.rateLimitWaits += 1;
    else invocationRetries.partnerRetries += 1;
    logger.warn('partner API call will be retried', { ...event });
  },
  // The same page, from the same cursor, asked for again with a smaller pageSize: nothing is skipped.
  onPageSizeReduced: (event) => {
    count('PageSizeReductions');
    logger.warn('page over the body-size limit; asking again with a smaller pageSize', { ...event });
  },
});
const deps = {
  cursorStore: new DynamoCursorStore(createDynamoDbClient(), config.cursorTableName),
  partner,
  publisher: new SqsFanoutPublisher(createSqsClient(), [
    config.ordersQueueUrl,
    ...Object.values(config.downstreamQueueUrls),
  ]),
  quarantine: new S3Quarantine(createS3Client(), config.quarantineBucketName),
  metrics: { count },
  log: logPort(logger),
  now: Date.now,
};

/** What an invocation returns: the run's outcome and the partner retries it took. */
export type PollResult = PollOutcome & typeof invocationRetries;

export class PollRunFailedError extends Error {
  readonly outcome: PollResult;
  constructor(outcome: PollResult) {
    super(`poll run failed: ${outcome.kind}`);
    this.name = 'PollRunFailedError';
    this.outcome = outcome;
  }
}

function errorCode(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export const handler = async (_event: unknown, context: Context): Promise<PollResult> => {
  logger.addContext(context);
  invocationRetries.partnerRetries = 0;
  invocationRetries.rateLimitWaits = 0;
  const startedAt = Date.now();
  const remainingMs = context.getRemainingTimeInMillis();
  try {
    const run = await pollFeed(deps, config, {
      owner: context.awsRequestId,
      deadline: startedAt + remainingMs - config.safetyMarginMs,
      leaseMs: remainingMs + config.leaseGraceMs,
    });
    const outcome: PollResult = { ...run, ...invocationRetries };
    // A 401 may mean the token was rotated: read it from SSM afresh on the next run.
    if (outcome.kind === 'auth-failed') tokens.invalidate();
    metrics.addMetric('RunDurationMs', MetricUnit.Milliseconds, Date.now() - startedAt);
    if (outcome.secondsSinceCaughtUp !== undefined) {
      metrics.addMetric('SecondsSinceCaughtUp', MetricUnit.Seconds, outcome.secondsSinceCaughtUp);
    }
    logger.info('poll run finished', { feedId: config.feedId, ...outcome });
    if (outcome.failed) throw new PollRunFailedError(outcome);
    return outcome;
  } catch (error) {
    if (!(error instanceof PollRunFailedError)) {
      // E.g. a queue or the cursor table unavailable: the cursor was not committed past the failed page,
      // so the next scheduled run repeats it. Errors carry no token (the client never puts it in one).
      logger.error('poll run failed; the next run resumes from the committed cursor', {
        feedId: config.feedId,
        error:
          error instanceof Error
            ? { name: error.name, message: error.message, code: errorCode(error) }
            : String(error),
      });
    }
    throw error;
  } finally {
    metrics.publishStoredMetrics();
  }
};
