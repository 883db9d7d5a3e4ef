// Builds the poller's Lambda handler from its dependencies. handler.ts wires the AWS ones once per
// container; local mode, tests and benchmarks pass their own (emulator clients, quiet logs, no metrics),
// so several pollers can run in one process. Flow: invocation → pollFeed (use case) → outcome, logged,
// measured and returned; a failed outcome is thrown (PollRunFailedError) so Lambda counts an error. The
// invocation is one span (`## poll run`, annotated with the feed and the run id that every message's
// correlation id `poll:<runId>:<page>` carries), with a span per page inside it.
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { continuationOf, nextContinuation } from '../core/ingest/continuation.js';
import { type PollDeps, type PollOutcome, pollFeed } from '../core/ingest/poll-feed.js';
import type { Continuation, PollMetricName } from '../core/ingest/ports.js';
import { NO_TRACING } from '../core/observability/tracing.js';
import type { PollerConfig } from './config.js';

/** What the handler needs of a metrics sink (Powertools Metrics in handler.ts; a no-op or a recorder elsewhere). */
export interface PollerMetrics {
  count(name: PollMetricName, value?: number): void;
  milliseconds(name: 'RunDurationMs' | 'PaceDelayMs', value: number): void;
  seconds(name: 'SecondsSinceCaughtUp', value: number): void;
  /** Flushes what the invocation recorded (Powertools: one EMF document). */
  publish(): void;
}

/** pollFeed's ports (its log and clock come from `logger` and `now`), and the handler's own. */
interface PollerDependencies
  extends Pick<PollDeps, 'cursorStore' | 'partner' | 'publisher' | 'quarantine' | 'sleep' | 'tracing'> {
  config: PollerConfig;
  logger: Logger;
  metrics: PollerMetrics;
  /** The token's cache: dropped after a 401, so a rotated token is read afresh on the next run. */
  tokens?: { invalidate(): void };
  /**
   * Self-continuation: starts the next run at once when this one ran out of time with more to fetch
   * (AWS: an asynchronous invoke of this function). Undefined: every run waits for the schedule (local mode
   * and tests run the next poll at once themselves).
   */
  continuation?: Continuation;
  now?: () => number;
}

/** What an invocation returns: the run's outcome (pages, versions, retries, pace, lag). */
export type PollResult = PollOutcome & {
  /** The chain position of the run this one started at once (self-continuation), if it did. */
  continuedWith?: number;
};

export class PollRunFailedError extends Error {
  readonly outcome: PollResult;
  constructor(outcome: PollResult) {
    super(`poll run failed: ${outcome.kind}`);
    this.name = 'PollRunFailedError';
    this.outcome = outcome;
  }
}

export type PollerHandler = (event: unknown, context: Context) => Promise<PollResult>;

export function createPollerHandler(deps: PollerDependencies): PollerHandler {
  const { config, logger, metrics } = deps;
  const now = deps.now ?? Date.now;
  const tracing = deps.tracing ?? NO_TRACING;
  const useCase: PollDeps = { ...deps, log: logger, now, tracing };

  /** Starts the next run at once when nextContinuation says so; a failure only leaves it to the schedule. */
  async function continueIfNeeded(outcome: PollOutcome, event: unknown, context: Context, startedAt: number) {
    if (!deps.continuation) return undefined;
    const next = nextContinuation(outcome, {
      feedId: config.feedId,
      current: continuationOf(event),
      startedAt: new Date(startedAt).toISOString(),
      maxContinuations: config.maxContinuations,
      enabled: config.enabled,
    });
    if (!next) return undefined;
    try {
      await deps.continuation.request(next, context.invokedFunctionArn);
      return next.continuation.chain;
    } catch (error) {
      logger.warn('could not start the next run at once; the schedule will', {
        feedId: config.feedId,
        error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
      });
      return undefined;
    }
  }

  return async (event, context) => {
    logger.addContext(context);
    // The run id is the lease owner and the `<runId>` of every correlation id this run writes.
    return tracing.span(
      '## poll run',
      { feedId: config.feedId, runId: context.awsRequestId },
      async (span) => {
        const result = await run(event, context);
        span.detail('outcome', result.kind);
        span.detail('pages', result.pages);
        span.detail('versionsPublished', result.versionsPublished);
        return result;
      },
    );
  };

  async function run(event: unknown, context: Context): Promise<PollResult> {
    const startedAt = now();
    const remainingMs = context.getRemainingTimeInMillis();
    try {
      const deadline = startedAt + remainingMs - config.safetyMarginMs;
      const outcome = await pollFeed(useCase, config, {
        owner: context.awsRequestId,
        deadline,
        requestDeadline: deadline + config.safetyMarginMs / 2,
        leaseMs: remainingMs + config.leaseGraceMs,
      });
      // A 401 may mean the token was rotated: read it from SSM afresh on the next run.
      if (outcome.kind === 'auth-failed') deps.tokens?.invalidate();
      metrics.milliseconds('RunDurationMs', now() - startedAt);
      // The feed's own delay between page requests: rises while the partner answers 429s (see pace.ts).
      metrics.milliseconds('PaceDelayMs', outcome.paceDelayMs);
      if (outcome.secondsSinceCaughtUp !== undefined) {
        metrics.seconds('SecondsSinceCaughtUp', outcome.secondsSinceCaughtUp);
      }
      // The lease is already released: the next run takes it like any run (so does a schedule tick that
      // happens to fire now; then one of the two finds the lease held and ends at once).
      const continuedWith = await continueIfNeeded(outcome, event, context, startedAt);
      const result: PollResult = continuedWith === undefined ? outcome : { ...outcome, continuedWith };
      logger.info('poll run finished', { feedId: config.feedId, ...result });
      if (result.failed) throw new PollRunFailedError(result);
      return result;
    } catch (error) {
      if (!(error instanceof PollRunFailedError)) {
        // E.g. a queue or the cursor table unavailable: the cursor was not committed past the failed page,
        // so the next run repeats it. Errors carry no token (the client never puts it in one).
        const code = error instanceof Error && 'code' in error ? error.code : undefined;
        logger.error('poll run failed; the next run resumes from the committed cursor', {
          feedId: config.feedId,
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
      metrics.publish();
    }
  }
}
