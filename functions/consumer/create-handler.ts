// Builds the consumer's Lambda handler from its dependencies. handler.ts wires the AWS ones once per
// container; local mode, tests and benchmarks pass their own store, logger, metrics and an observer that
// receives each invocation's counts (instead of reading module state back). Flow: SQS batch → planBatch
// (validate once, find versions superseded within the batch) → batchApplier per record (a superseded
// version is acknowledged only once its successor is applied), with partial batch responses so one bad
// message fails only itself (and reaches the DLQ after the queue's maxReceiveCount).
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { batchApplier } from '../core/apply/apply-batch.js';
import type { ApplyResult } from '../core/apply/apply-order-version.js';
import { planBatch } from '../core/apply/plan-batch.js';
import type { OrderStore } from '../core/apply/ports.js';

export type ConsumerMetricName =
  | 'VersionsApplied'
  | 'VersionsStale'
  | 'MessagesFailed'
  | 'SalesCounted'
  | 'SalesReversed'
  | 'SalesAmountChanged';

export interface ConsumerMetrics {
  count(name: ConsumerMetricName, value?: number): void;
  /** Flushes what the invocation recorded (Powertools: one EMF document). */
  publish(): void;
}

/** One invocation's records, by what became of them. */
export interface BatchCounts {
  applied: number;
  stale: number;
  failed: number;
}

export interface ConsumerDependencies {
  store: OrderStore;
  logger: Logger;
  metrics: ConsumerMetrics;
  /** Told each invocation's counts when its batch is settled (local mode sums them for its progress). */
  onBatchSettled?: (counts: BatchCounts) => void;
}

export type ConsumerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

const SALES_METRICS = {
  counted: ['SalesCounted'],
  reversed: ['SalesReversed'],
  'amount-changed': ['SalesAmountChanged'],
  moved: ['SalesReversed', 'SalesCounted'],
  none: [],
} as const;

export function createConsumerHandler(deps: ConsumerDependencies): ConsumerHandler {
  const { logger, metrics } = deps;

  async function applyRecord(
    record: SQSRecord,
    apply: (recordId: string) => Promise<ApplyResult>,
    counts: BatchCounts,
  ): Promise<ApplyResult> {
    // The run that produced the message (`poll:<runId>:<page>`, `reconcile:<runId>`): read from the
    // attribute, so even a body that fails validation can be traced to its run.
    const correlationId = record.messageAttributes?.correlationId?.stringValue;
    try {
      const result = await apply(record.messageId);
      // Per record, so DEBUG (LOG_LEVEL=DEBUG to see it): which run's version was applied or found stale.
      logger.debug('order version message processed', {
        messageId: record.messageId,
        correlationId,
        orderId: result.orderId,
        version: result.version,
        outcome: result.outcome,
      });
      if (result.outcome === 'stale') {
        counts.stale += 1;
        metrics.count('VersionsStale');
      } else {
        counts.applied += 1;
        metrics.count('VersionsApplied');
        for (const name of SALES_METRICS[result.salesChange]) metrics.count(name);
      }
      return result;
    } catch (error) {
      counts.failed += 1;
      metrics.count('MessagesFailed');
      // The message id and receive count locate the message; its body (customer data) is not logged.
      logger.error('order version message failed; it will be retried, then dead-lettered', {
        messageId: record.messageId,
        correlationId,
        receiveCount: record.attributes.ApproximateReceiveCount,
        error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
      });
      throw error;
    }
  }

  return async (event, context) => {
    logger.addContext(context);
    const counts: BatchCounts = { applied: 0, stale: 0, failed: 0 };
    try {
      const plan = planBatch(event.Records.map((record) => ({ id: record.messageId, body: record.body })));
      const apply = batchApplier(deps.store, plan);
      // One processor per invocation: a BatchProcessor holds the failures of the batch it is processing,
      // so sharing one lets two overlapping batches in one process (local mode runs two at once)
      // overwrite each other's failures, and a failed record would be deleted instead of retried.
      const processor = new BatchProcessor(EventType.SQS);
      return await processPartialResponse(
        event,
        (record: SQSRecord) => applyRecord(record, apply, counts),
        processor,
        { context },
      );
    } finally {
      metrics.publish();
      deps.onBatchSettled?.(counts);
    }
  };
}
