/**
 * Validating parser and normaliser for one partner order record (spec section 2).
 * Flow: raw JSON value -> fast path for a valid, clean record (./clean-order.ts) or else one zod
 * safeParse (validates, strips unknown keys, normalises timestamps) and one walk over raw + parsed side
 * by side (unknown fields, null optionals, unknown enum values) -> consistency findings
 * (./consistency.ts) -> ParseResult. Both paths give the same answer; zod words every rejection.
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
// zod/mini: the same validation core as 'zod' with a functional API that esbuild can tree-shake; the
// classic `z` namespace pulls the whole library (about 450 KB) into the bundle and its load into every
// cold start.
import * as z from 'zod/mini';
import {
  COLLECTORS,
  DELIVERY_PROVIDERS,
  ITEM_TYPES,
  ORDER_TYPES,
  PAYMENT_TYPES,
  readCleanOrder,
} from './clean-order.js';
import { checkConsistency } from './consistency.js';
import { type Int64, isInt64 } from './int64.js';
import { formatUtcIso, TIMESTAMP_EXPECTED, timestampToEpochMs } from './timestamps.js';
import type { Finding, Order, ParseResult } from './types.js';
import { ORDER_STATUSES } from './types.js';
import { replaceLoneSurrogates } from './well-formed.js';

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

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

const PARSE_OPTIONS = { error: errorMap } as const;

// ---------------------------------------------------------------------------------------------
// Timestamps
// ---------------------------------------------------------------------------------------------

/** zod transform: epoch ms or offset ISO string -> `toISOString()` form; a custom issue otherwise. */
function normaliseTimestamp(value: number | string, ctx: z.core.ParsePayload): string {
  const ms = timestampToEpochMs(value);
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

const timestamp = z.pipe(z.union([z.number(), z.string()]), z.transform(normaliseTimestamp));
const optionalTimestamp = z.nullish(timestamp);

/**
 * An int64 (the spec's ids, versions and amounts): a safe-integer number, or a bigint within int64 (the body
 * parser turns integers beyond 2^53 into bigints, int64.ts). Messages never quote the value.
 */
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
      if (typeof input === 'bigint') {
        return isInt64(input) ? `expected at least ${minimum}` : 'expected an int64 (-2^63 to 2^63-1)';
      }
      return `expected integer, received ${describeInput(input)}`;
    },
  });
}

const moneySchema = z.object({
  amount: int64Schema(),
  currency: z.string().check(z.regex(CURRENCY_CODE, { error: CURRENCY_EXPECTED })),
});
const optionalMoney = z.nullish(moneySchema);
const count = z.int().check(z.minimum(0));
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
  substitutedBy: z.nullish(idList),
  substitutedFor: z.nullish(idList),
});

const priceAdjustmentDetailsSchema = z.object({
  relatedPriceAdjustment: z.nullish(z.string()),
  itemsAdjusted: z.nullish(idList),
});

const itemSchema = z.object({
  id: z.string(),
  name: z.string(),
  ageRestricted: z.nullish(z.boolean()),
  barcode: z.nullish(z.string()),
  vendorReference: z.nullish(z.string()),
  type: z.string(),
  optionCategories: z.nullish(z.array(optionCategorySchema)),
  quantityOrdered: count,
  quantityFulfilled: count,
  price: moneySchema,
  total: moneySchema,
  substitutionDetails: z.nullish(substitutionDetailsSchema),
  priceAdjustmentDetails: z.nullish(priceAdjustmentDetailsSchema),
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
  customerPayments: z.array(paymentSchema),
  deliveryProvider: z.nullish(z.string()),
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

function keysOf(schema: z.ZodMiniObject): ObjectKeys {
  const entries = Object.entries(schema.shape);
  return {
    known: new Set(entries.map(([key]) => key)),
    optional: entries.filter(([, field]) => field instanceof z.ZodMiniOptional).map(([key]) => key),
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
    if (isInt64(id)) result.orderId = id;
    if (isInt64(version)) result.version = version;
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
  // Most records are valid and clean: the fast path builds the same order without zod.
  const order = readCleanOrder(raw);
  const result: ParseResult =
    order !== undefined ? { ok: true, order, findings: checkConsistency(order) } : parseOrderWithZod(raw);
  if (result.ok) result.findings.push(...replaceLoneSurrogates(result.order));
  return result;
}

/**
 * The reference path, for every record: zod validates (and words every rejection), the walk reports
 * drift. parseOrder's fast path must give the same answer; exported for the test that checks it.
 */
export function parseOrderWithZod(raw: unknown): ParseResult {
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
