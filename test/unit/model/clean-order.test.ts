// Differential test of parseOrder's fast path (clean-order.ts) against the zod path (parseOrderWithZod):
// on the simulator's generated feed, the shared fixtures, and thousands of seeded mutations of them
// (missing, null, mistyped, out-of-range and unknown values, unknown fields), both must give the same
// answer, down to the key order of the normalised order (message bodies are byte-identical).
import { describe, expect, it } from 'vitest';
import { readCleanOrder } from '../../../functions/core/model/clean-order.js';
import { parseOrder, parseOrderWithZod } from '../../../functions/core/model/parse-order.js';
import type { ParseResult } from '../../../functions/core/model/types.js';
import { GeneratedFeed } from '../../../tools/simulator/generated-feed.js';
import { Random } from '../../../tools/simulator/random.js';
import {
  collectionOrder,
  priceAdjustmentOrder,
  sampleOrder,
  substitutionOrder,
  voucherOrder,
} from '../../fixtures/orders.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Raw records as the poller sees them: JSON text parsed afresh. */
function feedRecords(seed: number, orders: number): Json[] {
  const feed = new GeneratedFeed(
    { seed, orders, currencies: ['EUR', 'GBP'], duplicateVersions: 0.05, outOfOrderVersions: 0.05 },
    Date.UTC(2025, 0, 1),
  );
  return Array.from({ length: feed.length }, (_, i) => JSON.parse(feed.entryJson(i)) as Json);
}

function fixtureRecords(): Json[] {
  return [sampleOrder(), collectionOrder(), voucherOrder(), substitutionOrder(), priceAdjustmentOrder()].map(
    (raw) => JSON.parse(JSON.stringify(raw)) as Json,
  );
}

/** Every container (object or array) in the record, with a way to replace or remove one of its entries. */
function containers(value: Json, found: Array<Json[] | { [key: string]: Json }> = []) {
  if (typeof value === 'object' && value !== null) {
    found.push(value);
    for (const child of Object.values(value)) containers(child, found);
  }
  return found;
}

/** Values that hit each kind of rule: types, integers, ranges, enums, currencies, timestamps. */
const REPLACEMENTS: readonly Json[] = [
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53,
  -(2 ** 53),
  9e15,
  1_714_550_400_000,
  '',
  '12',
  'eur',
  'EUR',
  'GBP',
  'refunded',
  'placed',
  'bundle',
  'drone',
  'crypto',
  'adjustment',
  '2024-05-01T08:30:00Z',
  '2024-05-01T08:30:00',
  '2024-05-01',
  '2023-02-29T10:00:00Z',
  '2024-05-01t08:30z',
  '2024-05-01T10:30+02',
  '2024-05-01T03:00:00.123456-0530',
  '0050-06-15T12:00:00+01:00',
  '2024-05-01T10:00:00+24:00',
  [],
  ['item-1'],
  [1],
  {},
  { amount: 100, currency: 'EUR' },
  { amount: 100, currency: 'EUR', exponent: 2 },
];

/** Sets an own data property, as JSON.parse does (a plain assignment to `__proto__` would not). */
function setOwn(target: { [key: string]: Json }, key: string, value: Json): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Applies one seeded mutation somewhere in the record (which it changes in place). */
function mutate(record: Json, random: Random): void {
  const target = random.pick(containers(record));
  const replacement = structuredClone(random.pick(REPLACEMENTS));
  const action = random.int(0, 9);
  if (Array.isArray(target)) {
    if (target.length > 0 && action < 2) target.splice(random.int(0, target.length - 1), 1);
    else if (target.length > 0) target[random.int(0, target.length - 1)] = replacement;
    else target.push(replacement);
    return;
  }
  const keys = Object.keys(target);
  if (keys.length === 0 || action === 0) {
    // An unknown field, sometimes one with a special name.
    setOwn(target, random.pick(['colour', 'extra', '__proto__', 'constructor', 'toString']), replacement);
  } else if (action === 1) {
    delete target[random.pick(keys)];
  } else {
    setOwn(target, random.pick(keys), replacement);
  }
}

/** Same answer, and the same key order in the normalised order. */
function expectSameAnswer(raw: Json): ParseResult {
  const expected = parseOrderWithZod(raw);
  const actual = parseOrder(raw);
  expect(actual).toStrictEqual(expected);
  if (actual.ok && expected.ok) expect(JSON.stringify(actual.order)).toBe(JSON.stringify(expected.order));
  return actual;
}

describe('parseOrder fast path', () => {
  it('takes every record of the generated feed and builds what the zod path builds', () => {
    // Prepare
    const records = [...feedRecords(1, 300), ...feedRecords(2, 300), ...fixtureRecords()];

    // Act
    const fast = records.filter((raw) => readCleanOrder(raw) !== undefined).length;

    // Assess
    expect(records.length).toBeGreaterThan(1500);
    expect(fast).toBe(records.length);
    for (const raw of records) expect(expectSameAnswer(raw).ok).toBe(true);
  });

  it('gives the same answer as the zod path on mutated and broken records', () => {
    // Prepare
    const random = new Random(20_240_501);
    const originals = [...feedRecords(3, 100), ...fixtureRecords()];
    const outcomes = { fast: 0, drift: 0, rejected: 0 };

    for (let round = 0; round < 8; round++) {
      for (const original of originals) {
        const raw = structuredClone(original);
        const mutations = random.int(1, 3);
        for (let m = 0; m < mutations; m++) mutate(raw, random);
        const before = JSON.stringify(raw);

        // Act
        const tookFastPath = readCleanOrder(raw) !== undefined;
        const result = expectSameAnswer(raw);

        // Assess
        expect(JSON.stringify(raw)).toBe(before);
        if (tookFastPath) {
          expect(result.ok).toBe(true);
          outcomes.fast += 1;
        } else if (result.ok) {
          outcomes.drift += 1;
        } else {
          outcomes.rejected += 1;
        }
      }
    }

    // Every outcome is well represented, so the comparison covered all three.
    expect(outcomes.fast).toBeGreaterThan(100);
    expect(outcomes.drift).toBeGreaterThan(100);
    expect(outcomes.rejected).toBeGreaterThan(1000);
  });

  it.each([
    ['null', null],
    ['an array', []],
    ['a string', '{}'],
    ['a number', 1001],
    ['an empty object', {}],
  ])('leaves %s to the zod path', (_label, raw) => {
    // Act
    const order = readCleanOrder(raw);

    // Assess
    expect(order).toBeUndefined();
    expectSameAnswer(raw);
  });
});
