// Turns one raw page into what the poller must durably hand off before it may commit the page:
// messages to publish, and records to quarantine (invalid or too large for SQS). Pure and synchronous,
// so it is unit-tested and benchmarked on its own.

import {
  HISTORY_ATTRIBUTES_MAX_BYTES,
  keyLimitProblem,
  storedOrderItem,
} from '../adapters/stored-order-item.js';
import { saleOf } from '../apply/sale.js';
import { DYNAMO_MAX_ITEM_BYTES } from '../aws-limits.js';
import { buildOrderVersionMessage, type OutgoingMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import { parseOrder } from '../model/parse-order.js';
import type { Order } from '../model/types.js';
import type { QuarantinedRecord } from './ports.js';

export interface PreparedPage {
  messages: OutgoingMessage[];
  quarantined: QuarantinedRecord[];
  /** How many of the quarantined records were valid but too large to carry. */
  oversized: number;
  /** Highest event timestamp among the page's valid orders (UTC ISO), if any. */
  highWaterMark: string | undefined;
  /** Published versions that carry findings: their identity and finding codes only (no customer data). */
  withFindings: Array<{ orderId: Int64; version: Int64; codes: string[] }>;
}

export interface PageContext {
  feedId: string;
  pageId: string | null;
  fetchedAt: string;
  /** The poll run and page that fetched it (`poll:<runId>:<page>`), carried by every message. */
  correlationId: string;
  maxMessageBytes: number;
}

export function preparePage(records: readonly unknown[], context: PageContext): PreparedPage {
  const { feedId, pageId, fetchedAt, correlationId } = context;
  const page: PreparedPage = {
    messages: [],
    quarantined: [],
    oversized: 0,
    highWaterMark: undefined,
    withFindings: [],
  };
  const quarantine = (raw: unknown, reason: string, issues: string[], orderId?: Int64, version?: Int64) =>
    page.quarantined.push({
      feedId,
      pageId,
      reason,
      issues,
      ...(orderId === undefined ? {} : { orderId }),
      ...(version === undefined ? {} : { version }),
      raw,
      quarantinedAt: fetchedAt,
    });
  for (const raw of records) {
    const parsed = parseOrder(raw);
    if (!parsed.ok) {
      quarantine(raw, parsed.reason, parsed.issues, parsed.orderId, parsed.version);
      continue;
    }
    const { order, findings } = parsed;
    const message = buildOrderVersionMessage(order, {
      feedId,
      pageId,
      fetchedAt,
      findings,
      correlationId,
      origin: 'poll',
    });
    const codes = [...new Set(findings.map((finding) => finding.code))];
    const tooLarge = tooLargeToCarry(order, codes, message.sizeBytes, context);
    if (tooLarge !== undefined) {
      page.oversized += 1;
      quarantine(raw, tooLarge, [], order.id, order.version);
      continue;
    }
    page.messages.push(message);
    if (codes.length > 0) page.withFindings.push({ orderId: order.id, version: order.version, codes });
    // Timestamps are normalised toISOString() strings, so string order is time order.
    for (const at of [
      order.placedAt,
      order.acceptedAt,
      order.cancelledAt,
      order.dispatchedAt,
      order.deliveredAt,
      order.returnedAt,
    ]) {
      if (at !== undefined && (page.highWaterMark === undefined || at > page.highWaterMark)) {
        page.highWaterMark = at;
      }
    }
  }
  return page;
}

/** Below this message size the stored item is surely under DynamoDB's limit: skip computing it. */
const CHECK_STORED_ITEM_ABOVE_BYTES = 300 * 1024;

/**
 * Why a valid order version cannot be carried (a key value over DynamoDB's limit, too large for SQS, or for a
 * DynamoDB item even with its items compressed), or undefined. Decided here, at ingestion, so it is
 * quarantined with the reason instead of failing in the consumer and being dead-lettered as poison.
 */
function tooLargeToCarry(
  order: Order,
  findingCodes: string[],
  messageBytes: number,
  { correlationId, maxMessageBytes }: PageContext,
): string | undefined {
  const keyProblem = keyLimitProblem(order);
  if (keyProblem !== undefined) return keyProblem;
  if (messageBytes > maxMessageBytes) {
    return `message of ${messageBytes} bytes exceeds the SQS limit of ${maxMessageBytes} bytes`;
  }
  if (messageBytes <= CHECK_STORED_ITEM_ABOVE_BYTES) return undefined;
  const stored = storedOrderItem(order, saleOf(order), { findingCodes, correlationId });
  // The history entry is the same item plus a few attributes: it must fit as well.
  return stored.sizeBytes + HISTORY_ATTRIBUTES_MAX_BYTES > DYNAMO_MAX_ITEM_BYTES
    ? `stored item of ${stored.sizeBytes} bytes (${HISTORY_ATTRIBUTES_MAX_BYTES} more in the history) exceeds the DynamoDB limit of ${DYNAMO_MAX_ITEM_BYTES} bytes even with its items compressed`
    : undefined;
}
