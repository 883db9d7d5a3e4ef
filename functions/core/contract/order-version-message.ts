// The public message contract: one SQS message per order version, read by our consumer and by every
// downstream service. MESSAGE_SCHEMA is its one description in code: the reader (consumer-kit.ts) parses with it
// and the builder below is typed by it. Changing a field here is a breaking change for them: bump
// SCHEMA_VERSION and update order-version-message.schema.json (a test checks the two agree).

import * as z from 'zod/mini';
import { SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES } from '../aws-limits.js';
import { type Int64, stringifyJsonExact } from '../model/int64.js';
import { parseOrder } from '../model/parse-order.js';
import type { Order } from '../model/types.js';

export const SCHEMA_VERSION = 1;

/** A larger order version is quarantined at ingestion with the reason, never sent (aws-limits.ts). */
export { SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES };

/**
 * What produced a message: the scheduled poller, a reconcile repair (`npm run reconcile -- --repair`), or a
 * backfill of a late subscriber (`npm run ops -- backfill`).
 */
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
/** Where a message came from, as every producer now fills it (correlationId and origin included). */
export type MessageSource = Required<OrderVersionMessage['source']>;

/** The correlation id of a poll run's page (pages count from 1 within the run). */
export function pollCorrelationId(runId: string, pageNumber: number): string {
  return `poll:${runId}:${pageNumber}`;
}

/** The correlation id of a reconcile or backfill run. */
export function runCorrelationId(origin: Exclude<MessageOrigin, 'poll'>, runId: string): string {
  return `${origin}:${runId}`;
}

export interface MessageAttribute {
  DataType: 'String' | 'Number';
  StringValue: string;
}

/** A message ready to send: body, attributes, and its size as SQS counts it. */
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
  // int64 values beyond 2^53 are bigints: written as exact JSON numbers.
  const body = escapeForSqs(stringifyJsonExact(message));
  // Attributes let subscribers filter and route without parsing the body.
  const attributes: Record<string, MessageAttribute> = {
    orderId: { DataType: 'Number', StringValue: String(order.id) },
    version: { DataType: 'Number', StringValue: String(order.version) },
    // SQS refuses an empty attribute value: an empty vendorId is carried by the body alone.
    ...(order.vendorId === ''
      ? {}
      : { vendorId: { DataType: 'String', StringValue: attributeText(order.vendorId) } }),
    status: { DataType: 'String', StringValue: order.status },
    schemaVersion: { DataType: 'Number', StringValue: String(SCHEMA_VERSION) },
    // Lets an operator find the producing run from a message without parsing its body. Six attributes of
    // SQS's ten; the size below counts this one too.
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
// JSON.stringify already escapes control characters and lone surrogates; U+FFFE and U+FFFF it leaves
// raw, and a single one from the partner would make every send of its page fail forever.
const SQS_FORBIDDEN = /[\uFFFE\uFFFF]/g;
// The same class without the g flag, for a test first: almost no body has one, and a test is about
// twenty times cheaper than a global replace that finds nothing (measured on the generated feed).
const HAS_SQS_FORBIDDEN = new RegExp(SQS_FORBIDDEN.source);

/** Escapes the characters SQS refuses as JSON \u sequences: the parsed value is unchanged. */
function escapeForSqs(json: string): string {
  if (!HAS_SQS_FORBIDDEN.test(json)) return json;
  return json.replace(SQS_FORBIDDEN, (char) => `\\u${char.charCodeAt(0).toString(16)}`);
}

// What an SQS message attribute value may hold (the service's documented rule; moto is laxer): #x9 | #xA |
// #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF, and it must not be empty. A control character or a
// lone surrogate makes SQS reject the whole SendMessageBatch, so the page would never be committed.
const ATTRIBUTE_FORBIDDEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching the control characters SQS refuses is the point
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// Without the g flag, for a test first (a g regex's test() keeps state between calls).
const HAS_ATTRIBUTE_FORBIDDEN = new RegExp(ATTRIBUTE_FORBIDDEN.source);

/** An attribute value (not JSON, so not escapable): each character SQS refuses becomes U+FFFD. */
function attributeText(text: string): string {
  return HAS_ATTRIBUTE_FORBIDDEN.test(text) ? text.replace(ATTRIBUTE_FORBIDDEN, '\uFFFD') : text;
}

/** True when SQS accepts `text` as a String attribute value. */
export function isValidAttributeValue(text: string): boolean {
  return text !== '' && !HAS_ATTRIBUTE_FORBIDDEN.test(text);
}

/** SQS counts the body plus each attribute's name, data type and value toward the size limit. */
function sqsSize(body: string, attributes: Record<string, MessageAttribute>): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const name in attributes) {
    const attribute = attributes[name] as MessageAttribute;
    // Names and data types are ASCII (SQS allows nothing else in them), so their length is their size.
    size += name.length + attribute.DataType.length + Buffer.byteLength(attribute.StringValue, 'utf8');
  }
  return size;
}
