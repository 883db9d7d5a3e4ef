// Builds the poller's Lambda handler from its dependencies. handler.ts wires the AWS ones once per
// container; local mode, tests and benchmarks pass their own (emulator clients, quiet logs, no metrics),
// so several pollers can run in one process. Flow: invocation → pollFeed (use case) → outcome, logged,
// measured and returned; a failed outcome is thrown (PollRunFailedError) so Lambda counts an error.
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { type PollDeps, type PollOutcome, pollFeed } from '../core/ingest/poll-feed.js';
import type { CursorStore, OrderVersionPublisher, PollMetricName, Quarantine } from '../core/ingest/ports.js';
import { logPort } from '../core/observability/powertools.js';
import type { PartnerApi } from '../core/partner/types.js';
import type { PollerConfig } from './config.js';

/** What the handler needs of a metrics sink (Powertools Metrics in handler.ts; a no-op or a recorder elsewhere). */
export interface PollerMetrics {
  count(name: PollMetricName, value?: number): void;
  milliseconds(name: 'RunDurationMs' | 'PaceDelayMs', value: number): void;
  seconds(name: 'SecondsSinceCaughtUp', value: number): void;
  /** Flushes what the invocation recorded (Powertools: one EMF document). */
  publish(): void;
}

export interface PollerDependencies {
  config: PollerConfig;
  cursorStore: CursorStore;
  partner: PartnerApi;
  publisher: OrderVersionPublisher;
  quarantine: Quarantine;
  logger: Logger;
  metrics: PollerMetrics;
  /** The token's cache: dropped after a 401, so a rotated token is read afresh on the next run. */
  tokens?: { invalidate(): void };
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** What an invocation returns: the run's outcome (pages, versions, retries, pace, lag). */
export type PollResult = PollOutcome;

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
  const useCase: PollDeps = {
    cursorStore: deps.cursorStore,
    partner: deps.partner,
    publisher: deps.publisher,
    quarantine: deps.quarantine,
    metrics,
    log: logPort(logger),
    now,
    ...(deps.sleep ? { sleep: deps.sleep } : {}),
  };

  return async (_event, context) => {
    logger.addContext(context);
    const startedAt = now();
    const remainingMs = context.getRemainingTimeInMillis();
    try {
      const outcome = await pollFeed(useCase, config, {
        owner: context.awsRequestId,
        deadline: startedAt + remainingMs - config.safetyMarginMs,
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
      logger.info('poll run finished', { feedId: config.feedId, ...outcome });
      if (outcome.failed) throw new PollRunFailedError(outcome);
      return outcome;
    } catch (error) {
      if (!(error instanceof PollRunFailedError)) {
        // E.g. a queue or the cursor table unavailable: the cursor was not committed past the failed page,
        // so the next run repeats it. Errors carry no token (the client never puts it in one).
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
      metrics.publish();
    }
  };
}

function errorCode(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
