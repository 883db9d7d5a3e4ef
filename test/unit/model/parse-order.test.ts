import { describe, expect, it } from 'vitest';
import { parseJsonExact } from '../../../functions/core/model/int64.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import type { Order, ParseResult } from '../../../functions/core/model/types.js';
import { collectionOrder, money, type RawItem, type RawOrder, sampleOrder } from '../../fixtures/orders.js';

type Accepted = Extract<ParseResult, { ok: true }>;
type Rejected = Extract<ParseResult, { ok: false }>;

function accepted(result: ParseResult): Accepted {
  if (!result.ok) throw new Error(`expected the record to be accepted, got: ${result.reason}`);
  return result;
}

function rejected(result: ParseResult): Rejected {
  if (result.ok) throw new Error('expected the record to be rejected');
  return result;
}

const firstItem = (raw: RawOrder): RawItem => raw.items[0] as RawItem;
/** The sample order with one change made to it. */
function changed(change: (raw: RawOrder) => void): RawOrder {
  const raw = sampleOrder();
  change(raw);
  return raw;
}
const unknownFields = (result: Accepted) =>
  result.findings.filter((f) => f.code === 'unknown-field').map((f) => f.detail);

/** Paths of every `undefined`-valued key, at any depth. */
function undefinedKeys(value: unknown, path = ''): string[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) =>
    child === undefined ? [`${path}.${key}`] : undefinedKeys(child, `${path}.${key}`),
  );
}

// What it makes of the spec's orders (the sample with its optional fields, negative amounts, int64 beyond 2^53,
// epoch milliseconds, well-formed text with surrogate pairs) is pinned byte for byte in golden-messages.test.ts.
describe('a valid record', () => {
  it('leaves the input as it was', () => {
    const raw = sampleOrder({ cancelledAt: null, loyaltyPoints: 12 });
    const before = structuredClone(raw);

    accepted(parseOrder(raw));

    expect(raw).toEqual(before);
  });
});

describe('timestamps', () => {
  it('normalises a spread of epoch instants exactly as Date.prototype.toISOString prints them', () => {
    const edges = [
      0,
      951_782_400_000, // 2000-02-29
      4_107_542_400_000, // 2100-03-01
      253_402_300_799_999, // 9999-12-31T23:59:59.999Z
      -1,
      -62_167_219_200_000, // 0000-01-01T00:00:00.000Z
    ];
    let seed = 42;
    const random = Array.from({ length: 500 }, () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * 253_402_300_800_000);
    });

    const actual = [...edges, ...random].map(
      (ms) => accepted(parseOrder(sampleOrder({ placedAt: ms }))).order.placedAt,
    );

    expect(actual).toEqual([...edges, ...random].map((ms) => new Date(ms).toISOString()));
  });

  it.each([
    ['0050-06-15T12:00:00+01:00', '0050-06-15T11:00:00.000Z'],
    ['2024-05-01T08:30:00Z', '2024-05-01T08:30:00.000Z'],
    ['2024-05-01T14:00:00+05:30', '2024-05-01T08:30:00.000Z'],
    ['2024-05-01T00:30:00-08:00', '2024-05-01T08:30:00.000Z'],
    ['2024-05-01T08:30:00.123Z', '2024-05-01T08:30:00.123Z'],
    ['2024-05-01T10:30:00.5+02:00', '2024-05-01T08:30:00.500Z'],
    ['2024-05-01T08:30:00.123456789Z', '2024-05-01T08:30:00.123Z'],
    ['2024-03-01T01:00:00+02:00', '2024-02-29T23:00:00.000Z'],
    ['2024-12-31T20:00:00-05:00', '2025-01-01T01:00:00.000Z'],
  ])('normalises %s exactly as Date.prototype.toISOString prints it', (input, expected) => {
    const { order } = accepted(parseOrder(sampleOrder({ placedAt: input })));

    expect(order.placedAt).toBe(expected);
    expect(order.placedAt).toBe(new Date(input).toISOString());
  });

  it.each([
    ['2024-05-01T03:00:00-0530', '2024-05-01T08:30:00.000Z'],
    ['2024-05-01T10:30+02', '2024-05-01T08:30:00.000Z'],
    ['2024-05-01t08:30:00z', '2024-05-01T08:30:00.000Z'],
  ])('accepts the compact offset form %s', (input, expected) => {
    expect(accepted(parseOrder(sampleOrder({ deliveredAt: input }))).order.deliveredAt).toBe(expected);
  });

  it('rejects a string without offset as ambiguous local time, naming the field', () => {
    const result = rejected(parseOrder(sampleOrder({ acceptedAt: '2024-05-01T08:30:00' })));

    expect(result.reason).toBe(
      'invalid field acceptedAt: timestamp string has no UTC offset (ambiguous local time); expected Z or ±hh:mm',
    );
    expect(result).toMatchObject({ orderId: 1001, version: 3 });
  });

  it.each([
    ['an unparsable string', 'yesterday'],
    ['a date without time', '2024-05-01'],
    ['an impossible date', '2023-02-29T10:00:00Z'],
    ['an out-of-range offset', '2024-05-01T10:00:00+24:00'],
    ['a numeric string', '1714550400000'],
    ['a fractional epoch', 1714550400000.5],
    ['an epoch beyond the Date range', 9e15],
    ['a boolean', true],
  ])('rejects %s', (_label, value) => {
    expect(rejected(parseOrder(sampleOrder({ placedAt: value as number }))).reason).toMatch(
      /^invalid field placedAt: /,
    );
  });

  it.each([
    ['epoch ms of year 10000', 253_402_300_800_000],
    ['epoch ms of year -1', -62_198_755_200_000],
    ['the largest epoch ms Date allows', 8.64e15],
    ['an offset that rolls over into year 10000', '9999-12-31T23:00:00-05:00'],
    ['an offset that rolls back before year 0', '0000-01-01T01:00:00+02:00'],
  ])('rejects a timestamp the message contract cannot carry: %s', (_name, placedAt) => {
    expect(rejected(parseOrder(sampleOrder({ placedAt }))).issues.join(' ')).toMatch(
      /placedAt: timestamp is outside 0000-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z/,
    );
  });
});

// More records (an unknown status, null and an array as a record, unknown fields, a lone surrogate) are pinned
// with what the reader made of them in golden-messages.test.ts.
describe('invalid records, each rejected with the first problem in reason', () => {
  it.each<[string, () => unknown, string]>([
    [
      'a non-integer amount, naming the path',
      () =>
        changed((r) =>
          r.items.push(
            { ...firstItem(r), id: 'item-3' },
            { ...firstItem(r), id: 'item-4', price: money(12.5) },
          ),
        ),
      'invalid field items[3].price.amount: expected integer',
    ],
    [
      'an amount sent as a string',
      () => sampleOrder({ total: { amount: '3098' as unknown as number, currency: 'EUR' } }),
      'invalid field total.amount: expected integer, received string',
    ],
    [
      'a currency that is not a 3-letter uppercase code',
      () => sampleOrder({ serviceFee: money(99, 'eur') }),
      'invalid field serviceFee.currency: expected a 3-letter uppercase ISO 4217 currency code',
    ],
    [
      'a negative quantity',
      () =>
        changed((r) => {
          firstItem(r).quantityFulfilled = -1;
        }),
      'invalid field items[0].quantityFulfilled: expected at least 0',
    ],
    [
      'null on a required field',
      () => sampleOrder({ total: null as unknown as RawOrder['total'] }),
      'invalid field total: expected object, received null',
    ],
    [
      'a nested required field missing, by its full path',
      () =>
        changed((r) => {
          delete (firstItem(r) as Partial<RawItem>).price;
        }),
      'missing required field: items[0].price',
    ],
    [
      'a string as a record',
      () => JSON.stringify(sampleOrder()),
      'invalid record: expected an object, received string',
    ],
    ['a number as a record', () => 1001, 'invalid record: expected an object, received number'],
  ])('rejects %s', (_case, raw, reason) => {
    const result = rejected(parseOrder(raw()));

    expect(result.reason).toBe(reason);
    if (reason.startsWith('invalid record'))
      expect([result.orderId, result.version]).toEqual([undefined, undefined]);
  });

  it('rejects an id that reached it as a rounded number (float notation beyond 2^53), keeping the version', () => {
    // Integer literals beyond 2^53 arrive as bigints (parseJsonExact); only 1e16-style numbers do not.
    const result = rejected(parseOrder(sampleOrder({ id: 2 ** 53 + 2 })));

    expect(result.reason).toMatch(
      /^invalid field id: expected an integer literal: .*cannot be represented exactly/,
    );
    expect([result.orderId, result.version]).toEqual([undefined, 3]);
  });

  it('rejects a value beyond int64, keeping the order id', () => {
    const result = rejected(parseOrder({ ...sampleOrder(), version: 2n ** 63n }));

    expect(result.reason).toBe('invalid field version: expected an int64 (-2^63 to 2^63-1)');
    expect([result.orderId, result.version]).toEqual([1001, undefined]);
  });

  it('rejects a record missing a required field, naming it, with order id and version for the quarantine', () => {
    const raw: Partial<RawOrder> = sampleOrder();
    delete raw.total;

    const result = rejected(parseOrder(raw));

    expect(result).toMatchObject({ reason: 'missing required field: total', orderId: 1001, version: 3 });
    expect(result.issues).toEqual(['total: missing required field']);
  });

  it('lists every problem in issues and names the first in reason', () => {
    const raw: Partial<RawOrder> = sampleOrder({ latestVersion: 'yes' as unknown as boolean });
    delete raw.placedAt;

    const result = rejected(parseOrder(raw));

    expect(result.reason).toBe('invalid field latestVersion: expected boolean, received string');
    expect(result.issues).toEqual([
      'latestVersion: expected boolean, received string',
      'placedAt: missing required field',
    ]);
  });
});

describe('optional fields', () => {
  it('leaves out optional fields that were not sent', () => {
    const { order } = accepted(parseOrder(collectionOrder()));

    for (const key of [
      'acceptedAt',
      'cancelledAt',
      'dispatchedAt',
      'deliveredAt',
      'returnedAt',
      'deliveryFee',
      'deliveryProvider',
    ]) {
      expect(order).not.toHaveProperty(key);
    }
    expect(Object.keys(order.items[0] ?? {}).sort()).toEqual(
      ['id', 'name', 'price', 'quantityFulfilled', 'quantityOrdered', 'total', 'type'].sort(),
    );
  });

  it('treats an explicit null on an optional field as absent, at any depth, leaving no undefined-valued key', () => {
    const raw = sampleOrder({
      cancelledAt: null,
      returnedAt: null,
      deliveryFee: null,
      deliveryProvider: null,
    });
    const item = firstItem(raw);
    item.barcode = null;
    item.substitutionDetails = { substitutedBy: null, substitutedFor: null };
    item.optionCategories = [{ name: 'Extras', selectedOptions: [{ name: 'No onions', optionPrice: null }] }];

    const { order, findings } = accepted(parseOrder(raw));

    for (const key of ['cancelledAt', 'returnedAt', 'deliveryFee', 'deliveryProvider']) {
      expect(order).not.toHaveProperty(key);
    }
    expect(order.items[0]).not.toHaveProperty('barcode');
    expect(order.items[0]?.substitutionDetails).toEqual({});
    expect(order.items[0]?.optionCategories).toEqual([
      { name: 'Extras', selectedOptions: [{ name: 'No onions' }] },
    ]);
    expect(findings).toEqual([]);
    expect(undefinedKeys(order)).toEqual([]);
    expect(JSON.parse(JSON.stringify(order)) as Order).toStrictEqual(order);
  });
});

describe('policy for what the spec leaves open', () => {
  it('accepts unknown enum values verbatim, each with a finding', () => {
    const raw = sampleOrder({ type: 'dine_in', deliveryProvider: 'drone' });
    firstItem(raw).type = 'bundle';
    raw.customerPayments = [{ type: 'crypto', collectedBy: 'bank', payment: money(3098) }];

    const result = accepted(parseOrder(raw));

    expect(result.order).toMatchObject({ type: 'dine_in', deliveryProvider: 'drone' });
    expect(result.order.items[0]?.type).toBe('bundle');
    expect(result.order.customerPayments[0]).toMatchObject({ type: 'crypto', collectedBy: 'bank' });
    expect(result.findings).toEqual(
      [
        'type: "dine_in"',
        'deliveryProvider: "drone"',
        'items[0].type: "bundle"',
        'customerPayments[0].type: "crypto"',
        'customerPayments[0].collectedBy: "bank"',
      ].map((detail) => ({ code: 'unknown-enum-value', detail })),
    );
  });

  it('drops unknown fields at any depth, with a finding naming each path', () => {
    const raw = sampleOrder({ loyaltyPoints: 12 });
    const item = firstItem(raw);
    item.colour = 'red';
    item.price = { ...item.price, exponent: 2 };
    item.optionCategories = [{ name: 'Size', selectedOptions: [{ name: '30 cm', sku: 'S30' }], rank: 1 }];
    item.substitutionDetails = { substitutedBy: [], reason: 'out of stock' };
    (raw.customerPayments[0] as { reference?: string }).reference = 'pay-123';

    const result = accepted(parseOrder(raw));

    expect(result.order).not.toHaveProperty('loyaltyPoints');
    expect(result.order.items[0]).not.toHaveProperty('colour');
    expect(result.order.items[0]?.price).toEqual({ amount: 1100, currency: 'EUR' });
    expect(result.order.items[0]?.optionCategories).toEqual([
      { name: 'Size', selectedOptions: [{ name: '30 cm' }] },
    ]);
    expect(result.order.items[0]?.substitutionDetails).toEqual({ substitutedBy: [] });
    expect(result.order.customerPayments[0]).not.toHaveProperty('reference');
    expect(unknownFields(result)).toEqual([
      'loyaltyPoints',
      'items[0].colour',
      'items[0].optionCategories[0].rank',
      'items[0].optionCategories[0].selectedOptions[0].sku',
      'items[0].price.exponent',
      'items[0].substitutionDetails.reason',
      'customerPayments[0].reference',
    ]);
  });

  it.each(['constructor', 'toString', '__proto__'])(
    'names an unknown field called %s, at the top and nested, without touching a prototype',
    (name) => {
      // From JSON text, as the poller gets it (JSON.parse makes `__proto__` an own property).
      const raw = sampleOrder();
      const text = JSON.stringify(raw)
        .replace(/^\{/, `{"${name}":{"polluted":true},`)
        .replace('"price":{', `"price":{"${name}":1,`);

      const result = accepted(parseOrder(parseJsonExact(text)));

      expect(unknownFields(result)).toEqual([name, `items[0].price.${name}`]);
      expect(Object.hasOwn(result.order, name)).toBe(false);
      expect(Object.getPrototypeOf(result.order)).toBe(Object.prototype);
      expect(Object.getPrototypeOf(result.order.items[0]?.price)).toBe(Object.prototype);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(result.order).toEqual(accepted(parseOrder(raw)).order);
    },
  );

  it('reports consistency findings on an accepted record instead of rejecting it', () => {
    const result = accepted(parseOrder(sampleOrder({ total: money(3100) })));

    expect(result.findings.map((f) => f.code)).toEqual(['payments-sum-mismatch']);
  });
});

describe('strings that are not valid Unicode (issue 11 point 3)', () => {
  it('keeps the order, replaces each lone surrogate with U+FFFD and names every field it changed', () => {
    const raw = sampleOrder({ vendorId: 'v\uD800-1' });
    (raw.items[0] as { name: string }).name = 'pizza \uDC00';

    const result = accepted(parseOrder(raw));

    expect(result.order.vendorId).toBe('v\uFFFD-1');
    expect(result.order.items[0]?.name).toBe('pizza \uFFFD');
    expect(result.findings.filter((finding) => finding.code === 'invalid-unicode-replaced')).toEqual([
      expect.objectContaining({ detail: expect.stringContaining('vendorId') }),
      expect.objectContaining({ detail: expect.stringContaining('items[0].name') }),
    ]);
  });
});
