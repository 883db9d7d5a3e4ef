// Validation policy: functions/README.md. One zod parse, then one walk over raw and parsed side by side.
// zod/mini, not 'zod': the classic namespace pulls the whole library (about 450 KB) into every cold start.
import * as z from 'zod/mini';
import { checkConsistency } from './consistency.js';
import { type Int64, isInt64 } from './int64.js';
import { type Finding, ORDER_STATUSES, type Order, type ParseResult } from './types.js';

// Open enums (an unknown value is kept with a finding), by field path without list indices.
const OPEN_ENUMS: Readonly<Record<string, ReadonlySet<string>>> = {
  type: new Set(['collection', 'delivery']),
  deliveryProvider: new Set(['vendor', 'courier_partner']),
  'items[].type': new Set(['product', 'offer', 'voucher', 'adjustment']),
  'customerPayments[].type': new Set(['online', 'voucher', 'cash']),
  'customerPayments[].collectedBy': new Set(['platform', 'vendor']),
};

const MISSING = 'missing required field';
// A JSON number the body parser left as a number although it is beyond 2^53: written in float notation
// (1e20), so its digits were never exact. Integer literals beyond 2^53 arrive as bigints and are accepted.
const UNSAFE_INTEGER =
  'expected an integer literal: a number beyond 2^53 in float notation cannot be represented exactly';
const CURRENCY_EXPECTED = 'expected a 3-letter uppercase ISO 4217 currency code';

function describeInput(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'array';
  if (typeof input === 'number' && !Number.isInteger(input)) return 'non-integer number';
  return typeof input;
}

/** Per-parse zod error map: short, stable messages that never quote customer data. */
const errorMap: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return MISSING;
      // Every number in these schemas is an integer (z.int() reports a non-number as `number`).
      if (issue.expected === 'int' || issue.expected === 'number') {
        return typeof issue.input === 'number'
          ? 'expected integer'
          : `expected integer, received ${describeInput(issue.input)}`;
      }
      return `expected ${issue.expected}, received ${describeInput(issue.input)}`;
    case 'invalid_union':
      // Only the timestamp schema is a union.
      return issue.input === undefined ? MISSING : TIMESTAMP_EXPECTED;
    case 'too_big':
    case 'too_small':
      if (issue.origin === 'int' && issue.note !== undefined) return UNSAFE_INTEGER;
      return issue.code === 'too_big'
        ? `expected at most ${issue.maximum}`
        : `expected at least ${issue.minimum}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return undefined;
  }
};

/** zod transform: epoch ms or offset ISO string -> `toISOString()` form; a custom issue otherwise. */
function normaliseTimestamp(value: number | string, ctx: z.core.ParsePayload): string {
  const ms = timestampToEpochMs(value);
  if (typeof ms === 'string') {
    ctx.issues.push({ code: 'custom', message: ms, input: value });
    return z.NEVER;
  }
  return new Date(ms).toISOString();
}

const CURRENCY_CODE = /^[A-Z]{3}$/;

/** A safe-integer number, or a bigint within int64 (int64.ts). Messages never quote the value. */
function int64Schema(minimum?: number) {
  return z.custom<Int64>((value) => isInt64(value) && (minimum === undefined || value >= minimum), {
    error: (issue) => {
      const input = issue.input;
      if (input === undefined) return MISSING;
      if (typeof input === 'number') {
        if (!Number.isInteger(input)) return 'expected integer';
        if (!Number.isSafeInteger(input)) return UNSAFE_INTEGER;
        return `expected at least ${minimum}`;
      }
      if (typeof input === 'bigint')
        return isInt64(input) ? `expected at least ${minimum}` : 'expected an int64 (-2^63 to 2^63-1)';
      return `expected integer, received ${describeInput(input)}`;
    },
  });
}

function buildOrderSchema() {
  const timestamp = z.pipe(z.union([z.number(), z.string()]), z.transform(normaliseTimestamp));
  const optionalTimestamp = z.nullish(timestamp);

  const moneySchema = z.object({
    amount: int64Schema(),
    currency: z.string().check(z.regex(CURRENCY_CODE, { error: CURRENCY_EXPECTED })),
  });
  const optionalMoney = z.nullish(moneySchema);
  const count = z.int().check(z.minimum(0));
  const idList = z.array(z.string());

  const itemSchema = z.object({
    id: z.string(),
    name: z.string(),
    ageRestricted: z.nullish(z.boolean()),
    barcode: z.nullish(z.string()),
    vendorReference: z.nullish(z.string()),
    type: z.string(),
    optionCategories: z.nullish(
      z.array(
        z.object({
          name: z.string(),
          selectedOptions: z.array(z.object({ name: z.string(), optionPrice: optionalMoney })),
        }),
      ),
    ),
    quantityOrdered: count,
    quantityFulfilled: count,
    price: moneySchema,
    total: moneySchema,
    substitutionDetails: z.nullish(
      z.object({ substitutedBy: z.nullish(idList), substitutedFor: z.nullish(idList) }),
    ),
    priceAdjustmentDetails: z.nullish(
      z.object({ relatedPriceAdjustment: z.nullish(z.string()), itemsAdjusted: z.nullish(idList) }),
    ),
  });

  const statusSchema = z.enum(ORDER_STATUSES, {
    error: (issue) =>
      issue.code === 'invalid_value' && typeof issue.input === 'string'
        ? `unknown status ${JSON.stringify(issue.input.length > 64 ? `${issue.input.slice(0, 64)}…` : issue.input)}`
        : undefined,
  });

  return z.object({
    id: int64Schema(0),
    version: int64Schema(0),
    latestVersion: z.boolean(),
    vendorId: z.string(),
    status: statusSchema,
    type: z.string(),
    placedAt: timestamp,
    acceptedAt: optionalTimestamp,
    cancelledAt: optionalTimestamp,
    dispatchedAt: optionalTimestamp,
    deliveredAt: optionalTimestamp,
    returnedAt: optionalTimestamp,
    deliveryFee: optionalMoney,
    serviceFee: moneySchema,
    total: moneySchema,
    items: z.array(itemSchema),
    customerPayments: z.array(z.object({ type: z.string(), collectedBy: z.string(), payment: moneySchema })),
    deliveryProvider: z.nullish(z.string()),
  });
}

// Built at the first record, not at import: some fifty zod objects with their checks, a measurable part of
// module init (lab/bench/RESULTS.md, section 5), which an invocation that parses nothing never needs.
let schema: ReturnType<typeof buildOrderSchema> | undefined;

/** What the schema gives before the walk removes its `null` optionals (types.ts derives `Order` from it). */
export type ParsedRecord = z.output<ReturnType<typeof buildOrderSchema>>;

type JsonObject = Record<string, unknown>;

/**
 * Walks the raw record and zod's output (a fresh copy, edited in place) side by side: unknown fields, `null`
 * optionals removed, unknown values of open enums. `shape` is `path` without list indices.
 */
function tidy(raw: JsonObject, out: JsonObject, path: string, shape: string, findings: Finding[]): void {
  const [prefix, shapePrefix] = path === '' ? ['', ''] : [`${path}.`, `${shape}.`];
  // Own keys only: `in` would also match inherited names (`constructor`, `toString`, `__proto__`), which
  // JSON.parse creates as own properties of `raw` like any other field.
  for (const key of Object.keys(raw)) {
    if (!Object.hasOwn(out, key)) findings.push({ code: 'unknown-field', detail: prefix + key });
  }
  for (const key of Object.keys(out)) {
    const value = out[key];
    if (value === null) {
      delete out[key];
      continue;
    }
    const known = OPEN_ENUMS[shapePrefix + key];
    if (known !== undefined && !known.has(value as string))
      findings.push({ code: 'unknown-enum-value', detail: `${prefix}${key}: ${JSON.stringify(value)}` });
  }
  for (const [key, value] of Object.entries(out)) {
    if (Array.isArray(value)) {
      const rawList = raw[key] as unknown[];
      value.forEach((element, i) => {
        if (typeof element === 'object') {
          tidy(
            rawList[i] as JsonObject,
            element,
            `${prefix}${key}[${i}]`,
            `${shapePrefix}${key}[]`,
            findings,
          );
        }
      });
    } else if (typeof value === 'object') {
      tidy(raw[key] as JsonObject, value as JsonObject, prefix + key, shapePrefix + key, findings);
    }
  }
}

/** A zod issue path as the messages write it: `items[0].price.amount`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`))
    .join('')
    .replace(/^\./, '');
}

function rejection(raw: unknown, zodIssues: readonly z.core.$ZodIssue[]): ParseResult {
  const issues: string[] = [];
  let reason = '';
  for (const issue of zodIssues) {
    const path = formatPath(issue.path);
    issues.push(`${path === '' ? '(record)' : path}: ${issue.message}`);
    if (reason !== '') continue;
    if (path === '') reason = `invalid record: expected an object, received ${describeInput(raw)}`;
    else if (path === 'status' && issue.code === 'invalid_value') reason = issue.message;
    else if (issue.message === MISSING) reason = `${MISSING}: ${path}`;
    else reason = `invalid field ${path}: ${issue.message}`;
  }
  const result: Extract<ParseResult, { ok: false }> = { ok: false, reason, issues };
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    const { id, version } = raw as JsonObject;
    if (isInt64(id)) result.orderId = id;
    if (isInt64(version)) result.version = version;
  }
  return result;
}

/** Never throws for bad input. */
export function parseOrder(raw: unknown): ParseResult {
  schema ??= buildOrderSchema();
  const parsed = schema.safeParse(raw, { error: errorMap });
  if (!parsed.success) return rejection(raw, parsed.error.issues);
  const findings: Finding[] = [];
  tidy(raw as JsonObject, parsed.data, '', '', findings);
  // After the walk no optional key holds null, which is the one way zod's output differs from Order.
  const order = parsed.data as Order;
  findings.push(...checkConsistency(order), ...replaceLoneSurrogates(order));
  return { ok: true, order, findings };
}

const TIMESTAMP_EXPECTED =
  'expected integer epoch milliseconds or an ISO 8601 date-time string with an offset (Z or ±hh:mm)';
const TIMESTAMP_NO_OFFSET = 'timestamp string has no UTC offset (ambiguous local time); expected Z or ±hh:mm';
const TIMESTAMP_BAD_EPOCH = 'expected epoch milliseconds as a safe integer within the range of Date';
const TIMESTAMP_BAD_DATE = 'timestamp is not a valid calendar date-time';

const MAX_DATE_MS = 8.64e15;
// The contract's four-digit years (RFC 3339). `Date` goes to ±275760 years, which every consumer would reject.
const CONTRACT_MIN_MS = -62_167_219_200_000;
const CONTRACT_MAX_MS = 253_402_300_799_999;
const TIMESTAMP_OUT_OF_RANGE =
  'timestamp is outside 0000-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z, the range the message contract carries';

// date T hh:mm[:ss[.fff]] [offset]; the offset group is optional here so that a missing offset gets
// its own, clearer message.
const ISO_DATE_TIME =
  /^(\d{4}-\d{2}-(\d{2}))[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-]\d{2})(?::?(\d{2}))?)?$/;

function isoToEpochMs(text: string): number | string {
  const m = ISO_DATE_TIME.exec(text);
  if (m === null) return TIMESTAMP_EXPECTED;
  const [, date, day, hour, minute, second = '00', fraction = '', zulu, offsetHours, offsetMinutes = '00'] =
    m;
  if (zulu === undefined && offsetHours === undefined) return TIMESTAMP_NO_OFFSET;
  // Date.parse, given the strict ISO form: years 0..99 as written, milliseconds truncated as Date does, an
  // out-of-range month, day, minute, second or offset is NaN. It does roll 31 Feb over into March and take
  // hour 24, hence the two checks after it.
  const zone = zulu === undefined ? `${offsetHours}:${offsetMinutes}` : 'Z';
  const ms = Date.parse(`${date}T${hour}:${minute}:${second}.${fraction.slice(0, 3).padEnd(3, '0')}${zone}`);
  if (Number.isNaN(ms) || Number(hour) > 23 || new Date(`${date}T00:00Z`).getUTCDate() !== Number(day))
    return TIMESTAMP_BAD_DATE;
  return ms;
}

/** Epoch milliseconds of a partner timestamp, or the message saying why it is not one. */
function timestampToEpochMs(value: number | string): number | string {
  const ms =
    typeof value === 'string'
      ? isoToEpochMs(value)
      : Number.isSafeInteger(value) && Math.abs(value) <= MAX_DATE_MS
        ? value
        : TIMESTAMP_BAD_EPOCH;
  if (typeof ms === 'string') return ms;
  // An offset can roll an in-range local time over the edge (9999-12-31T23:00-05:00 is year 10000 in UTC).
  return ms < CONTRACT_MIN_MS || ms > CONTRACT_MAX_MS ? TIMESTAMP_OUT_OF_RANGE : ms;
}

// Lone surrogates (`"\ud800"`): JSON carries them, DynamoDB cannot store them, so a consumer would retry such a
// message until dead-lettered. Each becomes U+FFFD, with a finding per field (functions/README.md).

// Any surrogate at all (paired ones included): a cheap first test, false for almost every string.
const ANY_SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const LONE_SURROGATE = new RegExp(LONE_SURROGATES.source);

type Holder = Record<string | number, unknown>;

/** Replaces lone surrogates in every string of `order` (in place) and returns a finding per field changed. */
function replaceLoneSurrogates(order: Order): Finding[] {
  const findings: Finding[] = [];
  // The keys down to the value visited; the poller's hot path: a field's path is written only for a finding.
  const path: (string | number)[] = [];
  const visit = (holder: Holder, key: string | number): void => {
    const value = holder[key];
    if (typeof value === 'string') {
      if (!ANY_SURROGATE.test(value) || !LONE_SURROGATE.test(value)) return;
      const field = [...path, key].map((part) => (typeof part === 'number' ? `[${part}]` : `.${part}`));
      findings.push({
        code: 'invalid-unicode-replaced',
        detail: `${field.join('').slice(1)}: a lone surrogate (not valid Unicode) was replaced with U+FFFD`,
      });
      holder[key] = value.replace(LONE_SURROGATES, '\uFFFD');
    } else if (typeof value === 'object' && value !== null) {
      const node = value as Holder;
      path.push(key);
      if (Array.isArray(node)) for (let i = 0; i < node.length; i++) visit(node, i);
      else for (const name of Object.keys(node)) visit(node, name);
      path.pop();
    }
  };
  for (const key of Object.keys(order)) visit(order, key);
  return findings;
}
