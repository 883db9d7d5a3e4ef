// Builds the consumer's Lambda handler from its dependencies. handler.ts wires the AWS ones once per
// container; local mode, tests and benchmarks pass their own store, logger, metrics and an observer that
// receives each invocation's counts (instead of reading module state back). Flow: SQS batch → planBatch
// (validate once, find versions superseded within the batch) → batchApplier per record (a superseded
// version is acknowledged only once its successor is applied), with partial batch responses so one bad
// message fails only itself (and reaches the DLQ after the queue's maxReceiveCount). Traced as one span per
// invocation (`## order batch`) with one per record inside (apply-batch.ts); one INFO line per batch names
// its counts and the correlation ids of the runs whose messages it held.
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { batchApplier, type RecordApplier } from '../core/apply/apply-batch.js';
import type { ApplyResult } from '../core/apply/apply-order-version.js';
import { planBatch } from '../core/apply/plan-batch.js';
import type { OrderStore, Tracing } from '../core/apply/ports.js';
import { NO_TRACING } from '../core/observability/tracing.js';

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
  /** Spans of each batch and record (handler.ts: X-Ray through Powertools Tracer); default: none. */
  tracing?: Tracing;
}

/** The batch line names at most this many distinct correlation ids (a batch rarely spans more than two pages). */
export const BATCH_LOG_CORRELATION_IDS = 10;

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
  const tracing = deps.tracing ?? NO_TRACING;

  async function applyRecord(
    record: SQSRecord,
    apply: RecordApplier,
    counts: BatchCounts,
  ): Promise<ApplyResult> {
    // The run that produced the message (`poll:<runId>:<page>`, `reconcile:<runId>`): read from the
    // attribute, so even a body that fails validation can be traced to its run.
    const correlationId = correlationIdOf(record);
    try {
      const result = await apply(record.messageId, correlationId);
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
    return tracing.span('## order batch', {}, async (span) => {
      span.detail('records', event.Records.length);
      const counts: BatchCounts = { applied: 0, stale: 0, failed: 0 };
      try {
        const plan = planBatch(event.Records.map((record) => ({ id: record.messageId, body: record.body })));
        const apply = batchApplier(deps.store, plan, tracing);
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
        logger.info('order version batch processed', { ...counts, ...correlationIdsOf(event.Records) });
        span.detail('applied', counts.applied);
        span.detail('stale', counts.stale);
        span.detail('failed', counts.failed);
        deps.onBatchSettled?.(counts);
      }
    });
  };
}

function correlationIdOf(record: SQSRecord): string | undefined {
  return record.messageAttributes?.correlationId?.stringValue;
}

/**
 * The distinct correlation ids of a batch's records (from the attribute, in order of first appearance):
 * the runs and pages its messages came from. Bounded, so a large batch cannot make a huge log line.
 */
export function correlationIdsOf(records: readonly SQSRecord[]): {
  correlationIds: string[];
  moreCorrelationIds?: number;
} {
  const distinct = [
    ...new Set(records.map(correlationIdOf).filter((id): id is string => id !== undefined && id !== '')),
  ];
  const correlationIds = distinct.slice(0, BATCH_LOG_CORRELATION_IDS);
  const more = distinct.length - correlationIds.length;
  return more > 0 ? { correlationIds, moreCorrelationIds: more } : { correlationIds };
}
