// redrive: moves a dead-letter queue's messages back to the queue they came from. On AWS with an SQS
// message move task (StartMessageMoveTask; progress from ListMessageMoveTasks). Where that is missing (moto
// has no move tasks) with a loop that loses nothing: receive a batch, send it to the source queue, and
// delete from the dead-letter queue only the messages the source queue accepted. A crash between send and
// delete leaves a message in both: a duplicate, which the contract already allows; never a loss.
import {
  CancelMessageMoveTaskCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import type { AwsAt } from '../aws.js';
import { CommandError } from '../cli-args.js';
import type { QueuePair } from './target.js';

export interface RedrivePair {
  name: string;
  deadLetterUrl: string;
  sourceUrl: string;
  /** Messages waiting in the dead-letter queue when planned (approximate, as SQS counts). */
  waiting: number;
}

export interface RedriveResult {
  name: string;
  moved: number;
  /** Received but not accepted by the source queue: left in the dead-letter queue. */
  notMoved: number;
  /** Sent but not deleted from the dead-letter queue: they will be moved again (duplicates). */
  notDeleted: number;
  method: 'move-task' | 'loop';
}

/** The queues `--queue` names (orders or a subscriber), or every queue with a dead-letter queue. */
export function selectRedriveQueues(queues: readonly QueuePair[], name: string | undefined): QueuePair[] {
  const withDlq = queues.filter((queue) => queue.deadLetterUrl !== undefined);
  if (name === undefined) return withDlq;
  const match = withDlq.filter((queue) => queue.name === name);
  if (match.length === 0) {
    throw new CommandError(
      `no dead-letter queue for "${name}" (queues: ${withDlq.map((queue) => queue.name).join(', ') || 'none'})`,
    );
  }
  return match;
}

export async function planRedrive(aws: AwsAt, queues: readonly QueuePair[]): Promise<RedrivePair[]> {
  return Promise.all(
    queues.map(async (queue) => ({
      name: queue.name,
      deadLetterUrl: queue.deadLetterUrl ?? '',
      sourceUrl: queue.url,
      waiting: Number(
        (await attributes(aws, queue.deadLetterUrl ?? '', ['ApproximateNumberOfMessages']))
          .ApproximateNumberOfMessages ?? 0,
      ),
    })),
  );
}

export interface RedriveOptions {
  progress: (line: string) => void;
  /** Pause between move-task status checks; tests shorten it. */
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

export async function redriveWithLoop(
  aws: AwsAt,
  pair: RedrivePair,
  options: RedriveOptions,
): Promise<RedriveResult> {
  const result: RedriveResult = { name: pair.name, moved: 0, notMoved: 0, notDeleted: 0, method: 'loop' };
  // Two empty receives in a row: the queue is drained (a single short poll of SQS may miss messages).
  let emptyReceives = 0;
  while (emptyReceives < 2 && !options.signal?.aborted) {
    const { Messages = [] } = await aws.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: pair.deadLetterUrl,
        MaxNumberOfMessages: 10,
        // A short wait on AWS; none on an emulator, where a waiting call would hold up moto's serialised server.
        WaitTimeSeconds: aws.endpoint === undefined ? 1 : 0,
        // Long enough to send and delete the batch; a message we could not move reappears afterwards.
        VisibilityTimeout: 120,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) {
      emptyReceives += 1;
      continue;
    }
    emptyReceives = 0;
    const sent = await sendBatch(aws, pair.sourceUrl, Messages);
    result.notMoved += Messages.length - sent.length;
    if (sent.length > 0) {
      const deleted = await aws.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: pair.deadLetterUrl,
          Entries: sent.map((message, index) => ({
            Id: String(index),
            ReceiptHandle: message.ReceiptHandle,
          })),
        }),
      );
      result.notDeleted += deleted.Failed?.length ?? 0;
    }
    result.moved += sent.length;
    options.progress(`redrive ${pair.name}: ${result.moved} of ~${pair.waiting} moved`);
    // Messages the source queue refused stay invisible until their timeout: stop rather than spin.
    if (sent.length < Messages.length) break;
  }
  return result;
}

/** Sends the received messages to `queueUrl`; returns those SQS accepted. */
async function sendBatch(aws: AwsAt, queueUrl: string, messages: Message[]): Promise<Message[]> {
  const output = await aws.sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((message, index) => ({
        Id: String(index),
        MessageBody: message.Body ?? '',
        ...(message.MessageAttributes
          ? { MessageAttributes: copyAttributes(message.MessageAttributes) }
          : {}),
      })),
    }),
  );
  const accepted = new Set((output.Successful ?? []).map((entry) => entry.Id));
  return messages.filter((_, index) => accepted.has(String(index)));
}

/** The attributes as received, minus the list fields SQS reserves and refuses on send. */
function copyAttributes(
  attributes: Record<string, MessageAttributeValue>,
): Record<string, MessageAttributeValue> {
  const copy: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(attributes)) {
    copy[name] = {
      DataType: value.DataType,
      ...(value.StringValue === undefined ? {} : { StringValue: value.StringValue }),
      ...(value.BinaryValue === undefined ? {} : { BinaryValue: value.BinaryValue }),
    };
  }
  return copy;
}

export async function redriveWithMoveTask(
  aws: AwsAt,
  pair: RedrivePair,
  options: RedriveOptions,
): Promise<RedriveResult> {
  const sourceArn = (await attributes(aws, pair.deadLetterUrl, ['QueueArn'])).QueueArn;
  const destinationArn = (await attributes(aws, pair.sourceUrl, ['QueueArn'])).QueueArn;
  if (!sourceArn || !destinationArn) throw new CommandError(`cannot read the queue ARNs of ${pair.name}`);
  const { TaskHandle } = await aws.sqs.send(
    new StartMessageMoveTaskCommand({ SourceArn: sourceArn, DestinationArn: destinationArn }),
  );
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 2000));
    if (options.signal?.aborted) {
      // Ctrl-C stops the move, as it stops the loop: what moved stays moved, the rest stays in the DLQ.
      const { ApproximateNumberOfMessagesMoved: moved = 0 } = await aws.sqs.send(
        new CancelMessageMoveTaskCommand({ TaskHandle }),
      );
      return { name: pair.name, moved, notMoved: 0, notDeleted: 0, method: 'move-task' };
    }
    const { Results = [] } = await aws.sqs.send(
      new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 1 }),
    );
    const task = Results.find((candidate) => candidate.TaskHandle === TaskHandle) ?? Results[0];
    const moved = task?.ApproximateNumberOfMessagesMoved ?? 0;
    options.progress(
      `redrive ${pair.name}: ${moved} of ~${task?.ApproximateNumberOfMessagesToMove ?? pair.waiting} moved (${task?.Status ?? 'unknown'})`,
    );
    if (task?.Status === 'COMPLETED')
      return { name: pair.name, moved, notMoved: 0, notDeleted: 0, method: 'move-task' };
    if (task?.Status === 'FAILED' || task?.Status === 'CANCELLED') {
      throw new CommandError(
        `message move task of ${pair.name} ${task.Status}: ${task.FailureReason ?? 'no reason given'}`,
      );
    }
  }
}

async function attributes(
  aws: AwsAt,
  queueUrl: string,
  names: Array<'QueueArn' | 'ApproximateNumberOfMessages'>,
) {
  const { Attributes = {} } = await aws.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: names }),
  );
  return Attributes;
}
