// SQS batch → per record the kit's parser → applyOrderVersion; a failed record throws, so only it is retried.
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  type ApplyResult,
  applyOrderVersion,
  type OrdersTable,
  recordSupersededVersion,
} from '../core/apply/apply-order-version.js';
import type { SalesChange } from '../core/apply/sale.js';
import { parseOrderVersionMessage } from '../core/contract/consumer-kit.js';
import type { OrderVersionMessage } from '../core/contract/order-version-message.js';
import type { ConsumerCountName, FunctionMetrics } from '../core/observability/metric-names.js';
import { NO_METRICS } from '../core/observability/powertools.js';
import { span, tracer } from '../core/observability/tracer.js';
import type { ConsumerConfig } from './config.js';

export interface BatchCounts {
  applied: number;
  stale: number;
  failed: number;
}

export interface ConsumerOverrides {
  orders?: OrdersTable;
  logger?: Logger;
  metrics?: FunctionMetrics;
  /** Told each invocation's counts when its batch is settled (local mode sums them for its progress). */
  onBatchSettled?: (counts: BatchCounts) => void;
}

/** The batch line names at most this many distinct correlation ids (a batch rarely spans more than two pages). */
const BATCH_LOG_CORRELATION_IDS = 10;

const SALES_METRICS: Record<SalesChange, ConsumerCountName[]> = {
  counted: ['SalesCounted'],
  reversed: ['SalesReversed'],
  'amount-changed': ['SalesAmountChanged'],
  moved: ['SalesReversed', 'SalesCounted'],
  none: [],
};

/** A record's body, parsed once per batch (or why it could not be). */
type Parsed = { message: OrderVersionMessage } | { error: unknown };
/** An order's highest version in the batch, and its write once started (one however many records wait). */
type Top = { message: OrderVersionMessage; written?: Promise<ApplyResult> };

export function buildConsumer(
  clients: { dynamo: DynamoDBClient },
  config: ConsumerConfig,
  overrides: ConsumerOverrides = {},
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const logger = overrides.logger ?? new Logger({ serviceName: 'order-feed-consumer' });
  const metrics = overrides.metrics ?? NO_METRICS;
  const orders: OrdersTable = overrides.orders ?? {
    client: clients.dynamo,
    tableName: config.ordersTableName,
    ...(config.history ? { history: config.history } : {}),
  };

  /** A version below its order's highest in the batch (`top`) waits for that one's write and is stale. */
  async function apply(message: OrderVersionMessage, top: Top): Promise<ApplyResult> {
    top.written ??= applyOrderVersion(orders, top.message);
    if (top.message === message) return top.written;
    const { id, version } = message.order;
    const by = await top.written.catch((cause: unknown) => {
      throw new Error(
        `order ${id} version ${version} waits for version ${top.message.order.version} of the same batch, whose write failed; both are retried`,
        { cause },
      );
    });
    // Its orders write is skipped, not its history entry (a failure here fails only this record).
    await recordSupersededVersion(orders, message, by);
    return { outcome: 'stale', orderId: id, version, storedVersion: top.message.order.version };
  }

  return async (event, context) => {
    logger.addContext(context);
    return span('## order batch', {}, async (batchSegment) => {
      tracer?.annotateColdStart();
      tracer?.addServiceNameAnnotation();
      batchSegment?.addMetadata('records', event.Records.length);
      const counts: BatchCounts = { applied: 0, stale: 0, failed: 0 };
      const parsed = new Map<string, Parsed>();
      const highest = new Map<OrderVersionMessage['order']['id'], Top>();
      for (const record of event.Records) {
        try {
          const message = parseOrderVersionMessage(record.body);
          parsed.set(record.messageId, { message });
          const top = highest.get(message.order.id);
          if (!top || message.order.version > top.message.order.version)
            highest.set(message.order.id, { message });
        } catch (error) {
          parsed.set(record.messageId, { error });
        }
      }

      function applyRecord(record: SQSRecord): Promise<ApplyResult> {
        // From the attribute, so even a body that fails validation can be traced to its run.
        const attributeId = correlationIdOf(record);
        const entry = parsed.get(record.messageId) ?? { error: new Error('record missing from its batch') };
        const message = 'message' in entry ? entry.message : undefined;
        const correlationId = message?.source.correlationId ?? attributeId;
        const annotations = {
          // Ids as strings: one type in queries, and exact beyond 2^53 (X-Ray numbers are doubles).
          ...(message ? { orderId: String(message.order.id), version: String(message.order.version) } : {}),
          ...(correlationId ? { correlationId } : {}),
        };
        return span('### order version', annotations, async (subsegment) => {
          try {
            if (!('message' in entry)) throw entry.error;
            const result = await apply(entry.message, highest.get(entry.message.order.id) ?? entry);
            subsegment?.addMetadata('outcome', result.outcome);
            // Per record, so DEBUG (LOG_LEVEL=DEBUG to see it): which run's version was applied or found stale.
            logger.debug('order version message processed', {
              messageId: record.messageId,
              correlationId: attributeId,
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
              correlationId: attributeId,
              receiveCount: record.attributes.ApproximateReceiveCount,
              error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
            });
            throw error;
          }
        });
      }

      try {
        // One per invocation: overlapping batches (local mode runs two) sharing one would overwrite each
        // other's failures, and a failed record would be deleted instead of retried.
        const processor = new BatchProcessor(EventType.SQS);
        return await processPartialResponse(event, applyRecord, processor, { context });
      } finally {
        metrics.publish();
        logger.info('order version batch processed', { ...counts, ...correlationIdsOf(event.Records) });
        for (const [name, count] of Object.entries(counts)) batchSegment?.addMetadata(name, count);
        overrides.onBatchSettled?.(counts);
      }
    });
  };
}

function correlationIdOf(record: SQSRecord): string | undefined {
  return record.messageAttributes?.correlationId?.stringValue;
}

/** A batch's distinct correlation ids, bounded so a large batch cannot make a huge log line. */
function correlationIdsOf(records: readonly SQSRecord[]) {
  const distinct = [...new Set(records.map(correlationIdOf).filter((id): id is string => !!id))];
  const more = distinct.length - BATCH_LOG_CORRELATION_IDS;
  return {
    correlationIds: distinct.slice(0, BATCH_LOG_CORRELATION_IDS),
    ...(more > 0 ? { moreCorrelationIds: more } : {}),
  };
}
