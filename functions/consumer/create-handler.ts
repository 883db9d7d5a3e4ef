// Builds the consumer's Lambda handler from its dependencies. handler.ts wires the AWS ones once per
// container; local mode, tests and benchmarks pass their own orders table client, logger, metrics and an
// observer that receives each invocation's counts (instead of reading module state back).
// Flow: SQS batch → Powertools processPartialResponse → per record: the public kit's parser
// (parseOrderVersionMessage) → applyOrderVersion (the kit's conditional put of the orders table item);
// a failed record throws, so only it is retried (and reaches the DLQ after the queue's maxReceiveCount).
// Two versions of one order in a batch need no coordination: the version-guarded put keeps the highest,
// and a lower one is applied (and later replaced) or found stale. Traced as one span per invocation
// (`## order batch`) with one per record inside (`### order version`); one INFO line per batch names its
// counts and the correlation ids of the runs whose messages it held.
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type ApplyResult, applyOrderVersion, type OrdersTable } from '../core/apply/apply-order-version.js';
import type { SalesChange } from '../core/apply/sale.js';
import { parseOrderVersionMessage } from '../core/contract/consumer.js';
import type { OrderVersionMessage } from '../core/contract/order-version-message.js';
import { type Annotations, idValue, NO_TRACING, type Tracing } from '../core/observability/tracing.js';

export type ConsumerMetricName =
  | 'VersionsApplied'
  | 'VersionsStale'
  | 'MessagesFailed'
  | (typeof SALES_METRICS)[SalesChange][number];

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
  /** Where applied versions go (handler.ts: the stack's orders table). */
  orders: OrdersTable;
  logger: Logger;
  metrics: ConsumerMetrics;
  /** Told each invocation's counts when its batch is settled (local mode sums them for its progress). */
  onBatchSettled?: (counts: BatchCounts) => void;
  /** Spans of each batch and record (handler.ts: X-Ray through Powertools Tracer); default: none. */
  tracing?: Tracing;
}

/** The batch line names at most this many distinct correlation ids (a batch rarely spans more than two pages). */
const BATCH_LOG_CORRELATION_IDS = 10;

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

  /** One record: validated, written, traced (its span annotated with what leads to its run and row). */
  async function applyMessage(record: SQSRecord, correlationId: string | undefined): Promise<ApplyResult> {
    let message: OrderVersionMessage | undefined;
    let invalid: unknown;
    try {
      message = parseOrderVersionMessage(record.body);
    } catch (error) {
      invalid = error;
    }
    return tracing.span('### order version', spanAnnotations(message, correlationId), async (span) => {
      if (message === undefined) throw invalid;
      const result = await applyOrderVersion(deps.orders, message);
      span.detail('outcome', result.outcome);
      return result;
    });
  }

  async function applyRecord(record: SQSRecord, counts: BatchCounts): Promise<ApplyResult> {
    // The run that produced the message (`poll:<runId>:<page>`, `reconcile:<runId>`): read from the
    // attribute, so even a body that fails validation can be traced to its run.
    const correlationId = correlationIdOf(record);
    try {
      const result = await applyMessage(record, correlationId);
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
        // One processor per invocation: a BatchProcessor holds the failures of the batch it is processing,
        // so sharing one lets two overlapping batches in one process (local mode runs two at once)
        // overwrite each other's failures, and a failed record would be deleted instead of retried.
        const processor = new BatchProcessor(EventType.SQS);
        return await processPartialResponse(
          event,
          (record: SQSRecord) => applyRecord(record, counts),
          processor,
          { context },
        );
      } finally {
        metrics.publish();
        logger.info('order version batch processed', { ...counts, ...correlationIdsOf(event.Records) });
        for (const [name, count] of Object.entries(counts)) span.detail(name, count);
        deps.onBatchSettled?.(counts);
      }
    });
  };
}

/** Order id, version (strings: int64) and correlation id (the body's, else the attribute's). */
function spanAnnotations(
  message: OrderVersionMessage | undefined,
  attributeCorrelationId: string | undefined,
): Annotations {
  const correlationId = message?.source.correlationId ?? attributeCorrelationId;
  return {
    ...(message ? { orderId: idValue(message.order.id), version: idValue(message.order.version) } : {}),
    ...(correlationId === undefined || correlationId === '' ? {} : { correlationId }),
  };
}

function correlationIdOf(record: SQSRecord): string | undefined {
  return record.messageAttributes?.correlationId?.stringValue;
}

/**
 * The distinct correlation ids of a batch's records (from the attribute, in order of first appearance):
 * the runs and pages its messages came from. Bounded, so a large batch cannot make a huge log line.
 */
function correlationIdsOf(records: readonly SQSRecord[]) {
  const distinct = [...new Set(records.map(correlationIdOf).filter((id): id is string => !!id))];
  const more = distinct.length - BATCH_LOG_CORRELATION_IDS;
  return {
    correlationIds: distinct.slice(0, BATCH_LOG_CORRELATION_IDS),
    ...(more > 0 ? { moreCorrelationIds: more } : {}),
  };
}
