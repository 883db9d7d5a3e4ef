// Emulates Lambda's SQS event source mapping against a real (emulated) queue: receive up to
// `batchSize` messages, hand them to the handler in the SQS event shape, delete only the records the
// handler did not report in `batchItemFailures`. Failed records become visible again after the
// visibility timeout and are dead-lettered by the queue's own redrive policy, as on AWS. Local mode runs
// `concurrency` workers of that cycle (startEventSourceWorkers); the harness drains a queue with it.
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

export interface EventSourceOptions {
  batchSize: number;
  /**
   * Seconds before a failed record is visible again. On AWS that is the queue's visibility timeout;
   * tests and local mode shorten it so redrive to the DLQ does not take minutes.
   */
  retryDelaySeconds: number;
  queueArn?: string;
  /**
   * Visibility timeout for received messages; default: the queue's. Local mode shortens it so the
   * messages of a killed process come back in seconds instead of the queue's minutes.
   */
  visibilityTimeoutSeconds?: number;
  /** Called before the handler, e.g. to crash mid-batch in tests. */
  beforeBatch?: (event: SQSEvent) => void;
}

export interface BatchStats {
  received: number;
  succeeded: number;
  failed: number;
  /** The handler threw (a crashed invocation): the whole batch counts as failed. */
  crashed: boolean;
}

/** Polls once; resolves with what happened. `received: 0` means the queue looked empty. */
export async function pollQueueOnce(
  sqs: SQSClient,
  queueUrl: string,
  handler: SqsHandler,
  context: () => Context,
  options: EventSourceOptions,
): Promise<BatchStats> {
  const output = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: options.batchSize,
      WaitTimeSeconds: 0,
      ...(options.visibilityTimeoutSeconds === undefined
        ? {}
        : { VisibilityTimeout: options.visibilityTimeoutSeconds }),
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    }),
  );
  const messages = output.Messages ?? [];
  if (messages.length === 0) return { received: 0, succeeded: 0, failed: 0, crashed: false };
  const event: SQSEvent = {
    Records: messages.map((message) => toRecord(message, options.queueArn ?? queueUrl)),
  };
  options.beforeBatch?.(event);
  let failedIds: Set<string>;
  let crashed = false;
  try {
    const response = await handler(event, context());
    failedIds = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
  } catch {
    // An invocation error: Lambda deletes nothing and the batch comes back after the visibility timeout.
    crashed = true;
    failedIds = new Set(messages.map((message) => message.MessageId ?? ''));
  }
  const succeeded = messages.filter((message) => !failedIds.has(message.MessageId ?? ''));
  const failed = messages.filter((message) => failedIds.has(message.MessageId ?? ''));
  if (succeeded.length > 0) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: succeeded.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
  if (failed.length > 0) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: failed.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
          VisibilityTimeout: options.retryDelaySeconds,
        })),
      }),
    );
  }
  return { received: messages.length, succeeded: succeeded.length, failed: failed.length, crashed };
}

function toRecord(message: Message, eventSourceArn: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        {
          dataType: value.DataType ?? 'String',
          ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: eventSourceArn,
    awsRegion: 'us-east-1',
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The consumer's event source as Lambda runs it from the deployed mapping: `concurrency` workers, each
 * polling once after another; `stop()` lets the batches in flight finish, then resolves.
 */
export function startEventSourceWorkers(options: {
  sqs: SQSClient;
  queueUrl: string;
  consume: SqsHandler;
  context: () => Context;
  concurrency: number;
  /** One ReceiveMessage returns at most 10: a larger deployed batch is not assembled from several here. */
  eventSource: EventSourceOptions;
  emptyReceiveDelayMs: number;
  /** Told how many records each batch failed. */
  onFailed: (count: number) => void;
  note: (message: string) => void;
}): { stop(): Promise<void> } {
  let stopping = false;
  async function worker(): Promise<void> {
    while (!stopping) {
      try {
        const { sqs, queueUrl, consume, context, eventSource } = options;
        const stats = await pollQueueOnce(sqs, queueUrl, consume, context, eventSource);
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
