// Builds the consumer's Lambda handler from its dependencies. handler.ts wires the AWS ones once per
// container; local mode, tests and benchmarks pass their own orders table client, logger, metrics and an
// observer that receives each invocation's counts (instead of reading module state back).
// Flow: SQS batch → Powertools processPartialResponse → per record: the public kit's parser
// (parseOrderVersionMessage) → applyOrderVersion (the kit's conditional put of the orders table item);
// a failed record throws, so only it is retried (and reaches the DLQ after the queue's maxReceiveCount).
// Two versions of one order in one batch: only the highest is written (a lower one's write would be a
// conditional write DynamoDB charges for and that applies nothing, or is replaced at once; this keeps the
// cost per version at its floor), and the lower one is acknowledged as stale only once the highest is
// written: if that write fails, the lower one fails with it, so both are retried and nothing is lost while
// the highest waits in the dead-letter queue (see supersededInBatch). Traced as one span per invocation
// (`## order batch`) with one per record inside (`### order version`); one INFO line per batch names its
// counts and the correlation ids of the runs whose messages it held.
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  type ApplyResult,
  applyOrderVersion,
  type OrdersTable,
  recordSupersededVersion,
} from '../core/apply/apply-order-version.js';
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

  /**
   * One record: validated (once per batch), written, traced (its span annotated with what leads to its run
   * and row). A record superseded in its batch waits for the superseding record's write instead.
   */
  async function applyMessage(
    record: SQSRecord,
    batch: BatchPlan,
    correlationId: string | undefined,
  ): Promise<ApplyResult> {
    const planned = batch.planned.get(record.messageId);
    const message = planned && 'message' in planned ? planned.message : undefined;
    return tracing.span('### order version', spanAnnotations(message, correlationId), async (span) => {
      if (!planned || !('message' in planned))
        throw planned?.error ?? new Error('record missing from its batch');
      const { supersededBy } = planned;
      const result = supersededBy
        ? await batch.written(supersededBy).then(
            async (by): Promise<ApplyResult> => {
              // Its orders write is skipped, not its history entry (a failure here fails only this record).
              await recordSupersededVersion(deps.orders, planned.message, by);
              return {
                outcome: 'stale',
                orderId: planned.message.order.id,
                version: planned.message.order.version,
                storedVersion: supersededBy.message.order.version,
              };
            },
            (cause: unknown) => {
              throw new Error(
                `order ${planned.message.order.id} version ${planned.message.order.version} waits for version ${supersededBy.message.order.version} of the same batch, whose write failed; both are retried`,
                { cause },
              );
            },
          )
        : await batch.written(planned);
      span.detail('outcome', result.outcome);
      return result;
    });
  }

  async function applyRecord(record: SQSRecord, batch: BatchPlan, counts: BatchCounts): Promise<ApplyResult> {
    // The run that produced the message (`poll:<runId>:<page>`, `reconcile:<runId>`): read from the
    // attribute, so even a body that fails validation can be traced to its run.
    const correlationId = correlationIdOf(record);
    try {
      const result = await applyMessage(record, batch, correlationId);
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
        const batch = planBatch(event.Records, (message) => applyOrderVersion(deps.orders, message));
        return await processPartialResponse(
          event,
          (record: SQSRecord) => applyRecord(record, batch, counts),
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

type Planned =
  | { error: unknown }
  | { message: OrderVersionMessage; supersededBy?: Extract<Planned, { message: OrderVersionMessage }> };

interface BatchPlan {
  planned: ReadonlyMap<string, Planned>;
  /** The record's write, started once however many records wait for it. */
  written(record: Extract<Planned, { message: OrderVersionMessage }>): Promise<ApplyResult>;
}

/**
 * Parses every record of a batch once and marks, per order, every version below the batch's highest valid
 * one as superseded by it (of equal versions, duplicate deliveries, the first is written).
 */
function planBatch(
  records: readonly SQSRecord[],
  write: (message: OrderVersionMessage) => Promise<ApplyResult>,
): BatchPlan {
  const planned = new Map<string, Planned>();
  const highest = new Map<OrderVersionMessage['order']['id'], { message: OrderVersionMessage }>();
  for (const record of records) {
    try {
      const entry = { message: parseOrderVersionMessage(record.body) };
      planned.set(record.messageId, entry);
      const best = highest.get(entry.message.order.id);
      if (!best || entry.message.order.version > best.message.order.version)
        highest.set(entry.message.order.id, entry);
    } catch (error) {
      planned.set(record.messageId, { error });
    }
  }
  for (const entry of planned.values()) {
    if (!('message' in entry)) continue;
    const best = highest.get(entry.message.order.id);
    if (best && best !== entry) entry.supersededBy = best;
  }
  const writes = new Map<object, Promise<ApplyResult>>();
  return {
    planned,
    written(record) {
      let pending = writes.get(record);
      if (!pending) {
        pending = write(record.message);
        writes.set(record, pending);
      }
      return pending;
    },
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
