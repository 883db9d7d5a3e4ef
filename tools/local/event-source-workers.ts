// The SQS event source of the consumer, as Lambda runs it from the deployed mapping: `concurrency`
// workers, each receiving a batch (at most 10 per ReceiveMessage), invoking the consumer handler and
// deleting what it did not report failed (sqs-event-source.ts). Failed records come back after
// `retryDelaySeconds`; the queue's redrive policy dead-letters them after maxReceiveCount receives.
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { pollQueueOnce, type SqsHandler } from './sqs-event-source.js';

export interface EventSourceWorkerOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  consume: SqsHandler;
  context: () => Context;
  /** The deployed batch size (capped at 10: one ReceiveMessage). */
  batchSize: number;
  concurrency: number;
  retryDelaySeconds: number;
  visibilityTimeoutSeconds: number;
  emptyReceiveDelayMs: number;
  /** Told how many records each batch failed. */
  onFailed: (count: number) => void;
  note: (message: string) => void;
}

export interface EventSourceWorkers {
  /** Lets the batches in flight finish, then resolves. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function startEventSourceWorkers(options: EventSourceWorkerOptions): EventSourceWorkers {
  let stopping = false;
  async function worker(): Promise<void> {
    while (!stopping) {
      try {
        const stats = await pollQueueOnce(options.sqs, options.queueUrl, options.consume, options.context, {
          // One ReceiveMessage returns at most 10; a larger deployed batch (with a batching window) is not
          // assembled from several receives here.
          batchSize: Math.min(options.batchSize, 10),
          retryDelaySeconds: options.retryDelaySeconds,
          visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
          queueArn: options.queueArn,
        });
        options.onFailed(stats.failed);
        if (stats.received === 0) await sleep(options.emptyReceiveDelayMs);
      } catch (error) {
        options.note(`event source: ${error instanceof Error ? error.message : String(error)}`);
        await sleep(1000);
      }
    }
  }
  const workers = Array.from({ length: Math.max(1, options.concurrency) }, () => worker());
  return {
    async stop() {
      stopping = true;
      await Promise.all(workers);
    },
  };
}
