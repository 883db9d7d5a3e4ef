// int64 values carried exactly, in one canonical form: a number while safe, a bigint beyond 2^53 (so one
// value has one representation, and ids still work as map keys).

export type Int64 = number | bigint;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function canonicalInt64(value: bigint): Int64 {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

export function isInt64(value: unknown): value is Int64 {
  if (typeof value === 'number') return Number.isSafeInteger(value);
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
}

/** Exact sum of int64 values, in canonical form: number arithmetic while it stays safe, else bigint. */
export function sumInt64(values: readonly Int64[]): Int64 {
  let safe = 0;
  for (const value of values) {
    safe += typeof value === 'number' ? value : Number.NaN;
    if (!Number.isSafeInteger(safe))
      return canonicalInt64(values.reduce<bigint>((sum, v) => sum + BigInt(v), 0n));
  }
  return safe;
}

/** An integer's decimal text (e.g. a DynamoDB `N`) in canonical form. */
export function int64FromText(text: string): Int64 {
  return canonicalInt64(BigInt(text));
}

// Marks an exact integer while JSON.parse/stringify runs; drawn per call, so no partner string can pose as one.
const newTag = (): string => Math.random().toString(36).slice(2);
const markOf = (tag: string): string => `\u0000int64-${tag}:`;
const LONG_INTEGER = /\d{16}/;

// A string (skipped whole: digits inside it are left alone) or a number literal.
const JSON_STRING_OR_NUMBER = /"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** JSON.parse with integer literals beyond 2^53 as bigints; bodies without 16 digits in a row skip the scan. */
export function parseJsonExact(text: string): unknown {
  if (!LONG_INTEGER.test(text)) return JSON.parse(text);
  const MARK = markOf(newTag());
  let marked = false;
  const out = text.replace(JSON_STRING_OR_NUMBER, (token) => {
    if (!/^-?\d{16,}$/.test(token) || Number.isSafeInteger(Number(token))) return token;
    marked = true;
    return JSON.stringify(MARK + token);
  });
  if (!marked) return JSON.parse(text);
  return JSON.parse(out, (_key, value) =>
    typeof value === 'string' && value.startsWith(MARK)
      ? canonicalInt64(BigInt(value.slice(MARK.length)))
      : value,
  );
}

/** JSON.stringify that writes bigints as exact JSON numbers (digits, no quotes); `space` as JSON.stringify's. */
export function stringifyJsonExact(value: unknown, space?: number): string {
  // The hot path: without a bigint, plain JSON.stringify (a replacer function would slow every value down).
  try {
    return JSON.stringify(value, null, space);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
  const tag = newTag();
  const MARK = markOf(tag);
  const text = JSON.stringify(
    value,
    (_key, item) => (typeof item === 'bigint' ? MARK + item.toString() : item),
    space,
  );
  // JSON.stringify writes the mark's NUL as the six characters \u0000.
  return text.replace(new RegExp(`"\\\\u0000int64-${tag}:(-?\\d+)"`, 'g'), '$1');
}
