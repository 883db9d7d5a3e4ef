import { describe, expect, it } from 'vitest';
import { parseJsonExact, stringifyJsonExact, sumInt64 } from '../../../functions/core/model/int64.js';

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

  it('never mistakes a partner string that looks like its internal marker for a number', () => {
    const text = '{"id":9007199254740993,"name":"\\u0000int64:123","other":"\\u0000int64-x:7"}';
    const value = parseJsonExact(text) as Record<string, unknown>;
    expect(value.name).toBe('\u0000int64:123');
    expect(value.other).toBe('\u0000int64-x:7');
    expect(stringifyJsonExact(value)).toBe(text);
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
