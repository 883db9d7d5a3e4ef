// For downstream services: read an order-version message from your queue and apply it to your own
// DynamoDB table only if it is newer than what you stored. Import it as `order-feed-ingester/contract`.
//   parseOrderVersionMessage(body) → a typed, validated message, or an error naming what is wrong
//   applyIfNewer({ client, tableName, message }) → 'applied' | 'stale' (one conditional PutItem)
// Our own consumer (functions/core/apply/apply-order-version.ts) uses the parser and applyItemIfNewer, the
// same put of the orders table's item, which it has marshalled already.
//
// Messages can be duplicated and arrive out of order (see README.md in this folder): keep, per order id,
// the highest version; an equal or lower version is stale. That is exactly what applyIfNewer does, so a
// redelivery, a replay or a backfill is a no-op. Within one schemaVersion fields are only ever added: this
// parser ignores fields it does not know, so a message with a newer additive field still reads.

import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
  type PutItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { itemSize } from '../adapters/dynamo-item-size.js';
import { unmarshallExact } from '../adapters/exact-item.js';
import { DYNAMO_MAX_ITEM_BYTES } from '../aws-limits.js';
import { type Int64, isInt64, parseJsonExact } from '../model/int64.js';
import { formatPath } from '../model/parse-order.js';
import type { Order } from '../model/types.js';
import { MESSAGE_SCHEMA, type OrderVersionMessage } from './order-version-message.js';

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

/**
 * Reads one SQS message body. int64 values (`order.id`, `order.version`, every `amount`) come back exact:
 * a number while it is a safe integer, a bigint beyond 2^53 (compare them with `<`, `>`, `===` only after
 * `BigInt(...)` if you mix them with your own numbers). Throws OrderVersionMessageError naming the field.
 */
export function parseOrderVersionMessage(body: string): OrderVersionMessage {
  // Plain JavaScript can pass anything: the whole SQS record, or a body someone already JSON.parse'd.
  if (typeof body !== 'string') throw new OrderVersionMessageError('', notABody(body));
  let parsed: unknown;
  try {
    // JSON.parse would round integers beyond 2^53: ids and versions must stay exact.
    parsed = parseJsonExact(body);
  } catch {
    // Not JSON.parse's message: it quotes part of the body (customer data), and this one gets logged.
    throw new OrderVersionMessageError('', 'body is not JSON');
  }
  const result = MESSAGE_SCHEMA.safeParse(parsed);
  if (result.success) return result.data;
  const [issue] = result.error.issues;
  throw new OrderVersionMessageError(formatPath(issue?.path ?? []), issue?.message ?? 'invalid');
}

function notABody(value: unknown): string {
  const record =
    typeof value === 'object' && value !== null && typeof Reflect.get(value, 'body') === 'string';
  const given = record ? 'an SQS record' : value === null ? 'null' : typeof value;
  return `expects the message body as a string (record.body of an SQS record), got ${given}${record ? ': pass record.body' : ''}`;
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

/** DynamoDB refused the item's key: the table's partition key is not the Number attribute applyIfNewer writes. */
export class TableKeyError extends Error {
  readonly code = 'ERR_TABLE_KEY';
  constructor(tableName: string | undefined, keyAttribute: string | undefined, cause: Error) {
    super(
      `table ${tableName}: its partition key must be a Number attribute "${keyAttribute}" holding the order id (or pass keyAttribute naming yours): ${cause.message}`,
      { cause },
    );
    this.name = 'TableKeyError';
  }
}

/** The conditional PutItem applyIfNewer sends (exported for tests and for callers who batch their own). */
export function conditionalPut(options: Omit<ApplyIfNewerOptions, 'client'>): PutItemCommandInput {
  const { message } = options;
  const keyAttribute = options.keyAttribute ?? 'orderId';
  const { order } = message;
  const body = options.item ? options.item(message) : defaultItem(message);
  // Key and version last: a projection cannot drop or change what the condition compares.
  const item = marshall(
    { ...body, [keyAttribute]: order.id, version: order.version },
    { removeUndefinedValues: true },
  );
  return guardedPut(options.tableName, order, item, itemSize(item), keyAttribute);
}

function guardedPut(
  tableName: string,
  order: Pick<Order, 'id' | 'version'>,
  item: Record<string, AttributeValue>,
  size: number,
  keyAttribute: string,
): PutItemCommandInput {
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
  return send(options.client, conditionalPut(options), options.message.order.version);
}

/**
 * applyIfNewer of an item already marshalled (holding `orderId` and `version`) and sized: our consumer's
 * orders table item, which it sizes anyway to decide whether to compress it.
 */
export async function applyItemIfNewer(
  client: DynamoDBClient,
  tableName: string,
  order: Pick<Order, 'id' | 'version'>,
  stored: { item: Record<string, AttributeValue>; sizeBytes: number },
): Promise<ApplyIfNewerResult> {
  return send(client, guardedPut(tableName, order, stored.item, stored.sizeBytes, 'orderId'), order.version);
}

async function send(
  client: DynamoDBClient,
  input: PutItemCommandInput,
  version: Int64,
): Promise<ApplyIfNewerResult> {
  try {
    const { Attributes } = await client.send(new PutItemCommand(input));
    return Attributes
      ? { outcome: 'applied', replaced: unmarshallExact(Attributes) }
      : { outcome: 'applied' };
  } catch (error) {
    if (isKeySchemaMismatch(error)) {
      throw new TableKeyError(input.TableName, input.ExpressionAttributeNames?.['#key'], error as Error);
    }
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const storedVersion = error.Item ? unmarshallExact(error.Item).version : undefined;
    // Without the old item (an emulator may not return it) the stored version is at least this one.
    return { outcome: 'stale', storedVersion: isInt64(storedVersion) ? storedVersion : version };
  }
}

/** DynamoDB's answer when the item's key does not match the table's key schema (name or type). */
function isKeySchemaMismatch(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationException' && /\bkey\b/i.test(error.message);
}
