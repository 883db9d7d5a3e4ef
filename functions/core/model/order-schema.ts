// The zod description of a partner order record: the reference validator behind parse-order.ts (which
// words every rejection with it) and the key sets its normalisation walk compares raw records with.
//
// Built on first use, not at import: parseOrder's fast path (clean-order.ts) answers for a valid, clean
// record without zod, so a run that meets only such records never needs these schemas, and building them
// (some fifty zod objects with their checks) was a measurable part of both functions' cold start
// (tools/bench/RESULTS.md, section 5).
// zod/mini: the same validation core as 'zod' with a functional API that esbuild can tree-shake; the
// classic `z` namespace pulls the whole library (about 450 KB) into the bundle and its load into every
// cold start.
import * as z from 'zod/mini';
import { type Int64, isInt64 } from './int64.js';
import { formatUtcIso, TIMESTAMP_EXPECTED, timestampToEpochMs } from './timestamps.js';
import { ORDER_STATUSES } from './types.js';

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

export const MISSING = 'missing required field';
// A JSON number the body parser left as a number although it is beyond 2^53: written in float notation
// (1e20), so its digits were never exact. Integer literals beyond 2^53 arrive as bigints and are accepted.
const UNSAFE_INTEGER =
  'expected an integer literal: a number beyond 2^53 in float notation cannot be represented exactly';
const CURRENCY_EXPECTED = 'expected a 3-letter uppercase ISO 4217 currency code';

export function describeInput(input: unknown): string {
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

/** Parse options of every safeParse against the order schema. */
export const PARSE_OPTIONS = { error: errorMap } as const;

// ---------------------------------------------------------------------------------------------
// Schemas (built once, on first use)
// ---------------------------------------------------------------------------------------------

export interface ObjectKeys {
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

/** The schema of the whole record, and what each of its objects may hold (for the normalisation walk). */
export type OrderSchema = ReturnType<typeof buildOrderSchema>;

let built: OrderSchema | undefined;

/** The schemas, built at the first call (the first record the fast path does not accept). */
export function orderSchema(): OrderSchema {
  built ??= buildOrderSchema();
  return built;
}

const CURRENCY_CODE = /^[A-Z]{3}$/;

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

  const recordSchema = z.object({
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

  return {
    order: recordSchema,
    keys: {
      order: keysOf(recordSchema),
      item: keysOf(itemSchema),
      payment: keysOf(paymentSchema),
      money: keysOf(moneySchema),
      optionCategory: keysOf(optionCategorySchema),
      selectedOption: keysOf(selectedOptionSchema),
      substitution: keysOf(substitutionDetailsSchema),
      priceAdjustment: keysOf(priceAdjustmentDetailsSchema),
    },
  };
}
