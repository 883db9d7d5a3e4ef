// Builds the poller's Lambda handler from its dependencies. handler.ts wires the AWS ones once per
// container; local mode, tests and benchmarks pass their own (emulator clients, quiet logs, no metrics),
// so several pollers can run in one process. Flow: invocation → pollFeed (use case) → outcome, logged,
// measured and returned; a failed outcome is thrown (PollRunFailedError) so Lambda counts an error. The
// invocation is one span (`## poll run`, annotated with the feed and the run id that every message's
// correlation id `poll:<runId>:<page>` carries), with a span per page inside it.
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { continuationOf } from '../core/ingest/continuation.js';
import { type PollDeps, type PollOutcome, pollFeed } from '../core/ingest/poll-feed.js';
import type { Continuation, PollerMetrics } from '../core/ingest/ports.js';
import { NO_TRACING, type Span } from '../core/observability/tracing.js';
import type { PollerConfig } from './config.js';

/** pollFeed's ports (its log and clock come from `logger` and `now`), and the handler's own. */
interface PollerDependencies
  extends Pick<
    PollDeps,
    'cursorStore' | 'partner' | 'publisher' | 'quarantine' | 'sleep' | 'tracing' | 'tokens'
  > {
  config: PollerConfig;
  logger: Logger;
  metrics: PollerMetrics;
  /** Self-continuation (AWS: an async self-invoke). Undefined: every run waits for its schedule or caller. */
  continuation?: Continuation;
  now?: () => number;
}

/** What an invocation returns: the run's outcome, and the chain step it started at once, if it did. */
export type PollResult = Omit<PollOutcome, 'next'> & { continuedWith?: number };

export class PollRunFailedError extends Error {
  constructor(readonly outcome: PollResult) {
    super(`poll run failed: ${outcome.kind}`);
    this.name = 'PollRunFailedError';
  }
}

export type PollerHandler = (event: unknown, context: Context) => Promise<PollResult>;

export function createPollerHandler(deps: PollerDependencies): PollerHandler {
  const { config, logger, metrics, continuation } = deps;
  const { feedId } = config;
  const now = deps.now ?? Date.now;
  const tracing = deps.tracing ?? NO_TRACING;
  const useCase: PollDeps = { ...deps, log: logger, now, tracing };

  async function run(event: unknown, context: Context, span: Span): Promise<PollResult> {
    const startedAt = now();
    const remainingMs = context.getRemainingTimeInMillis();
    try {
      const deadline = startedAt + remainingMs - config.safetyMarginMs;
      const current = continuationOf(event);
      const { next, ...outcome } = await pollFeed(useCase, config, {
        owner: context.awsRequestId,
        deadline,
        requestDeadline: deadline + config.safetyMarginMs / 2,
        // The invocation's own deadline plus the grace, fixed for the run.
        leaseExpiresAt: startedAt + remainingMs + config.leaseGraceMs,
        ...(current ? { continuation: current } : {}),
        canContinue: continuation !== undefined,
      });
      metrics.milliseconds('RunDurationMs', now() - startedAt);
      // The feed's own delay between page requests: rises while the partner answers 429s (nextPaceDelayMs).
      metrics.milliseconds('PaceDelayMs', outcome.paceDelayMs);
      if (outcome.secondsSinceCaughtUp !== undefined) {
        metrics.seconds('SecondsSinceCaughtUp', outcome.secondsSinceCaughtUp);
      }
      const result: PollResult = outcome;
      // pollFeed has already handed the lease over to `next`: a schedule tick that fires now finds it held,
      // and a duplicate of the event finds its step taken. A failed invoke only leaves the next run to the
      // schedule, once the handed-over lease lapses (the lease grace).
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
      span.detail('outcome', result.kind);
      span.detail('pages', result.pages);
      span.detail('versionsPublished', result.versionsPublished);
      return result;
    } catch (error) {
      if (!(error instanceof PollRunFailedError)) {
        // E.g. a queue or the cursor table unavailable: the cursor was not committed past the failed page,
        // so the next run repeats it. Errors carry no token (the client never puts it in one).
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
      metrics.publish();
    }
  }

  return async (event, context) => {
    logger.addContext(context);
    // The run id is the lease owner and the `<runId>` of every correlation id this run writes.
    return tracing.span('## poll run', { feedId, runId: context.awsRequestId }, (span) =>
      run(event, context, span),
    );
  };
}
