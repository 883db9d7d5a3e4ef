// What local mode's command lines need before anything else loads: the defaults and limits their usage
// prints, the feeds a flag stands for, and the usage error. Nothing here imports the AWS SDK, the handlers or
// the simulator, so that `npm start -- --help` and a bad flag answer at once (start.ts loads runtime.ts only
// once its flags parsed); runtime.ts re-exports all of it.
import type { LocalFeed } from '../deploy-local.js';

/** Size of the built-in generated feed: about a minute of pipeline work here (see SESSION.md). */
export const DEFAULT_ORDERS = 250;
export const DEFAULT_SEED = 1;

export class LocalUsageError extends Error {
  override readonly name = 'LocalUsageError';
}

export const MAX_OVERLAPPING_FEEDS = 5;

/** `n` feeds `feed-1` … `feed-n`, each reading every vendor (`npm start -- --overlapping-feeds n`, `npm run verify -- --feeds n`). */
export function overlappingFeeds(n: number): LocalFeed[] {
  return Array.from({ length: n }, (_, index) => ({ id: `feed-${index + 1}` }));
}

/** How local-pipeline.ts drives the handlers here (start.ts's usage prints these defaults). */
export interface LocalTuning {
  /** The next poller run starts only when the orders queue holds fewer messages than this. */
  shallowQueueDepth: number;
  /** Between runs once a run found nothing new (watch mode), after a lease-held or a retry-later run. */
  idlePollIntervalMs: number;
  /**
   * Local cap on MAX_PAGES_PER_RUN (undefined: as deployed). moto's SQS slows down as a queue fills (every
   * send scans it), so a run publishes a few pages, the consumer catches up, and the next run follows.
   */
  maxPagesPerRun: number | undefined;
  /** Delay before a failed record is received again (Lambda: the queue's visibility timeout). */
  retryDelaySeconds: number;
  /** Visibility of a received batch: the messages of a process that died come back after this long. */
  visibilityTimeoutSeconds: number;
  /** Concurrent batches (capped by the mapping's maximum concurrency). */
  consumerConcurrency: number;
  emptyReceiveDelayMs: number;
}

export const DEFAULT_TUNING: LocalTuning = {
  shallowQueueDepth: 50,
  idlePollIntervalMs: 1000,
  maxPagesPerRun: 1,
  retryDelaySeconds: 1,
  visibilityTimeoutSeconds: 10,
  consumerConcurrency: 2,
  emptyReceiveDelayMs: 200,
};
