// The order version messages the consumer tests feed in, as the poller publishes them: from feed-a, the first
// page of run 1, unless `source` says otherwise.
import type { SQSRecord } from 'aws-lambda';
import {
  buildOrderVersionMessage,
  type MessageSource,
  type OutgoingMessage,
} from '../../functions/core/contract/order-version-message.js';
import type { Int64 } from '../../functions/core/model/int64.js';
import type { Order } from '../../functions/core/model/types.js';
import { sampleOrder, toOrder } from '../fixtures/orders.js';
import { sqsRecord } from './fakes.js';

export const FETCHED_AT = '2024-05-01T08:00:00.000Z';

export function messageOf(order: Order, source: Partial<MessageSource> = {}): OutgoingMessage {
  return buildOrderVersionMessage(order, {
    feedId: 'feed-a',
    pageId: null,
    fetchedAt: FETCHED_AT,
    findings: [],
    correlationId: 'poll:run-1:1',
    origin: 'poll',
    ...source,
  });
}

/** The SQS record of the sample order as order `id` at `version`, its correlation id in body and attribute. */
export function recordOf(
  messageId: string,
  id: Int64,
  version: Int64,
  correlationId = 'poll:run-1:1',
): SQSRecord {
  const { body } = messageOf({ ...toOrder(sampleOrder()), id, version }, { correlationId });
  return sqsRecord(messageId, body, correlationId);
}
