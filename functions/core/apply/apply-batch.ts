// Applies one planned SQS batch (plan-batch.ts), record by record, in whatever order and concurrency the
// batch processor calls it:
//   - an `apply` record is written once (a second call for it shares the first write);
//   - a `superseded` record waits for the write of the version that supersedes it: applied (or stale)
//     → it is acknowledged as stale; failed → it fails too, so SQS redelivers both and the lower version
//     is never deleted while the higher one is not in the table;
//   - a `reject` record fails with its validation error (retried, then dead-lettered).
// Each record is one span (`### order version`), annotated with the order id, the version and the
// correlation id of the run that produced it, so a trace leads from a record back to its poll run.
import type { Int64 } from '../model/int64.js';
import { type Annotations, idValue, NO_TRACING } from '../observability/tracing.js';
import { type ApplyResult, applyValidatedOrderVersion } from './apply-order-version.js';
import type { PlannedRecord } from './plan-batch.js';
import type { OrderStore, Tracing } from './ports.js';

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

/**
 * Applies one record of the plan. `correlationId` is the message's attribute: the span carries it when the
 * body has none (a body that failed validation, or a message sent before bodies carried it).
 */
export type RecordApplier = (recordId: string, correlationId?: string) => Promise<ApplyResult>;

export function batchApplier(
  store: OrderStore,
  plan: ReadonlyMap<string, PlannedRecord>,
  tracing: Tracing = NO_TRACING,
): RecordApplier {
  const writes = new Map<string, Promise<ApplyResult>>();
  const writeOnce = (recordId: string, planned: Extract<PlannedRecord, { action: 'apply' }>) => {
    let write = writes.get(recordId);
    if (!write) {
      write = applyValidatedOrderVersion(store, planned.message);
      writes.set(recordId, write);
    }
    return write;
  };

  async function applyPlanned(recordId: string, planned: PlannedRecord): Promise<ApplyResult> {
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
  }

  return async function applyRecord(recordId, correlationId) {
    const planned = plan.get(recordId);
    if (!planned) throw new Error('record missing from the batch plan');
    return tracing.span('### order version', spanAnnotations(planned, correlationId), async (span) => {
      const result = await applyPlanned(recordId, planned);
      span.detail('outcome', result.outcome);
      return result;
    });
  };
}

/** Order id, version (strings: int64) and correlation id: what leads from a record to its run and row. */
function spanAnnotations(planned: PlannedRecord, attributeCorrelationId: string | undefined): Annotations {
  const correlationId =
    planned.action === 'reject'
      ? attributeCorrelationId
      : (planned.message.source.correlationId ?? attributeCorrelationId);
  const order = planned.action === 'reject' ? undefined : planned.message.order;
  return {
    ...(order ? { orderId: idValue(order.id), version: idValue(order.version) } : {}),
    ...(correlationId === undefined || correlationId === '' ? {} : { correlationId }),
  };
}
