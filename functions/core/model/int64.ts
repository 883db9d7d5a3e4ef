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

/** A run of 16 digits or more: the only way to write an integer beyond 2^53 in JSON. */
const LONG_DIGITS = /-?\d{16,}/g;
/** Around a digit run, what makes it part of a fraction, an exponent or a float's mantissa. */
const NOT_INTEGER_LITERAL = new Set([...'.eE+-'].map((c) => c.charCodeAt(0)));
/**
 * int64 needs 19 digits; a longer literal is beyond it whatever it says and is read exactly only up to this
 * many characters, because BigInt() of decimal text is super-linear in its length (a million digits: 0.2 s).
 */
const MAX_EXACT_LITERAL = 1_000;
const BACKSLASH = 0x5c;
const DATA_PROPERTY = { writable: true, enumerable: true, configurable: true };

/** Whether the quote at `at`, inside a string, is escaped: an odd run of backslashes before it. */
function escapedQuote(text: string, at: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * `json` (text JSON.parse has accepted) with each integer literal that JSON.parse rounds replaced by a string,
 * `mark` + its digits; undefined if it has none. One pass, linear in the text whatever it holds: a regular
 * expression finds the next run of 16 digits or more (leftmost, so whole), and indexOf walks the quotes between
 * the runs to know whether a run lies inside a string (a quote opens a string, and closes it unless an odd run
 * of backslashes escapes it: each backslash is counted once, for the one character after it). Nothing is
 * read twice and nothing backtracks; only valid JSON is scanned, so a quote always closes (the regex this
 * replaced rescanned an unterminated string from every quote in it: 64 KiB of `"\` took 7.2 s).
 */
function markRoundedIntegers(json: string, mark: string): string | undefined {
  const markText = JSON.stringify(mark).slice(1, -1); // the mark's NUL as the escape \u0000
  let [out, copied, inString, quote] = ['', 0, false, json.indexOf('"')];
  LONG_DIGITS.lastIndex = 0;
  for (let run = LONG_DIGITS.exec(json); run !== null; run = LONG_DIGITS.exec(json)) {
    const [[literal], start, end] = [run, run.index, LONG_DIGITS.lastIndex];
    for (; quote !== -1 && quote < start; quote = json.indexOf('"', quote + 1))
      if (!inString || !escapedQuote(json, quote)) inString = !inString;
    if (inString || NOT_INTEGER_LITERAL.has(json.charCodeAt(start - 1))) continue;
    if (NOT_INTEGER_LITERAL.has(json.charCodeAt(end)) || literal.length > MAX_EXACT_LITERAL) continue;
    if (Number.isSafeInteger(Number(literal))) continue;
    out += `${json.slice(copied, start)}"${markText}${literal}"`; // += : V8 joins the pieces once, at the end
    copied = end;
  }
  return copied === 0 ? undefined : out + json.slice(copied);
}

/**
 * `root` with every `mark`ed string turned into its bigint, in place. Iterative (a stack of the objects still
 * to visit), so a body nested as deep as JSON.parse takes is restored too; a `__proto__` key stays a plain key.
 */
function restoreMarked(root: unknown, mark: string): unknown {
  const restore = (value: unknown) =>
    typeof value === 'string' && value.startsWith(mark) ? BigInt(value.slice(mark.length)) : value;
  const pending: object[] = [];
  const visit = (item: unknown) => typeof item === 'object' && item !== null && pending.push(item);
  visit(root);
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        node[i] = restore(node[i]);
        visit(node[i]);
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const item = record[key];
      const restored = restore(item);
      if (restored === item) visit(item);
      else Object.defineProperty(record, key, { ...DATA_PROPERTY, value: restored });
    }
  }
  return restore(root);
}

/**
 * JSON.parse with integer literals beyond 2^53 as bigints (canonical: a rounded literal is never safe), in time
 * linear in the body whatever it holds. Text that is not JSON throws JSON.parse's SyntaxError before any scan;
 * a body with no such literal costs JSON.parse and one regex search; one with them is parsed a second time,
 * each marked as a string, then restored. (Node 22's reviver `context.source` would read them in one pass, but
 * takes 1.5x the CPU on pages with 64-bit ids, and it recurses: lab/bench/RESULTS.md, "Parsing partner bodies".)
 */
export function parseJsonExact(text: string): unknown {
  const value: unknown = JSON.parse(text);
  const mark = markOf(newTag());
  const marked = markRoundedIntegers(text, mark);
  return marked === undefined ? value : restoreMarked(JSON.parse(marked), mark);
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
