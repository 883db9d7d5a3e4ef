// Reads and validates a message body against the public contract. The order is re-validated with the
// same parser the poller uses (normalised output parses to itself), so a consumer never trusts a
// hand-edited or foreign message more than the partner's own data.

import {
  MESSAGE_ORIGINS,
  type MessageOrigin,
  type OrderVersionMessage,
  SCHEMA_VERSION,
} from '../contract/order-version-message.js';
import { parseJsonExact } from '../model/int64.js';
import { parseOrder } from '../model/parse-order.js';

export class InvalidMessageError extends Error {
  readonly code = 'ERR_INVALID_MESSAGE';
  constructor(reason: string) {
    super(`invalid order version message: ${reason}`);
    this.name = 'InvalidMessageError';
  }
}

export function parseOrderVersionMessage(body: string): OrderVersionMessage {
  let parsed: unknown;
  try {
    parsed = parseJsonExact(body);
  } catch {
    throw new InvalidMessageError('body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidMessageError('body is not a JSON object');
  }
  const envelope = parsed as Record<string, unknown>;
  if (envelope.schemaVersion !== SCHEMA_VERSION) {
    throw new InvalidMessageError(`unsupported schemaVersion ${JSON.stringify(envelope.schemaVersion)}`);
  }
  const source = envelope.source as Record<string, unknown> | undefined;
  if (typeof source !== 'object' || source === null || typeof source.feedId !== 'string') {
    throw new InvalidMessageError('source.feedId is missing');
  }
  const order = parseOrder(envelope.order);
  if (!order.ok) throw new InvalidMessageError(order.reason);
  return {
    schemaVersion: SCHEMA_VERSION,
    order: order.order,
    source: {
      feedId: source.feedId,
      pageId: typeof source.pageId === 'string' ? source.pageId : null,
      fetchedAt: typeof source.fetchedAt === 'string' ? source.fetchedAt : '',
      findings: Array.isArray(source.findings)
        ? (source.findings as OrderVersionMessage['source']['findings'])
        : [],
      // Optional within schemaVersion 1 (older messages lack them); carried on to logs and the stored item.
      ...(typeof source.correlationId === 'string' && source.correlationId !== ''
        ? { correlationId: source.correlationId }
        : {}),
      ...(MESSAGE_ORIGINS.includes(source.origin as MessageOrigin)
        ? { origin: source.origin as MessageOrigin }
        : {}),
    },
  };
}
