// For downstream services: read an order-version message from your queue and apply it to your own
// DynamoDB table only if it is newer than what you stored. Import it as `order-feed-ingester/contract`.
//   parseOrderVersionMessage(body) → a typed, validated message, or an error naming what is wrong
//   applyIfNewer({ client, tableName, message }) → 'applied' | 'stale' (one conditional PutItem)
// Our own consumer uses both (functions/core/apply/apply-order-version.ts), with the orders table's item.
//
// Messages can be duplicated and arrive out of order (see README.md in this folder): keep, per order id,
// the highest version; an equal or lower version is stale. That is exactly what applyIfNewer does, so a
// redelivery, a replay or a backfill is a no-op. Within one schemaVersion fields are only ever added: this
// parser ignores fields it does not know, so a message with a newer additive field still reads.

import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
  type PutItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { itemSize } from '../adapters/dynamo-item-size.js';
import { unmarshallExact } from '../adapters/exact-item.js';
import { DYNAMO_MAX_ITEM_BYTES } from '../adapters/stored-order-item.js';
import { type Int64, isInt64, parseJsonExact } from '../model/int64.js';
import { parseOrder } from '../model/parse-order.js';
import type { Finding } from '../model/types.js';
import {
  MESSAGE_ORIGINS,
  type MessageOrigin,
  type OrderVersionMessage,
  SCHEMA_VERSION,
} from './order-version-message.js';

export type { Int64 } from '../model/int64.js';
export type { Finding, MonetaryAmount, Order, OrderItem, OrderStatus } from '../model/types.js';
export type { MessageOrigin, OrderVersionMessage } from './order-version-message.js';
export { SCHEMA_VERSION } from './order-version-message.js';

/** A body that is not an order-version message this module can read; `path` names the field. */
export class OrderVersionMessageError extends Error {
  readonly code = 'ERR_ORDER_VERSION_MESSAGE';
  /** Where in the body: `schemaVersion`, `source.fetchedAt`, `order.items[0].price.amount`; '' for the body. */
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`invalid order version message: ${path === '' ? '' : `${path}: `}${problem}`);
    this.name = 'OrderVersionMessageError';
    this.path = path;
  }
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Reads one SQS message body. int64 values (`order.id`, `order.version`, every `amount`) come back exact:
 * a number while it is a safe integer, a bigint beyond 2^53 (compare them with `<`, `>`, `===` only after
 * `BigInt(...)` if you mix them with your own numbers). Throws OrderVersionMessageError naming the field.
 */
export function parseOrderVersionMessage(body: string): OrderVersionMessage {
  let parsed: unknown;
  try {
    // JSON.parse would round integers beyond 2^53: ids and versions must stay exact.
    parsed = parseJsonExact(body);
  } catch {
    // Not JSON.parse's message: it quotes part of the body (customer data), and this one gets logged.
    throw new OrderVersionMessageError('', 'body is not JSON');
  }
  const envelope = objectAt('', parsed);
  if (envelope.schemaVersion !== SCHEMA_VERSION) {
    throw new OrderVersionMessageError(
      'schemaVersion',
      `expected ${SCHEMA_VERSION}, got ${describe(envelope.schemaVersion)} (a new schemaVersion is a breaking change: update this module)`,
    );
  }
  const source = objectAt('source', envelope.source);
  const order = parseOrder(envelope.order);
  if (!order.ok) {
    // parseOrder's reasons name the field path within the order, e.g. `invalid field items[0].price.amount: …`.
    throw new OrderVersionMessageError('order', order.reason);
  }
  const correlationId = source.correlationId;
  const origin = source.origin;
  return {
    schemaVersion: SCHEMA_VERSION,
    order: order.order,
    source: {
      feedId: nonEmptyString('source.feedId', source.feedId),
      pageId: source.pageId === null ? null : nonEmptyString('source.pageId', source.pageId),
      fetchedAt: timestamp('source.fetchedAt', source.fetchedAt),
      findings: findings(source.findings),
      // Added within schemaVersion 1: absent in earlier messages, checked when present.
      ...(correlationId === undefined
        ? {}
        : { correlationId: nonEmptyString('source.correlationId', correlationId) }),
      ...(origin === undefined ? {} : { origin: originAt(origin) }),
    },
  };
}

function objectAt(path: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new OrderVersionMessageError(path, `expected an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function nonEmptyString(path: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw new OrderVersionMessageError(path, `expected a non-empty string, got ${describe(value)}`);
  }
  return value;
}

function timestamp(path: string, value: unknown): string {
  if (typeof value !== 'string' || !TIMESTAMP.test(value) || Number.isNaN(Date.parse(value))) {
    throw new OrderVersionMessageError(
      path,
      `expected a UTC timestamp like 2024-05-01T08:00:00.000Z, got ${describe(value)}`,
    );
  }
  return value;
}

function findings(value: unknown): Finding[] {
  if (!Array.isArray(value)) {
    throw new OrderVersionMessageError('source.findings', `expected an array, got ${describe(value)}`);
  }
  return value.map((entry, index) => {
    const finding = objectAt(`source.findings[${index}]`, entry);
    for (const key of ['code', 'detail'] as const) {
      if (typeof finding[key] !== 'string') {
        throw new OrderVersionMessageError(
          `source.findings[${index}].${key}`,
          `expected a string, got ${describe(finding[key])}`,
        );
      }
    }
    return { code: finding.code as string, detail: finding.detail as string };
  });
}

function originAt(value: unknown): MessageOrigin {
  if (!MESSAGE_ORIGINS.includes(value as MessageOrigin)) {
    throw new OrderVersionMessageError(
      'source.origin',
      `expected one of ${MESSAGE_ORIGINS.join(', ')}, got ${describe(value)}`,
    );
  }
  return value as MessageOrigin;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return `${typeof value} ${String(value)}`;
}

// ---- DynamoDB ------------------------------------------------------------------------------------------

export interface ApplyIfNewerOptions {
  client: DynamoDBClient;
  tableName: string;
  message: OrderVersionMessage;
  /** The table's partition key, a Number attribute holding the order id. Default `orderId`. */
  keyAttribute?: string;
  /**
   * What to store besides the key and `version` (which are always written, for the version condition).
   * Default: every field of the order plus `correlationId`. Return your own projection to keep less (an
   * order can be larger than DynamoDB's 400 KB item limit; applyIfNewer refuses such an item before calling).
   * Values are written with `marshall` (bigint → exact Number, Set → string set, Uint8Array → Binary).
   */
  item?: (message: OrderVersionMessage) => Record<string, unknown>;
}

export type ApplyIfNewerResult =
  /** `replaced`: the item this write replaced (int64 exact), absent when none was stored. */
  | { outcome: 'applied'; replaced?: Record<string, unknown> }
  /** An equal (a duplicate) or higher version is stored: nothing was written. */
  | { outcome: 'stale'; storedVersion: Int64 };

/** The item would exceed DynamoDB's item size limit: nothing was sent. */
export class ItemTooLargeError extends Error {
  readonly code = 'ERR_ITEM_TOO_LARGE';
  constructor(
    readonly orderId: Int64,
    readonly sizeBytes: number,
  ) {
    super(
      `order ${orderId}: item of ${sizeBytes} bytes exceeds DynamoDB's limit of ${DYNAMO_MAX_ITEM_BYTES} bytes; pass an \`item\` projection that stores less`,
    );
    this.name = 'ItemTooLargeError';
  }
}

/** The conditional PutItem applyIfNewer sends (exported for tests and for callers who batch their own). */
export function conditionalPut(options: Omit<ApplyIfNewerOptions, 'client'>): PutItemCommandInput {
  const { message, tableName } = options;
  const keyAttribute = options.keyAttribute ?? 'orderId';
  const { order } = message;
  const body = options.item ? options.item(message) : defaultItem(message);
  // Key and version last: a projection cannot drop or change what the condition compares.
  const item = marshall(
    { ...body, [keyAttribute]: order.id, version: order.version },
    { removeUndefinedValues: true },
  );
  const size = itemSize(item);
  if (size > DYNAMO_MAX_ITEM_BYTES) throw new ItemTooLargeError(order.id, size);
  return {
    TableName: tableName,
    Item: item,
    // DynamoDB compares Numbers exactly (38 digits): int64 versions beyond 2^53 compare right.
    ConditionExpression: 'attribute_not_exists(#key) OR #version < :version',
    ExpressionAttributeNames: { '#key': keyAttribute, '#version': 'version' },
    ExpressionAttributeValues: marshall({ ':version': order.version }),
    // The replaced item (read capacity is not charged for it), and when the condition fails the stored
    // version, to report it.
    ReturnValues: 'ALL_OLD',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

function defaultItem(message: OrderVersionMessage): Record<string, unknown> {
  const { correlationId } = message.source;
  return { ...message.order, ...(correlationId === undefined ? {} : { correlationId }) };
}

/**
 * Stores the message's order only if no version of it is stored or the stored version is lower, in one
 * conditional PutItem: idempotent under redelivery, and concurrent writers of one order end with the
 * highest version whatever their order. Other failures (throttling, a missing table) are thrown.
 */
export async function applyIfNewer(options: ApplyIfNewerOptions): Promise<ApplyIfNewerResult> {
  const input = conditionalPut(options);
  try {
    const { Attributes } = await options.client.send(new PutItemCommand(input));
    return Attributes
      ? { outcome: 'applied', replaced: unmarshallExact(Attributes) }
      : { outcome: 'applied' };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const stored = error.Item ? unmarshallExact(error.Item) : {};
    const storedVersion = stored.version;
    // Without the old item (an emulator may not return it) the stored version is at least this one.
    return {
      outcome: 'stale',
      storedVersion: isInt64(storedVersion) ? storedVersion : options.message.order.version,
    };
  }
}
