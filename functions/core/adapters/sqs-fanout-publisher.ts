// Resolves only when every queue accepted every message; otherwise throws, and the page stays uncommitted.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { backoffWithFullJitter } from '../backoff.js';
import {
  isValidAttributeValue,
  type OutgoingMessage,
  SQS_MAX_MESSAGE_ATTRIBUTES,
  SQS_MAX_MESSAGE_BYTES,
} from '../contract/order-version-message.js';
import { PublishError } from '../ingest/errors.js';
import type { OrderVersionPublisher } from '../ingest/ports.js';

const MAX_ENTRIES_PER_BATCH = 10;
/** Attempts per batch for entries SQS reports as failed (the SDK's retries come on top). */
const MAX_ATTEMPTS = 4;
const BASE_DELAY_MS = 100;
const MAX_DELAY_MS = 1_000;

export class SqsFanoutPublisher implements OrderVersionPublisher {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrls: readonly string[],
  ) {}

  async publish(messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const batches = toBatches(messages);
    const results = await Promise.allSettled(
      this.queueUrls.flatMap((queueUrl) => batches.map((batch) => this.sendBatch(queueUrl, batch))),
    );
    const failures = results.filter((result) => result.status === 'rejected');
    if (failures.length > 0) {
      throw new PublishError(`could not publish to every queue (${failures.length} batch(es) failed)`, {
        cause: failures[0]?.reason,
      });
    }
  }

  private async sendBatch(queueUrl: string, batch: OutgoingMessage[]): Promise<void> {
    // SQS's attribute rules, enforced here too because the emulator does not: a value SQS would refuse
    // fails the whole batch, and the page could never be committed. The message builder never makes one.
    for (const { orderId, attributes } of batch) {
      const entries = Object.entries(attributes);
      if (entries.length > SQS_MAX_MESSAGE_ATTRIBUTES) {
        throw new PublishError(
          `message of order ${orderId} has ${entries.length} attributes; SQS accepts at most ${SQS_MAX_MESSAGE_ATTRIBUTES}`,
        );
      }
      const invalid = entries.find(([, attribute]) => !isValidAttributeValue(attribute.StringValue));
      if (invalid)
        throw new PublishError(
          `message attribute ${invalid[0]} of order ${orderId} is not a value SQS accepts`,
        );
    }
    let pending: SendMessageBatchRequestEntry[] = batch.map((message, index) => ({
      Id: String(index),
      MessageBody: message.body,
      MessageAttributes: message.attributes,
    }));
    let lastReason = '';
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const output = await this.client.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending }),
      );
      const failed = new Set((output.Failed ?? []).map((entry) => entry.Id));
      if (failed.size === 0) return;
      lastReason = (output.Failed ?? []).map((entry) => `${entry.Code}: ${entry.Message ?? ''}`).join('; ');
      pending = pending.filter((entry) => failed.has(entry.Id));
      if (attempt < MAX_ATTEMPTS) await sleep(backoffWithFullJitter(attempt, BASE_DELAY_MS, MAX_DELAY_MS));
    }
    throw new PublishError(
      `${pending.length} message(s) were not accepted by a queue after ${MAX_ATTEMPTS} attempts: ${lastReason}`,
    );
  }
}

/** Batches SQS accepts: at most 10 entries, together within the per-message limit. */
export function toBatches(messages: readonly OutgoingMessage[]): OutgoingMessage[][] {
  const batches: OutgoingMessage[][] = [];
  let bytes = 0;
  for (const message of messages) {
    const current = batches.at(-1);
    if (
      current &&
      current.length < MAX_ENTRIES_PER_BATCH &&
      bytes + message.sizeBytes <= SQS_MAX_MESSAGE_BYTES
    ) {
      current.push(message);
      bytes += message.sizeBytes;
    } else {
      batches.push([message]);
      bytes = message.sizeBytes;
    }
  }
  return batches;
}
