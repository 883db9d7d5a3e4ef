/**
 * Validating parser and normaliser for one partner order record (spec section 2).
 * Flow: raw JSON value -> one zod safeParse (validates, strips unknown keys, normalises timestamps)
 * -> one walk over raw + parsed side by side (unknown fields, null optionals, unknown enum values)
 * -> consistency findings (./consistency.ts) -> ParseResult.
 *
 * ## Parse policy (where the spec leaves things open)
 *
 * - **Every record gets an answer.** A record is never silently dropped: the result is either
 *   `{ ok: true, order, findings }` or `{ ok: false, reason, issues, orderId?, version? }`.
 *   `orderId` / `version` are filled in whenever they can be read from the raw record (safe integers),
 *   so a quarantined record can be found by order id.
 * - **Non-object input** (null, array, string, number, ...) is rejected:
 *   `invalid record: expected an object, received array`.
 * - **Required fields** are every field the spec's tables do not mark optional. Order: id, version,
 *   latestVersion, vendorId, status, type, placedAt, serviceFee, total, items, customerPayments.
 *   Item: id, name, type, quantityOrdered, quantityFulfilled, price, total. Payment: type, collectedBy,
 *   payment. Option category: name, selectedOptions. Selected option: name. Money: amount, currency.
 *   A missing one rejects the record (`missing required field: items[2].price`); so does a wrong type
 *   (`invalid field items[2].price.amount: expected integer`).
 * - **Optional fields** are kept only when present. An explicit JSON `null` on an optional field is
 *   treated as absent (the key is left out of the normalised order). The normalised order never has an
 *   `undefined`-valued key, so it marshals into DynamoDB as is. `null` on a required field rejects.
 * - **Integers.** `id`, `version`, money `amount`, `quantityOrdered` and `quantityFulfilled` must be
 *   safe integers (|n| <= 2^53 - 1): an int64 beyond that cannot be represented exactly in a JSON number,
 *   so it is rejected rather than silently rounded. `id`, `version` and the quantities must be >= 0;
 *   amounts may be negative (offers, vouchers, adjustments).
 * - **Money** is `{ amount, currency }`: amount in integer minor units, kept as is; currency a
 *   3-letter uppercase ISO 4217 code (shape only, not checked against the ISO list).
 * - **Timestamps** accept integer epoch milliseconds (a JSON number, safe integer, within the range of
 *   `Date`) or an ISO 8601 date-time string with an explicit offset: `Z`, `±hh:mm`, `±hhmm` or `±hh`
 *   (`T`/`Z` may be lower case; seconds and fractional seconds are optional; fractions beyond
 *   milliseconds are truncated). Every timestamp is normalised to UTC exactly as
 *   `Date.prototype.toISOString()` prints it (`2024-05-01T08:30:00.000Z`). A string without an offset
 *   (ambiguous local time), a date without a time, an impossible date (Feb 30) or any other string
 *   rejects the record with a reason naming the field path. Numeric strings are not epoch milliseconds.
 * - **Unknown `status`** rejects the record (`unknown status "refunded"`): the sales ledger cannot know
 *   whether an unknown status is a sale, so the record must be quarantined and looked at, not guessed.
 * - **Unknown value of any other enum** (order `type`, item `type`, payment `type` / `collectedBy`,
 *   `deliveryProvider`) is accepted and kept verbatim, with a finding
 *   `{ code: 'unknown-enum-value', detail: 'items[0].type: "bundle"' }`.
 * - **Unknown extra fields** (at any depth) are accepted, dropped from the normalised order, and each
 *   recorded as a finding `{ code: 'unknown-field', detail: 'items[0].colour' }`, so schema drift is
 *   visible, not silent.
 * - **Consistency rules** of spec section 2 (payments sum to total, substitution and price-adjustment
 *   cross-links) are checked on accepted records and reported as findings, never as rejections
 *   (see consistency.ts).
 */
import { z } from 'zod';
import { checkConsistency } from './consistency.js';
import type { Finding, Order, ParseResult } from './types.js';
import { ORDER_STATUSES } from './types.js';

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

const MISSING = 'missing required field';
const UNSAFE_INTEGER =
  'expected a safe integer (|n| <= 2^53 - 1): larger int64 values cannot be represented exactly in a JSON number';
const TIMESTAMP_EXPECTED =
  'expected integer epoch milliseconds or an ISO 8601 date-time string with an offset (Z or ±hh:mm)';
const TIMESTAMP_NO_OFFSET = 'timestamp string has no UTC offset (ambiguous local time); expected Z or ±hh:mm';
const TIMESTAMP_BAD_EPOCH = 'expected epoch milliseconds as a safe integer within the range of Date';
const TIMESTAMP_BAD_DATE = 'timestamp is not a valid calendar date-time';
const CURRENCY_EXPECTED = 'expected a 3-letter uppercase ISO 4217 currency code';

function describeInput(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'array';
  if (typeof input === 'number' && !Number.isInteger(input)) return 'non-integer number';
  return typeof input;
}

/** Per-parse zod error map: short, stable messages that never quote customer data. */
const errorMap: z.ZodErrorMap = (issue) => {
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

const PARSE_OPTIONS = { error: errorMap } as const;

// ---------------------------------------------------------------------------------------------
// Timestamps
// ---------------------------------------------------------------------------------------------

/** Longest span `Date` can represent, in ms either side of the epoch. */
const MAX_DATE_MS = 8.64e15;

// date T hh:mm[:ss[.fff]] [offset]; the offset group is optional here so that a missing offset gets
// its own, clearer message.
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Epoch ms of an ISO 8601 date-time string with offset, or a message saying why it is not one. */
function isoToEpochMs(text: string): number | string {
  const m = ISO_DATE_TIME.exec(text);
  if (m === null) return TIMESTAMP_EXPECTED;
  const offset = m[8];
  if (offset === undefined) return TIMESTAMP_NO_OFFSET;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  // Milliseconds: first three fraction digits, right-padded; further digits are truncated, as Date does.
  const fraction = m[7];
  const millis = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  const maxDay = month === 2 && isLeapYear(year) ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > maxDay || hour > 23 || minute > 59 || second > 59) {
    return TIMESTAMP_BAD_DATE;
  }
  let offsetMinutes = 0;
  if (offset !== 'Z' && offset !== 'z') {
    // ±hh, ±hhmm or ±hh:mm
    const offsetHours = Number(offset.slice(1, 3));
    const offsetMins = offset.length > 3 ? Number(offset.slice(offset.length - 2)) : 0;
    if (offsetHours > 23 || offsetMins > 59) return TIMESTAMP_BAD_DATE;
    offsetMinutes = (offsetHours * 60 + offsetMins) * (offset.charCodeAt(0) === 45 /* - */ ? -1 : 1);
  }
  let local: number;
  if (year >= 100) {
    local = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  } else {
    // Date.UTC maps years 0..99 to 1900..1999; setUTCFullYear takes the year as written.
    const date = new Date(0);
    date.setUTCFullYear(year, month - 1, day);
    local = date.setUTCHours(hour, minute, second, millis);
  }
  return local - offsetMinutes * 60_000;
}

const MS_PER_DAY = 86_400_000;
/** 10000-01-01T00:00:00.000Z: from here on toISOString prints an expanded (+yyyyyy) year. */
const YEAR_10000_MS = 253_402_300_800_000;

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/**
 * `new Date(ms).toISOString()`, about four times faster, for 1970..9999 (everything else falls back
 * to Date). Days to civil date: Howard Hinnant's `civil_from_days`.
 */
function formatUtcIso(ms: number): string {
  if (ms < 0 || ms >= YEAR_10000_MS) return new Date(ms).toISOString();
  const days = Math.floor(ms / MS_PER_DAY);
  let rest = ms - days * MS_PER_DAY;
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1000);
  const millis = rest - second * 1000;
  const z = days + 719_468; // days since 0000-03-01
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153); // month, March = 0
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const ms3 = millis < 10 ? `00${millis}` : millis < 100 ? `0${millis}` : `${millis}`;
  return `${year}-${pad2(month)}-${pad2(day)}T${pad2(hour)}:${pad2(minute)}:${pad2(second)}.${ms3}Z`;
}

/** zod transform: epoch ms or offset ISO string -> `toISOString()` form; a custom issue otherwise. */
function normaliseTimestamp(value: number | string, ctx: z.core.$RefinementCtx<number | string>): string {
  let ms: number | string;
  if (typeof value === 'number') {
    ms = Number.isSafeInteger(value) && Math.abs(value) <= MAX_DATE_MS ? value : TIMESTAMP_BAD_EPOCH;
  } else {
    ms = isoToEpochMs(value);
  }
  if (typeof ms === 'string') {
    ctx.issues.push({ code: 'custom', message: ms, input: value });
    return z.NEVER;
  }
  return formatUtcIso(ms);
}

// ---------------------------------------------------------------------------------------------
// Schemas (built once)
// ---------------------------------------------------------------------------------------------

const CURRENCY_CODE = /^[A-Z]{3}$/;

const timestamp = z.union([z.number(), z.string()]).transform(normaliseTimestamp);
const optionalTimestamp = timestamp.nullish();

const moneySchema = z.object({
  amount: z.int(),
  currency: z.string().regex(CURRENCY_CODE, { error: CURRENCY_EXPECTED }),
});
const optionalMoney = moneySchema.nullish();
const count = z.int().min(0);
const idList = z.array(z.string());

const selectedOptionSchema = z.object({
  name: z.string(),
  optionPrice: optionalMoney,
});

const optionCategorySchema = z.object({
  name: z.string(),
  selectedOptions: z.array(selectedOptionSchema),
});

const substitutionDetailsSchema = z.object({
  substitutedBy: idList.nullish(),
  substitutedFor: idList.nullish(),
});

const priceAdjustmentDetailsSchema = z.object({
  relatedPriceAdjustment: z.string().nullish(),
  itemsAdjusted: idList.nullish(),
});

const itemSchema = z.object({
  id: z.string(),
  name: z.string(),
  ageRestricted: z.boolean().nullish(),
  barcode: z.string().nullish(),
  vendorReference: z.string().nullish(),
  type: z.string(),
  optionCategories: z.array(optionCategorySchema).nullish(),
  quantityOrdered: count,
  quantityFulfilled: count,
  price: moneySchema,
  total: moneySchema,
  substitutionDetails: substitutionDetailsSchema.nullish(),
  priceAdjustmentDetails: priceAdjustmentDetailsSchema.nullish(),
});

const paymentSchema = z.object({
  type: z.string(),
  collectedBy: z.string(),
  payment: moneySchema,
});

const statusSchema = z.enum(ORDER_STATUSES, {
  error: (issue) =>
    issue.code === 'invalid_value' && typeof issue.input === 'string'
      ? `unknown status ${JSON.stringify(issue.input.length > 64 ? `${issue.input.slice(0, 64)}…` : issue.input)}`
      : undefined,
});

const orderSchema = z.object({
  id: z.int().min(0),
  version: z.int().min(0),
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
  customerPayments: z.array(paymentSchema),
  deliveryProvider: z.string().nullish(),
});

// ---------------------------------------------------------------------------------------------
// Normalisation walk (unknown fields, null optionals, unknown enum values)
// ---------------------------------------------------------------------------------------------

type JsonObject = Record<string, unknown>;

interface ObjectKeys {
  /** Every key the schema knows. */
  known: ReadonlySet<string>;
  /** Optional keys, whose explicit `null` means absent. */
  optional: readonly string[];
}

function keysOf(schema: z.ZodObject): ObjectKeys {
  const entries = Object.entries(schema.shape);
  return {
    known: new Set(entries.map(([key]) => key)),
    optional: entries.filter(([, field]) => field instanceof z.ZodOptional).map(([key]) => key),
  };
}

const ORDER_KEYS = keysOf(orderSchema);
const ITEM_KEYS = keysOf(itemSchema);
const PAYMENT_KEYS = keysOf(paymentSchema);
const MONEY_KEYS = keysOf(moneySchema);
const OPTION_CATEGORY_KEYS = keysOf(optionCategorySchema);
const SELECTED_OPTION_KEYS = keysOf(selectedOptionSchema);
const SUBSTITUTION_KEYS = keysOf(substitutionDetailsSchema);
const PRICE_ADJUSTMENT_KEYS = keysOf(priceAdjustmentDetailsSchema);

const ORDER_TYPES: ReadonlySet<string> = new Set(['collection', 'delivery']);
const DELIVERY_PROVIDERS: ReadonlySet<string> = new Set(['vendor', 'courier_partner']);
const ITEM_TYPES: ReadonlySet<string> = new Set(['product', 'offer', 'voucher', 'adjustment']);
const PAYMENT_TYPES: ReadonlySet<string> = new Set(['online', 'voucher', 'cash']);
const COLLECTORS: ReadonlySet<string> = new Set(['platform', 'vendor']);

/**
 * Records unknown keys of `raw` (zod already stripped them from `out`) and removes `null` optionals
 * from `out`. `out` is zod's fresh copy, so it is edited in place rather than copied again.
 */
function tidyObject(
  raw: JsonObject,
  out: JsonObject,
  keys: ObjectKeys,
  path: string,
  findings: Finding[],
): void {
  for (const key in raw) {
    if (!keys.known.has(key)) findings.push({ code: 'unknown-field', detail: path + key });
  }
  for (const key of keys.optional) {
    if (out[key] === null) delete out[key];
  }
}

function checkEnum(value: string, known: ReadonlySet<string>, path: string, findings: Finding[]): void {
  if (!known.has(value))
    findings.push({ code: 'unknown-enum-value', detail: `${path}: ${JSON.stringify(value)}` });
}

/** Money has no optional keys, so only the raw side is looked at: for unknown keys. */
function tidyMoney(raw: unknown, path: string, findings: Finding[]): void {
  for (const key in raw as JsonObject) {
    if (!MONEY_KEYS.known.has(key)) findings.push({ code: 'unknown-field', detail: `${path}.${key}` });
  }
}

function tidyItem(raw: JsonObject, out: JsonObject, path: string, findings: Finding[]): void {
  tidyObject(raw, out, ITEM_KEYS, `${path}.`, findings);
  checkEnum(out.type as string, ITEM_TYPES, `${path}.type`, findings);
  tidyMoney(raw.price, `${path}.price`, findings);
  tidyMoney(raw.total, `${path}.total`, findings);
  const categories = out.optionCategories as JsonObject[] | undefined;
  if (categories !== undefined) {
    const rawCategories = raw.optionCategories as JsonObject[];
    for (let c = 0; c < categories.length; c++) {
      const category = categories[c] as JsonObject;
      const rawCategory = rawCategories[c] as JsonObject;
      const categoryPath = `${path}.optionCategories[${c}]`;
      tidyObject(rawCategory, category, OPTION_CATEGORY_KEYS, `${categoryPath}.`, findings);
      const options = category.selectedOptions as JsonObject[];
      const rawOptions = rawCategory.selectedOptions as JsonObject[];
      for (let o = 0; o < options.length; o++) {
        const option = options[o] as JsonObject;
        const rawOption = rawOptions[o] as JsonObject;
        const optionPath = `${categoryPath}.selectedOptions[${o}]`;
        tidyObject(rawOption, option, SELECTED_OPTION_KEYS, `${optionPath}.`, findings);
        if (option.optionPrice !== undefined) {
          tidyMoney(rawOption.optionPrice, `${optionPath}.optionPrice`, findings);
        }
      }
    }
  }
  const substitution = out.substitutionDetails as JsonObject | undefined;
  if (substitution !== undefined) {
    tidyObject(
      raw.substitutionDetails as JsonObject,
      substitution,
      SUBSTITUTION_KEYS,
      `${path}.substitutionDetails.`,
      findings,
    );
  }
  const adjustment = out.priceAdjustmentDetails as JsonObject | undefined;
  if (adjustment !== undefined) {
    tidyObject(
      raw.priceAdjustmentDetails as JsonObject,
      adjustment,
      PRICE_ADJUSTMENT_KEYS,
      `${path}.priceAdjustmentDetails.`,
      findings,
    );
  }
}

/** The normalisation walk over the raw record and zod's output side by side (same structure). */
function tidyOrder(raw: JsonObject, out: JsonObject, findings: Finding[]): void {
  tidyObject(raw, out, ORDER_KEYS, '', findings);
  checkEnum(out.type as string, ORDER_TYPES, 'type', findings);
  if (out.deliveryProvider !== undefined) {
    checkEnum(out.deliveryProvider as string, DELIVERY_PROVIDERS, 'deliveryProvider', findings);
  }
  if (out.deliveryFee !== undefined) tidyMoney(raw.deliveryFee, 'deliveryFee', findings);
  tidyMoney(raw.serviceFee, 'serviceFee', findings);
  tidyMoney(raw.total, 'total', findings);
  const items = out.items as JsonObject[];
  const rawItems = raw.items as JsonObject[];
  for (let i = 0; i < items.length; i++) {
    tidyItem(rawItems[i] as JsonObject, items[i] as JsonObject, `items[${i}]`, findings);
  }
  const payments = out.customerPayments as JsonObject[];
  const rawPayments = raw.customerPayments as JsonObject[];
  for (let p = 0; p < payments.length; p++) {
    const payment = payments[p] as JsonObject;
    const rawPayment = rawPayments[p] as JsonObject;
    const path = `customerPayments[${p}]`;
    tidyObject(rawPayment, payment, PAYMENT_KEYS, `${path}.`, findings);
    checkEnum(payment.type as string, PAYMENT_TYPES, `${path}.type`, findings);
    checkEnum(payment.collectedBy as string, COLLECTORS, `${path}.collectedBy`, findings);
    tidyMoney(rawPayment.payment, `${path}.payment`, findings);
  }
}

// ---------------------------------------------------------------------------------------------
// Rejections
// ---------------------------------------------------------------------------------------------

function formatPath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else text += text === '' ? String(segment) : `.${String(segment)}`;
  }
  return text;
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
    if (Number.isSafeInteger(id)) result.orderId = id as number;
    if (Number.isSafeInteger(version)) result.version = version as number;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

/**
 * Validates and normalises one raw order record (a value from `JSON.parse`), following the parse
 * policy at the top of this file. Never throws for bad input.
 */
export function parseOrder(raw: unknown): ParseResult {
  const parsed = orderSchema.safeParse(raw, PARSE_OPTIONS);
  if (!parsed.success) return rejection(raw, parsed.error.issues);
  const findings: Finding[] = [];
  tidyOrder(raw as JsonObject, parsed.data, findings);
  // After the walk no optional key holds null, which is the one way zod's output differs from Order.
  const order = parsed.data as Order;
  const consistency = checkConsistency(order);
  for (const finding of consistency) findings.push(finding);
  return { ok: true, order, findings };
}
