// Plans one SQS batch before anything is written: validates every message once and, where the batch
// holds several versions of the same order, marks all but the highest as superseded. Writing only the
// highest saves the conditional writes that would fail anyway (and that DynamoDB still charges for)
// when versions of one order race inside a batch.
//
// A lower version is superseded only by a higher *valid* version of the same order in the same batch, and
// it is acknowledged only once that version is applied (apply-batch.ts): if the higher version's write
// fails, the lower one fails with it, so both are retried and neither is lost while the higher one waits
// in the dead-letter queue. An invalid message never supersedes anything.

import type { OrderVersionMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import { parseOrderVersionMessage } from './order-version-message.js';

export type PlannedRecord =
  | { action: 'apply'; message: OrderVersionMessage }
  | { action: 'superseded'; message: OrderVersionMessage; byVersion: Int64; byRecordId: string }
  | { action: 'reject'; error: Error };

export function planBatch(records: ReadonlyArray<{ id: string; body: string }>): Map<string, PlannedRecord> {
  const plan = new Map<string, PlannedRecord>();
  const highest = new Map<Int64, { id: string; version: Int64 }>();
  for (const record of records) {
    let message: OrderVersionMessage;
    try {
      message = parseOrderVersionMessage(record.body);
    } catch (error) {
      plan.set(record.id, {
        action: 'reject',
        error: error instanceof Error ? error : new Error(String(error)),
      });
      continue;
    }
    plan.set(record.id, { action: 'apply', message });
    const { id: orderId, version } = message.order;
    const best = highest.get(orderId);
    // Strictly greater: of equal versions (duplicate deliveries) the first one is written.
    if (!best || version > best.version) highest.set(orderId, { id: record.id, version });
  }
  for (const [recordId, planned] of plan) {
    if (planned.action !== 'apply') continue;
    const best = highest.get(planned.message.order.id);
    if (best && best.id !== recordId) {
      plan.set(recordId, {
        action: 'superseded',
        message: planned.message,
        byVersion: best.version,
        byRecordId: best.id,
      });
    }
  }
  return plan;
}
