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
import type * as z from 'zod/mini';
import {
  COLLECTORS,
  DELIVERY_PROVIDERS,
  ITEM_TYPES,
  ORDER_TYPES,
  PAYMENT_TYPES,
  readCleanOrder,
} from './clean-order.js';
import { checkConsistency } from './consistency.js';
import { isInt64 } from './int64.js';
import {
  describeInput,
  MISSING,
  type ObjectKeys,
  type OrderSchema,
  orderSchema,
  PARSE_OPTIONS,
} from './order-schema.js';
import type { Finding, Order, ParseResult } from './types.js';
import { replaceLoneSurrogates } from './well-formed.js';

// ---------------------------------------------------------------------------------------------
// Normalisation walk (unknown fields, null optionals, unknown enum values)
// ---------------------------------------------------------------------------------------------

type JsonObject = Record<string, unknown>;

type Keys = OrderSchema['keys'];

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
function tidyMoney(raw: unknown, keys: Keys, path: string, findings: Finding[]): void {
  for (const key in raw as JsonObject) {
    if (!keys.money.known.has(key)) findings.push({ code: 'unknown-field', detail: `${path}.${key}` });
  }
}

function tidyItem(raw: JsonObject, out: JsonObject, keys: Keys, path: string, findings: Finding[]): void {
  tidyObject(raw, out, keys.item, `${path}.`, findings);
  checkEnum(out.type as string, ITEM_TYPES, `${path}.type`, findings);
  tidyMoney(raw.price, keys, `${path}.price`, findings);
  tidyMoney(raw.total, keys, `${path}.total`, findings);
  const categories = out.optionCategories as JsonObject[] | undefined;
  if (categories !== undefined) {
    const rawCategories = raw.optionCategories as JsonObject[];
    for (let c = 0; c < categories.length; c++) {
      const category = categories[c] as JsonObject;
      const rawCategory = rawCategories[c] as JsonObject;
      const categoryPath = `${path}.optionCategories[${c}]`;
      tidyObject(rawCategory, category, keys.optionCategory, `${categoryPath}.`, findings);
      const options = category.selectedOptions as JsonObject[];
      const rawOptions = rawCategory.selectedOptions as JsonObject[];
      for (let o = 0; o < options.length; o++) {
        const option = options[o] as JsonObject;
        const rawOption = rawOptions[o] as JsonObject;
        const optionPath = `${categoryPath}.selectedOptions[${o}]`;
        tidyObject(rawOption, option, keys.selectedOption, `${optionPath}.`, findings);
        if (option.optionPrice !== undefined) {
          tidyMoney(rawOption.optionPrice, keys, `${optionPath}.optionPrice`, findings);
        }
      }
    }
  }
  const substitution = out.substitutionDetails as JsonObject | undefined;
  if (substitution !== undefined) {
    tidyObject(
      raw.substitutionDetails as JsonObject,
      substitution,
      keys.substitution,
      `${path}.substitutionDetails.`,
      findings,
    );
  }
  const adjustment = out.priceAdjustmentDetails as JsonObject | undefined;
  if (adjustment !== undefined) {
    tidyObject(
      raw.priceAdjustmentDetails as JsonObject,
      adjustment,
      keys.priceAdjustment,
      `${path}.priceAdjustmentDetails.`,
      findings,
    );
  }
}

/** The normalisation walk over the raw record and zod's output side by side (same structure). */
function tidyOrder(raw: JsonObject, out: JsonObject, keys: Keys, findings: Finding[]): void {
  tidyObject(raw, out, keys.order, '', findings);
  checkEnum(out.type as string, ORDER_TYPES, 'type', findings);
  if (out.deliveryProvider !== undefined) {
    checkEnum(out.deliveryProvider as string, DELIVERY_PROVIDERS, 'deliveryProvider', findings);
  }
  if (out.deliveryFee !== undefined) tidyMoney(raw.deliveryFee, keys, 'deliveryFee', findings);
  tidyMoney(raw.serviceFee, keys, 'serviceFee', findings);
  tidyMoney(raw.total, keys, 'total', findings);
  const items = out.items as JsonObject[];
  const rawItems = raw.items as JsonObject[];
  for (let i = 0; i < items.length; i++) {
    tidyItem(rawItems[i] as JsonObject, items[i] as JsonObject, keys, `items[${i}]`, findings);
  }
  const payments = out.customerPayments as JsonObject[];
  const rawPayments = raw.customerPayments as JsonObject[];
  for (let p = 0; p < payments.length; p++) {
    const payment = payments[p] as JsonObject;
    const rawPayment = rawPayments[p] as JsonObject;
    const path = `customerPayments[${p}]`;
    tidyObject(rawPayment, payment, keys.payment, `${path}.`, findings);
    checkEnum(payment.type as string, PAYMENT_TYPES, `${path}.type`, findings);
    checkEnum(payment.collectedBy as string, COLLECTORS, `${path}.collectedBy`, findings);
    tidyMoney(rawPayment.payment, keys, `${path}.payment`, findings);
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
  const schema = orderSchema();
  const parsed = schema.order.safeParse(raw, PARSE_OPTIONS);
  if (!parsed.success) return rejection(raw, parsed.error.issues);
  const findings: Finding[] = [];
  tidyOrder(raw as JsonObject, parsed.data, schema.keys, findings);
  // After the walk no optional key holds null, which is the one way zod's output differs from Order.
  const order = parsed.data as Order;
  const consistency = checkConsistency(order);
  for (const finding of consistency) findings.push(finding);
  return { ok: true, order, findings };
}
