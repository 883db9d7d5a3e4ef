import { describe, expect, it, vi } from 'vitest';
import { parseJsonExact, stringifyJsonExact, sumInt64 } from '../../../functions/core/model/int64.js';

const UNSAFE = '9007199254740993'; // 2^53 + 1: JSON.parse reads it as 2^53

describe('exact int64 JSON', () => {
  it('parses integers beyond 2^53 as bigints and leaves safe ones, strings and floats alone', () => {
    const value = parseJsonExact(
      '{"a":9223372036854775807,"b":"9007199254740993 in a \\"string\\"","c":[-9007199254740993,1.5e300],"d":42}',
    );
    expect(value).toEqual({
      a: 9_223_372_036_854_775_807n,
      b: '9007199254740993 in a "string"',
      c: [-9_007_199_254_740_993n, 1.5e300],
      d: 42,
    });
  });

  it('an int64 under a `__proto__` key: an own property, the prototype untouched', () => {
    const value = parseJsonExact(`{"__proto__":${UNSAFE},"o":{"__proto__":{"x":${UNSAFE}}}}`) as {
      o: Record<string, unknown>;
    };
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toBe(2n ** 53n + 1n);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(value.o, '__proto__')?.value).toEqual({ x: 2n ** 53n + 1n });
    expect(Object.getPrototypeOf(value.o)).toBe(Object.prototype);
  });

  it('never mistakes a partner string that looks like its internal marker for a number', () => {
    // Parse and stringify mark with 10 characters of U+00A0-U+00FF drawn per call (once, NUL and a hex tag).
    const latin = 'é'.repeat(10);
    const text = `{"id":9007199254740993,"name":"\\u0000int64:123","other":"\\u0000int64-x:7","latin":"${latin}123"}`;
    const value = parseJsonExact(text) as Record<string, unknown>;
    expect(value.name).toBe('\u0000int64:123');
    expect(value.other).toBe('\u0000int64-x:7');
    expect(value.latin).toBe(`${latin}123`);
    expect(value.id).toBe(2n ** 53n + 1n);
    expect(stringifyJsonExact(value)).toBe(text);
  });

  // What the partner may send instead of a page; each only has to be rejected or read exactly (its time is
  // the bench's parse section).
  describe('bodies that are not JSON are rejected, whatever digits they hold', () => {
    it.each([
      ['an unterminated string of escapes', `{"id":${UNSAFE},"s":"${'\\"'.repeat(20_000)}`],
      ['an unterminated string of backslash pairs', `[${UNSAFE},"${'\\\\'.repeat(20_000)}`],
      ['a page cut off mid-number', `{"hasMore":true,"data":[{"id":${UNSAFE}`],
      ['a digit run with no JSON around it', `${UNSAFE}${'7'.repeat(20_000)} ${UNSAFE}`],
      ['a maintenance page quoting an id', `<html>order ${UNSAFE} is "delayed</html>`],
      ['a lone quote before a number', `"${UNSAFE}`],
      // Marked as strings these would be JSON: the scan leaves them alone (the property test covers the rest).
      ['a long literal with a leading zero', `[0${UNSAFE}]`],
      ['a long literal as a key', `{${UNSAFE}:1}`],
    ])('%s', (_name, text) => {
      expect(() => parseJsonExact(text)).toThrow(SyntaxError);
    });

    it('reads a body that is not JSON once: one JSON.parse, whose SyntaxError it throws', () => {
      const text = `{"id":${UNSAFE},"note":"unterminated`;
      const parse = vi.spyOn(JSON, 'parse');
      expect(() => parseJsonExact(text)).toThrow(SyntaxError);
      expect(parse).toHaveBeenCalledTimes(1);
    });
  });

  describe('odd JSON is read exactly', () => {
    it.each([
      [
        'escapes and backslashes just before a number',
        `["\\\\","\\"",${UNSAFE}]`,
        ['\\', '"', 2n ** 53n + 1n],
      ],
      [
        'a digit run between escaped quotes stays in its string',
        String.raw`["\"${UNSAFE}\"","\\\\",${UNSAFE}]`,
        [`"${UNSAFE}"`, '\\\\', 2n ** 53n + 1n],
      ],
      [
        'digit runs in exponents and fractions stay numbers',
        '[1E+1234567890123456,1e-1234567890123456789,-12345678901234567890.5]',
        [Number.POSITIVE_INFINITY, 0, -12345678901234567000],
      ],
      ['digit runs inside strings stay strings', `["${'1'.repeat(5_000)}",1]`, ['1'.repeat(5_000), 1]],
      ['a key of digits', `{"${UNSAFE}":${UNSAFE}}`, { [UNSAFE]: 2n ** 53n + 1n }],
      [
        'long fractions and exponents stay numbers',
        '[0.12345678901234567890,12345678901234567890e0]',
        [0.12345678901234568, 12345678901234567000],
      ],
      [
        '2^53 itself and the int64 bounds',
        '[9007199254740992,-9223372036854775808]',
        [2n ** 53n, -(2n ** 63n)],
      ],
      [
        'the largest safe integer stays a number',
        '[9007199254740991,-9007199254740991]',
        [2 ** 53 - 1, -(2 ** 53 - 1)],
      ],
      ['a literal beyond int64, exact, for the model to reject', '18446744073709551615', 2n ** 64n - 1n],
      ['1,000 characters: still exact', `-${'9'.repeat(999)}`, -(10n ** 999n - 1n)],
      [
        '1,001 characters: left as JSON.parse reads it (BigInt() of it would be super-linear)',
        '9'.repeat(1_001),
        Number.POSITIVE_INFINITY,
      ],
      ['a number whitespace-padded', ` \n${UNSAFE}\t`, 2n ** 53n + 1n],
    ])('%s', (_name, text, expected) => {
      expect(parseJsonExact(text)).toEqual(expected);
    });

    it('nesting as deep as JSON.parse takes, without a long digit run: plain JSON.parse', () => {
      const depth = 100_000;
      let value = parseJsonExact(`${'['.repeat(depth)}1${']'.repeat(depth)}`);
      for (let level = 0; level < depth; level++) value = (value as unknown[])[0];
      expect(value).toBe(1);
    });

    it('an int64 nested as deep as JSON.parse takes: exact', () => {
      const depth = 100_000;
      let value = parseJsonExact(`${'['.repeat(depth)}${UNSAFE}${']'.repeat(depth)}`);
      for (let level = 0; level < depth; level++) value = (value as unknown[])[0];
      expect(value).toBe(2n ** 53n + 1n);
    });
  });

  it('writes bigints as exact JSON numbers and takes plain JSON.stringify otherwise', () => {
    expect(stringifyJsonExact({ id: 9_223_372_036_854_775_807n, n: [1, 2n ** 60n] })).toBe(
      '{"id":9223372036854775807,"n":[1,1152921504606846976]}',
    );
    expect(stringifyJsonExact({ a: 1, b: 'x' })).toBe('{"a":1,"b":"x"}');
  });

  it('sums exactly, as a number while the sum is safe and as a bigint beyond', () => {
    expect(sumInt64([1, 2, 3])).toBe(6);
    expect(sumInt64([Number.MAX_SAFE_INTEGER, 2])).toBe(9_007_199_254_740_993n);
    expect(sumInt64([9_007_199_254_740_993n, -2])).toBe(Number.MAX_SAFE_INTEGER);
  });
});
