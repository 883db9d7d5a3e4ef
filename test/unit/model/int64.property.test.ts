// parseJsonExact marks the integer literals JSON.parse would round, in any text, and parses the marked text
// once: that is exact only if the marked text is JSON exactly when the body is, and parses to the same value.
// A property over JSON-ish texts, valid and not (leading zeros, signs, fractions, exponents, digit runs as
// keys, escapes and quotes in strings, unterminated strings, edits anywhere), against a reference that lexes
// every token properly: it throws exactly when JSON.parse throws, and otherwise returns the reference's value.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonExact } from '../../../functions/core/model/int64.js';

/** One JSON token (after whitespace), as the grammar has it; the number's integer part alone captured. */
const TOKEN =
  /[ \t\n\r]*(?:("(?:[^"\\]|\\.)*")|(-?(?:0|[1-9]\d*))(\.\d+)?([eE][+-]?\d+)?|(true|false|null|[[\]{}:,]))/y;
const REFERENCE_MARK = '\u0001reference:'; // no generated text holds \u0001

/** The simplest exact reading of text JSON.parse has accepted: each rounded integer token read by BigInt(). */
function referenceParse(text: string): unknown {
  let marked = '';
  TOKEN.lastIndex = 0;
  for (let token = TOKEN.exec(text); token !== null && token[0] !== ''; token = TOKEN.exec(text)) {
    const [whole, , integer, fraction, exponent] = token;
    const rounded =
      integer !== undefined &&
      fraction === undefined &&
      exponent === undefined &&
      !Number.isSafeInteger(Number(integer)) &&
      integer.replace('-', '').length <= 1_000; // parseJsonExact's stated limit for BigInt()
    marked += rounded ? JSON.stringify(REFERENCE_MARK + integer) : whole;
  }
  return JSON.parse(marked, (_key, value) =>
    typeof value === 'string' && value.startsWith(REFERENCE_MARK)
      ? BigInt(value.slice(REFERENCE_MARK.length))
      : value,
  );
}

const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
const space = fc.constantFrom('', '', ' ', '\n\t', '\r\n  ');
const integer = fc.oneof(
  digits(1, 15).map((d) => d.replace(/^0+(?=\d)/, '')), // safe
  fc.constantFrom('9007199254740991', '9007199254740992', '9007199254740993', '-9223372036854775808'),
  fc.tuple(fc.constantFrom(...'123456789'), digits(15, 24)).map(([first, rest]) => first + rest),
  digits(16, 24).map((d) => `0${d}`), // a leading zero: not JSON
);
const number = fc
  .tuple(
    fc.constantFrom('', '', '-', '--', '+'),
    integer,
    fc.oneof(
      fc.constant(''),
      digits(1, 20).map((d) => `.${d}`),
      fc.constant('.'),
    ),
    fc.oneof(
      fc.constant(''),
      fc.tuple(fc.constantFrom('e', 'E+', 'e-'), digits(1, 20)).map((p) => p.join('')),
    ),
  )
  .map((parts) => parts.join(''));
const stringText = fc
  .array(
    fc.oneof(
      fc.constantFrom('a', ' ', '\\"', '\\\\', '\\n', '\\u0000', '\\u0041', 'é', '__proto__', '\\'),
      digits(1, 20),
      integer,
    ),
    { maxLength: 6 },
  )
  .map((parts) => `"${parts.join('')}"`);
const key = fc.oneof(stringText, fc.constant('"__proto__"'), integer); // a bare integer key is not JSON
const { value } = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    number,
    stringText,
    fc.constantFrom('true', 'null'),
    fc
      .array(fc.tuple(space, tie('value'), space), { maxLength: 5 })
      .map((items) => `[${items.map((item) => item.join('')).join(',')}]`),
    fc
      .array(fc.tuple(space, key, space, tie('value'), space), { maxLength: 5 })
      .map((members) => `{${members.map(([a, k, b, v, c]) => `${a}${k}${b}:${v}${c}`).join(',')}}`),
  ),
}));
/** A text, then edits anywhere: a character dropped, one of JSON's own inserted, the end cut off. */
const jsonish = fc
  .tuple(
    value,
    fc.array(
      fc.tuple(
        fc.nat(),
        fc.constantFrom('drop', 'cut', ...'"\\0-.eE:,]}[{ 7'.split('').map((c) => `insert ${c}`)),
      ),
      { maxLength: 3 },
    ),
  )
  .map(([text, edits]) =>
    edits.reduce((edited, [at, edit]) => {
      const i = at % (edited.length + 1);
      if (edit === 'drop') return edited.slice(0, i) + edited.slice(i + 1);
      if (edit === 'cut') return edited.slice(0, i);
      return edited.slice(0, i) + edit.slice('insert '.length) + edited.slice(i);
    }, text),
  );

/** What parseJsonExact must do with `text`: throw as JSON.parse does, or read it as the reference does. */
function expectExact(text: string): void {
  let valid = true;
  try {
    JSON.parse(text);
  } catch {
    valid = false;
  }
  if (!valid) expect(() => parseJsonExact(text)).toThrow(SyntaxError);
  else expect(parseJsonExact(text)).toEqual(referenceParse(text));
}

describe('parseJsonExact against an exact reference', () => {
  it('JSON-ish texts, unedited (mostly JSON): the reference value, or SyntaxError where JSON.parse throws', () => {
    fc.assert(fc.property(value, expectExact), { numRuns: 3_000 });
  });

  it('the same texts edited anywhere (mostly not JSON): throws exactly when JSON.parse throws', () => {
    fc.assert(fc.property(jsonish, expectExact), { numRuns: 3_000 });
  });
});
