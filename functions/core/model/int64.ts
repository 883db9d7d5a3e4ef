// int64 values carried exactly, in one canonical form: a number while safe, a bigint beyond 2^53 (so one
// value has one representation, and ids still work as map keys).

import { randomBytes } from 'node:crypto';

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

/**
 * Marks an exact integer while JSON.parse/stringify runs, drawn per call so that no partner string can pose as
 * one: 10 characters of U+00A0-U+00FF (96 values each: about 65 bits), which JSON reads and writes as they are
 * and V8 keeps one byte wide (where `\u0000` and 16 hex digits took 22 characters: 15 % of the CPU of parsing a
 * body of int64 literals), and no regular expression gives a meaning to.
 */
const newMark = (): string => String.fromCharCode(...randomBytes(10).map((byte) => 0xa0 + (byte % 96)));

/** A run of 16 digits or more: the only way to write an integer beyond 2^53 in JSON. */
const LONG_DIGITS = /-?\d{16,}/g;
/** Before a digit run, what makes it part of a fraction, an exponent or a float's mantissa. */
const NOT_INTEGER_LITERAL = new Set([...'.eE+-'].map((c) => c.charCodeAt(0)));
/** After an integer literal that is a value, past JSON whitespace: the end, or one of these. */
const AFTER_VALUE = new Set([...',]}'].map((c) => c.charCodeAt(0)));
const WHITESPACE = new Set([...' \t\n\r'].map((c) => c.charCodeAt(0)));
/**
 * int64 needs 19 digits; a longer literal is beyond it whatever it says and is read exactly only up to this
 * many characters, because BigInt() of decimal text is super-linear in its length (a million digits: 0.2 s).
 */
const MAX_EXACT_LITERAL = 1_000;
const [BACKSLASH, MINUS, ZERO] = [0x5c, 0x2d, 0x30];
const DATA_PROPERTY = { writable: true, enumerable: true, configurable: true };

/** Whether the quote at `at`, inside a string, is escaped: an odd run of backslashes before it. */
function escapedQuote(text: string, at: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Whether JSON.parse rounds this integer literal (`-?` then 16 digits or more) and BigInt() reads it in linear
 * time. By length and, at 16 digits, by comparing text: Number() of it costs 4x the regex that found it.
 */
function roundedByJsonParse(literal: string): boolean {
  const sign = literal.charCodeAt(0) === MINUS ? 1 : 0;
  const digits = literal.length - sign;
  if (digits !== 16) return digits > 16 && digits <= MAX_EXACT_LITERAL;
  return (sign === 0 ? literal : literal.slice(1)) > MAX_SAFE_DIGITS;
}
const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER);

/**
 * Whether the run `start`..`end`, outside a string, may be marked: if the text is JSON, a whole integer literal
 * that is a value (not a fraction, an exponent or a key); if it is not, a run whose string stays not JSON.
 */
function wholeIntegerValue(text: string, start: number, end: number): boolean {
  if (NOT_INTEGER_LITERAL.has(text.charCodeAt(start - 1))) return false;
  // A leading zero is no JSON number: left as it is, so JSON.parse still rejects it.
  if (text.charCodeAt(text.charCodeAt(start) === MINUS ? start + 1 : start) === ZERO) return false;
  let after = end;
  while (WHITESPACE.has(text.charCodeAt(after))) after++;
  return after === text.length || AFTER_VALUE.has(text.charCodeAt(after)); // a key is followed by `:`
}

/**
 * `text` (any text) with each integer literal that JSON.parse would round replaced by a string, `mark` + its
 * digits; undefined if it has none. The result is JSON exactly when `text` is, so one JSON.parse of it both
 * validates and parses: where the text is JSON, a marked run is a number token in value position, now a string
 * token; where the marked text is JSON, each mark is a string value (quotes are tracked as JSON reads them),
 * and its run, being a number token (no leading zero) between the same neighbours, was one too
 * (test/unit/model/int64.property.test.ts checks both against a reference). One pass, linear in the text whatever it
 * holds: a regular expression finds the next run of 16 digits or more (leftmost, so whole), and indexOf walks
 * the quotes between the runs to know whether a run lies inside a string (a quote opens a string, and closes it
 * unless an odd run of backslashes escapes it: each backslash is counted once, for the one character after it).
 * Nothing is read twice and nothing backtracks (the regex this replaced rescanned an unterminated string from
 * every quote in it: 64 KiB of `"\` took 7.2 s).
 */
function markRoundedIntegers(text: string, mark: string): string | undefined {
  const open = `"${mark}`;
  let [out, copied, inString, quote] = ['', 0, false, text.indexOf('"')];
  LONG_DIGITS.lastIndex = 0;
  for (let run = LONG_DIGITS.exec(text); run !== null; run = LONG_DIGITS.exec(text)) {
    const [literal, start, end] = [run[0], run.index, LONG_DIGITS.lastIndex];
    for (; quote !== -1 && quote < start; quote = text.indexOf('"', quote + 1))
      if (!inString || !escapedQuote(text, quote)) inString = !inString;
    if (inString || !roundedByJsonParse(literal) || !wholeIntegerValue(text, start, end)) continue;
    // One piece at a time (V8 joins them once, at the end): a template literal costs a third more here.
    out += text.slice(copied, start);
    out += open;
    out += literal;
    out += '"';
    copied = end;
  }
  return copied === 0 ? undefined : out + text.slice(copied);
}

/**
 * `root` with every `mark`ed string turned into its bigint, in place. Iterative (a stack of the objects still
 * to visit), so a body nested as deep as JSON.parse takes is restored too; a `__proto__` key stays a plain key
 * (defined, as assigning it would set the prototype; elsewhere assigned, which is cheaper).
 */
function restoreMarked(root: unknown, mark: string): unknown {
  const skip = mark.length;
  if (typeof root === 'string') return root.startsWith(mark) ? BigInt(root.slice(skip)) : root;
  if (typeof root !== 'object' || root === null) return root;
  const pending: object[] = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === 'string') {
          if (item.startsWith(mark)) node[i] = BigInt(item.slice(skip));
        } else if (typeof item === 'object' && item !== null) pending.push(item);
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key in record) {
      const item = record[key];
      if (typeof item === 'object' && item !== null) pending.push(item);
      if (typeof item !== 'string' || !item.startsWith(mark)) continue;
      if (key !== '__proto__') record[key] = BigInt(item.slice(skip));
      else Object.defineProperty(record, key, { ...DATA_PROPERTY, value: BigInt(item.slice(skip)) });
    }
  }
  return root;
}

/**
 * JSON.parse with integer literals beyond 2^53 as bigints (canonical: a rounded literal is never safe): one
 * linear scan marks each such literal as a string, one JSON.parse of the marked text validates and parses (it
 * throws a SyntaxError exactly when the body is not JSON), and the marks become bigints in place; a
 * body without such a literal costs the scan and JSON.parse. (Node 22's reviver `context.source` would read
 * them in one JSON.parse, but a reviver runs for every value: it takes 2x this path's CPU on pages with 64-bit
 * ids, and it recurses: lab/bench/RESULTS.md, "Parsing partner bodies".)
 */
export function parseJsonExact(text: string): unknown {
  const mark = newMark();
  const marked = markRoundedIntegers(text, mark);
  if (marked === undefined) return JSON.parse(text);
  // Not JSON: the marked text's SyntaxError, its position counting the marks. The body is not parsed again for
  // its own (that doubled the CPU on a page cut off mid-record): no caller shows the message, which quotes it.
  return restoreMarked(JSON.parse(marked), mark);
}

/** JSON.stringify that writes bigints as exact JSON numbers (digits, no quotes); `space` as JSON.stringify's. */
export function stringifyJsonExact(value: unknown, space?: number): string {
  // The hot path: without a bigint, plain JSON.stringify (a replacer function would slow every value down).
  try {
    return JSON.stringify(value, null, space);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
  const mark = newMark();
  const text = JSON.stringify(
    value,
    (_key, item) => (typeof item === 'bigint' ? mark + item.toString() : item),
    space,
  );
  return text.replace(new RegExp(`"${mark}(-?\\d+)"`, 'g'), '$1');
}
