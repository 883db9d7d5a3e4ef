// The public message contract (README.md here). MESSAGE_SCHEMA is its one description in code: the reader
// (consumer-kit.ts) parses with it and the builder is typed by it. Changing a field breaks every downstream service: bump
// SCHEMA_VERSION and update order-version-message.schema.json (a test checks the two agree).
import * as z from 'zod/mini';
import { SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES } from '../aws-limits.js';
import { type Int64, stringifyJsonExact } from '../model/int64.js';
import { parseOrder } from '../model/parse-order.js';
import type { Order } from '../model/types.js';

export const SCHEMA_VERSION = 1;

export { SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES };

/** What produced a message: the poller, a reconcile repair, or a backfill of a late subscriber. */
const MESSAGE_ORIGINS = ['poll', 'reconcile', 'backfill'] as const;
export type MessageOrigin = (typeof MESSAGE_ORIGINS)[number];

/** What a message field got instead, for the reader's error: never more than 40 characters of a string. */
function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return `${typeof value} ${String(value)}`;
}

/** zod's error option: `expected <what>, got <describe(input)><after>`. */
const expected = (what: string, after = '') => ({
  error: (issue: { input?: unknown }) => `expected ${what}, got ${describe(issue.input)}${after}`,
});

const object = <Shape extends z.core.$ZodLooseShape>(shape: Shape) => z.object(shape, expected('an object'));
const nonEmpty = expected('a non-empty string');
const nonEmptyString = z.string(nonEmpty).check(z.minLength(1, nonEmpty));
const utc = expected('a UTC timestamp like 2024-05-01T08:00:00.000Z');

/** The message body (output keys in this order); unknown fields are ignored (they are added within a schemaVersion). */
export const MESSAGE_SCHEMA = object({
  schemaVersion: z.literal(
    SCHEMA_VERSION,
    expected(`${SCHEMA_VERSION}`, ' (a new schemaVersion is a breaking change: update this module)'),
  ),
  /**
   * The normalised order version (UTC ISO timestamps, integer minor-unit money, optional fields only when
   * sent), read by the same parser the poller uses (normalised output parses to itself); its reasons name
   * the field path within the order, e.g. `invalid field items[0].price.amount: …`.
   */
  order: z.pipe(
    z.unknown(),
    z.transform((raw, ctx): Order => {
      const order = parseOrder(raw);
      if (order.ok) return order.order;
      ctx.issues.push({ code: 'custom', message: order.reason, input: raw });
      return z.NEVER;
    }),
  ),
  /** Where the message came from: every producer fills all of it. */
  source: object({
    /** Which configured feed produced it (several feeds can share one deployment's tables). */
    feedId: nonEmptyString,
    /** The cursor the page was requested with; null for the stream's first page. Replaying from it re-serves this version. */
    pageId: z.nullable(nonEmptyString),
    /** When the poller received the page (UTC ISO). */
    fetchedAt: z.string(utc).check(
      z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, utc),
      z.refine((text) => !Number.isNaN(Date.parse(text)), utc),
    ),
    /** Consistency-rule violations and schema drift noticed on the record (never a reason to drop it). */
    findings: z.array(
      object({ code: z.string(expected('a string')), detail: z.string(expected('a string')) }),
      expected('an array'),
    ),
    // correlationId and origin were added within schemaVersion 1: a message sent before them has neither, so
    // a reader of version 1 takes them as optional (checked when present; every message we send has both).
    /** The run (and page) that produced the message, e.g. `poll:<runId>:<page>` (its forms: the JSON Schema). */
    correlationId: z.optional(nonEmptyString),
    origin: z.optional(z.enum(MESSAGE_ORIGINS, expected(`one of ${MESSAGE_ORIGINS.join(', ')}`))),
  }),
});

export type OrderVersionMessage = z.output<typeof MESSAGE_SCHEMA>;
/** Where a message came from, as every producer now fills it. */
export type MessageSource = Required<OrderVersionMessage['source']>;

/** Pages count from 1 within the run. */
export function pollCorrelationId(runId: string, pageNumber: number): string {
  return `poll:${runId}:${pageNumber}`;
}

export function runCorrelationId(origin: Exclude<MessageOrigin, 'poll'>, runId: string): string {
  return `${origin}:${runId}`;
}

interface MessageAttribute {
  DataType: 'String' | 'Number';
  StringValue: string;
}

/** A message ready to send, with its size as SQS counts it. */
export interface OutgoingMessage {
  orderId: Int64;
  version: Int64;
  body: string;
  attributes: Record<string, MessageAttribute>;
  sizeBytes: number;
}

export function buildOrderVersionMessage(order: Order, source: MessageSource): OutgoingMessage {
  // A programming error, caught here rather than as a batch SQS refuses (an empty attribute value).
  if (source.correlationId === '') throw new RangeError('a message needs a correlationId');
  const message: OrderVersionMessage = { schemaVersion: SCHEMA_VERSION, order, source };
  const body = escapeForSqs(stringifyJsonExact(message));
  const attributes: Record<string, MessageAttribute> = {
    orderId: { DataType: 'Number', StringValue: String(order.id) },
    version: { DataType: 'Number', StringValue: String(order.version) },
    // SQS refuses an empty attribute value: an empty vendorId is carried by the body alone.
    ...(order.vendorId === ''
      ? {}
      : { vendorId: { DataType: 'String', StringValue: attributeText(order.vendorId) } }),
    status: { DataType: 'String', StringValue: order.status },
    schemaVersion: { DataType: 'Number', StringValue: String(SCHEMA_VERSION) },
    correlationId: { DataType: 'String', StringValue: attributeText(source.correlationId) },
  };
  return {
    orderId: order.id,
    version: order.version,
    body,
    attributes,
    sizeBytes: sqsSize(body, attributes),
  };
}

// SQS refuses characters outside #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF.
// JSON.stringify escapes control characters and lone surrogates but leaves U+FFFE and U+FFFF raw: a single one
// from the partner would make every send of its page fail forever.
const SQS_FORBIDDEN = /[\uFFFE\uFFFF]/g;
// A test first (no g flag): about twenty times cheaper than a global replace that finds nothing.
const HAS_SQS_FORBIDDEN = new RegExp(SQS_FORBIDDEN.source);

/** Escapes the characters SQS refuses as JSON \u sequences: the parsed value is unchanged. */
function escapeForSqs(json: string): string {
  if (!HAS_SQS_FORBIDDEN.test(json)) return json;
  return json.replace(SQS_FORBIDDEN, (char) => `\\u${char.charCodeAt(0).toString(16)}`);
}

// The same rule for attribute values, which are not JSON (moto is laxer): a control character or a lone
// surrogate makes SQS refuse the whole SendMessageBatch, and the page would never be committed.
const ATTRIBUTE_FORBIDDEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching the control characters SQS refuses is the point
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// No g flag: a g regex's test() keeps state between calls.
const HAS_ATTRIBUTE_FORBIDDEN = new RegExp(ATTRIBUTE_FORBIDDEN.source);

/** Each character SQS refuses becomes U+FFFD. */
function attributeText(text: string): string {
  return HAS_ATTRIBUTE_FORBIDDEN.test(text) ? text.replace(ATTRIBUTE_FORBIDDEN, '\uFFFD') : text;
}

export function isValidAttributeValue(text: string): boolean {
  return text !== '' && !HAS_ATTRIBUTE_FORBIDDEN.test(text);
}

/** The body plus each attribute's name, data type and value. */
function sqsSize(body: string, attributes: Record<string, MessageAttribute>): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const name in attributes) {
    const attribute = attributes[name] as MessageAttribute;
    // Names and data types are ASCII (SQS allows nothing else in them), so their length is their size.
    size += name.length + attribute.DataType.length + Buffer.byteLength(attribute.StringValue, 'utf8');
  }
  return size;
}
