// A compact trace of what local mode did with the orders queue, written next to the run logs
// (sqs-trace.jsonl): which run received which message (and its receive count), and which receipt
// handles it deleted or made visible again, by message id. Enough to follow one message (the poison,
// a version that went missing) across kills and restarts without the message bodies.
import type { AwsCall } from '../aws-proxy.js';

export interface TraceLine {
  seq: number;
  run: number;
  at: string;
  operation: string;
  status: number;
  /** ReceiveMessage: id:receiveCount of each message; Delete/ChangeVisibility: the message ids addressed. */
  messages: string[];
}

export function orderQueueTrace(calls: readonly AwsCall[], ordersQueue: string): TraceLine[] {
  const byReceipt = new Map<string, string>();
  const lines: TraceLine[] = [];
  for (const call of [...calls].sort((a, b) => a.seq - b.seq)) {
    if (call.service !== 'sqs' || call.queue !== ordersQueue) continue;
    let messages: string[] = [];
    if (call.operation === 'ReceiveMessage') {
      const received = Array.isArray(call.response?.Messages)
        ? (call.response.Messages as Array<Record<string, unknown>>)
        : [];
      if (received.length === 0) continue;
      messages = received.map((message) => {
        const id = String(message.MessageId);
        if (typeof message.ReceiptHandle === 'string') byReceipt.set(message.ReceiptHandle, id);
        const attributes = message.Attributes as Record<string, string> | undefined;
        return `${id}:${attributes?.ApproximateReceiveCount ?? '?'}`;
      });
    } else if (/^(DeleteMessage|ChangeMessageVisibility)/.test(call.operation)) {
      const entries = Array.isArray(call.body?.Entries)
        ? (call.body.Entries as Array<Record<string, unknown>>)
        : call.body
          ? [call.body]
          : [];
      messages = entries.map((entry) => byReceipt.get(String(entry.ReceiptHandle)) ?? 'unknown-receipt');
    } else if (call.operation === 'SendMessageBatch') {
      const entries = Array.isArray(call.body?.Entries) ? call.body.Entries.length : 0;
      messages = [`${entries} entries`];
    } else {
      continue;
    }
    lines.push({
      seq: call.seq,
      run: call.run,
      at: new Date(call.receivedAt).toISOString(),
      operation: call.operation,
      status: call.status,
      messages,
    });
  }
  return lines;
}
