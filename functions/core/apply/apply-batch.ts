// Applies one planned SQS batch (plan-batch.ts), record by record, in whatever order and concurrency the
// batch processor calls it:
//   - an `apply` record is written once (a second call for it shares the first write);
//   - a `superseded` record waits for the write of the version that supersedes it: applied (or stale)
//     → it is acknowledged as stale; failed → it fails too, so SQS redelivers both and the lower version
//     is never deleted while the higher one is not in the table;
//   - a `reject` record fails with its validation error (retried, then dead-lettered).
import type { Int64 } from '../model/int64.js';
import { type ApplyResult, applyValidatedOrderVersion } from './apply-order-version.js';
import type { PlannedRecord } from './plan-batch.js';
import type { OrderStore } from './ports.js';

export class SupersedingVersionFailedError extends Error {
  readonly code = 'ERR_SUPERSEDING_VERSION_FAILED';
  constructor(orderId: Int64, version: Int64, byVersion: Int64, options: { cause: unknown }) {
    super(
      `order ${orderId} version ${version} waits for version ${byVersion} of the same batch, whose write failed; both are retried`,
      options,
    );
    this.name = 'SupersedingVersionFailedError';
  }
}

export function batchApplier(
  store: OrderStore,
  plan: ReadonlyMap<string, PlannedRecord>,
): (recordId: string) => Promise<ApplyResult> {
  const writes = new Map<string, Promise<ApplyResult>>();
  const writeOnce = (recordId: string, planned: Extract<PlannedRecord, { action: 'apply' }>) => {
    let write = writes.get(recordId);
    if (!write) {
      write = applyValidatedOrderVersion(store, planned.message);
      writes.set(recordId, write);
    }
    return write;
  };

  return async function applyRecord(recordId: string): Promise<ApplyResult> {
    const planned = plan.get(recordId);
    if (!planned) throw new Error('record missing from the batch plan');
    if (planned.action === 'reject') throw planned.error;
    if (planned.action === 'apply') return writeOnce(recordId, planned);
    const { id, version } = planned.message.order;
    const superseding = plan.get(planned.byRecordId);
    if (superseding?.action !== 'apply') throw new Error('superseding record missing from the batch plan');
    try {
      await writeOnce(planned.byRecordId, superseding);
    } catch (error) {
      throw new SupersedingVersionFailedError(id, version, planned.byVersion, { cause: error });
    }
    return { outcome: 'stale', orderId: id, version, storedVersion: planned.byVersion };
  };
}
