// Consumer Lambda: SQS batch → planBatch (validate once, find versions superseded within the batch) →
// batchApplier per record (a superseded version is acknowledged only once its successor is applied),
// with partial batch responses so one bad message fails only itself (and reaches the DLQ after the
// queue's maxReceiveCount). Wiring only.
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { createDynamoDbClient } from '../core/adapters/aws-clients.js';
import { DynamoOrderStore } from '../core/adapters/dynamo-order-store.js';
import { batchApplier } from '../core/apply/apply-batch.js';
import type { ApplyResult } from '../core/apply/apply-order-version.js';
import { planBatch } from '../core/apply/plan-batch.js';
import { countOn, createObservability } from '../core/observability/powertools.js';
import { loadConsumerConfig } from './config.js';

const config = loadConsumerConfig(process.env);
const { logger, metrics } = createObservability('order-feed-consumer');
const count = countOn(metrics);
const store = new DynamoOrderStore(createDynamoDbClient(), config.ordersTableName);

const SALES_METRICS = {
  counted: ['SalesCounted'],
  reversed: ['SalesReversed'],
  'amount-changed': ['SalesAmountChanged'],
  moved: ['SalesReversed', 'SalesCounted'],
  none: [],
} as const;

/**
 * Running totals of this container, for in-process runners (local mode prints them); CloudWatch
 * gets the same counts as metrics.
 */
export const consumerTotals = { applied: 0, stale: 0, failed: 0 };

async function applyRecord(
  record: SQSRecord,
  apply: (recordId: string) => Promise<ApplyResult>,
): Promise<ApplyResult> {
  try {
    const result = await apply(record.messageId);
    if (result.outcome === 'stale') {
      consumerTotals.stale += 1;
      count('VersionsStale');
    } else {
      consumerTotals.applied += 1;
      count('VersionsApplied');
      for (const name of SALES_METRICS[result.salesChange]) count(name);
    }
    return result;
  } catch (error) {
    consumerTotals.failed += 1;
    count('MessagesFailed');
    // The message id and receive count locate the message; its body (customer data) is not logged.
    logger.error('order version message failed; it will be retried, then dead-lettered', {
      messageId: record.messageId,
      receiveCount: record.attributes.ApproximateReceiveCount,
      error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
    });
    throw error;
  }
}

export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  logger.addContext(context);
  try {
    const plan = planBatch(event.Records.map((record) => ({ id: record.messageId, body: record.body })));
    const apply = batchApplier(store, plan);
    // One processor per invocation: a BatchProcessor holds the failures of the batch it is processing,
    // so sharing one lets two overlapping batches in one process (local mode runs two at once)
    // overwrite each other's failures, and a failed record would be deleted instead of retried.
    const processor = new BatchProcessor(EventType.SQS);
    return await processPartialResponse(event, (record: SQSRecord) => applyRecord(record, apply), processor, {
      context,
    });
  } finally {
    metrics.publishStoredMetrics();
  }
};
