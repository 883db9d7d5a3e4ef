// `ops history`: the change summary as a pure function over two versions of an order, on the real versions
// of the simulator's scenarios (parsed as the poller parses them), and the history built from history
// items read back (a fake reader: items as the consumer stores them), sorted and printed exactly.
import { describe, expect, it } from 'vitest';
import { stringifyJsonExact } from '../../../functions/core/model/int64.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import type { Order } from '../../../functions/core/model/types.js';
import { buildHistory, historyEntryOf, orderChanges, renderHistory } from '../../../tools/ops/history.js';
import { toWire } from '../../../tools/simulator/model.js';
import { SCENARIOS } from '../../../tools/simulator/scenarios/index.js';
import type { ScenarioId } from '../../../tools/simulator/types.js';
import { orderOfStoredItem } from '../../../tools/store/stored-order.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { historyItem } from '../../support/ops.js';

const ANCHOR = Date.parse('2026-03-01T12:00:00.000Z');

/** Every version of `orderId` the scenario serves, parsed, in ascending version. */
function versionsOf(scenario: ScenarioId, orderId: number): Order[] {
  return SCENARIOS[scenario].polls
    .flat()
    .filter((entry) => entry.order.id === orderId)
    .map((entry) => {
      const parsed = parseOrder(toWire(entry.order, entry.latestVersion, { kind: 'epoch' }, ANCHOR));
      if (!parsed.ok) throw new Error(parsed.reason);
      return parsed.order;
    })
    .sort((a, b) => Number(a.version) - Number(b.version));
}

const texts = (before: Order | undefined, after: Order | undefined) => {
  if (before === undefined || after === undefined) throw new Error('scenario has no such version');
  return orderChanges(before, after).map((change) => `${change.kind}: ${change.text}`);
};

describe('orderChanges on the spec scenarios', () => {
  it('test-versioning: status, timestamps set, a fulfilled quantity, adjustments with the items they adjust, totals', () => {
    const [v1, v2, v3, v4] = versionsOf('test-versioning', 3_009_000_001);
    expect(texts(v1, v2)).toEqual([
      'status: status placed -> accepted',
      'timestamp: acceptedAt set 2026-03-01T10:35:00.000Z',
      'fulfilled: 3009000001-3 "Sparkling water 500ml" fulfilled 3 -> 2',
      'total: total 3098 EUR -> 2978 EUR',
    ]);
    expect(texts(v2, v3)).toEqual([
      'timestamp: dispatchedAt set 2026-03-01T11:00:00.000Z',
      'line-added: + 3009000001-4 "Price match" adjustment x0 (fulfilled 1) total -150 EUR',
      'adjustment: adjustment 3009000001-4 "Price match" -150 EUR on 3009000001-1 "Pad thai"',
      'total: total 2978 EUR -> 2828 EUR',
    ]);
    expect(texts(v3, v4)).toEqual([
      'timestamp: deliveredAt set 2026-03-01T11:25:00.000Z',
      'line-added: + 3009000001-5 "Damaged packaging refund" adjustment x0 (fulfilled 1) total -200 EUR',
      'adjustment: adjustment 3009000001-5 "Damaged packaging refund" -200 EUR on 3009000001-2 "Vegetable spring rolls"',
      'total: total 2828 EUR -> 2628 EUR',
    ]);
  });

  it('test-items-and-options: an item out of stock lowers the total', () => {
    const [v1, v2] = versionsOf('test-items-and-options', 3_011_000_001);
    expect(texts(v1, v2)).toEqual([
      'status: status placed -> accepted',
      'timestamp: acceptedAt set 2026-03-01T11:23:00.000Z',
      'fulfilled: 3011000001-5 "Salted caramel brownie" fulfilled 2 -> 1',
      'total: total 3468 EUR -> 3118 EUR',
    ]);
  });

  it('test-substitutions: one-to-one and many-to-one, original -> substitute, each pair once', () => {
    const [v1, v2] = versionsOf('test-substitutions', 3_012_000_001);
    expect(texts(v1, v2)).toEqual([
      'status: status placed -> accepted',
      'timestamp: acceptedAt set 2026-03-01T10:55:00.000Z',
      'fulfilled: 3012000001-1 "Whole milk 2L" fulfilled 2 -> 0',
      'fulfilled: 3012000001-3 "Royal Gala apples x6" fulfilled 1 -> 0',
      'fulfilled: 3012000001-4 "Pink Lady apples x4" fulfilled 1 -> 0',
      'line-added: + 3012000001-6 "Semi-skimmed milk 2L" product x0 (fulfilled 2) total 350 EUR',
      'line-added: + 3012000001-7 "Mixed apples x10" product x0 (fulfilled 1) total 450 EUR',
      'substitution: substitution 3012000001-1 "Whole milk 2L" -> 3012000001-6 "Semi-skimmed milk 2L"',
      'substitution: substitution 3012000001-3 "Royal Gala apples x6" -> 3012000001-7 "Mixed apples x10"',
      'substitution: substitution 3012000001-4 "Pink Lady apples x4" -> 3012000001-7 "Mixed apples x10"',
      'total: total 1788 EUR -> 1703 EUR',
    ]);
  });

  it('test-price-adjustments: a dearer substitute price-matched back (total unchanged)', () => {
    const [v1, v2] = versionsOf('test-price-adjustments', 3_013_000_001);
    // The total is unchanged: no total line.
    expect(texts(v1, v2)).toEqual([
      'status: status placed -> accepted',
      'timestamp: acceptedAt set 2026-03-01T11:14:00.000Z',
      'fulfilled: 3013000001-1 "Cheddar 200g" fulfilled 1 -> 0',
      'line-added: + 3013000001-4 "Cheddar 400g" product x0 (fulfilled 1) total 590 EUR',
      'line-added: + 3013000001-5 "Price match: substitute at original price" adjustment x0 (fulfilled 1) total -240 EUR',
      'substitution: substitution 3013000001-1 "Cheddar 200g" -> 3013000001-4 "Cheddar 400g"',
      'adjustment: adjustment 3013000001-5 "Price match: substitute at original price" -240 EUR on 3013000001-4 "Cheddar 400g"',
    ]);
  });

  it('test-order-lifecycle: accepted -> cancelled; a rejection', () => {
    // placed -> accepted reads as in every scenario above.
    const [, accepted, cancelled] = versionsOf('test-order-lifecycle', 3_008_000_001);
    expect(texts(accepted, cancelled)).toEqual([
      'status: status accepted -> cancelled',
      'timestamp: cancelledAt set 2026-03-01T11:50:00.000Z',
    ]);
    const [offered, rejected] = versionsOf('test-order-lifecycle', 3_008_000_002);
    expect(texts(offered, rejected)).toEqual([
      'status: status placed -> rejected',
      'timestamp: cancelledAt set 2026-03-01T11:40:00.000Z',
    ]);
  });

  it('a version that changes nothing the summary covers has no changes; a removed line is told', () => {
    const [v1] = versionsOf('test-versioning', 3_009_000_001);
    if (v1 === undefined) throw new Error('scenario data');
    expect(orderChanges(v1, { ...v1, version: 2 })).toEqual([]);
    const removed = { ...v1, items: v1.items.slice(0, 2) };
    expect(texts(v1, removed)).toEqual(['line-removed: - 3009000001-3 "Sparkling water 500ml" product']);
  });
});

describe('history items', () => {
  it('read back to the order alone: the history attributes are not order fields', () => {
    const order = toOrder(sampleOrder());
    const raw = historyItem(order, { fetchedAt: '2026-03-01T12:00:00.000Z', arrivedAfterVersion: 9 });
    expect(orderOfStoredItem(raw).order).toEqual(order);
    expect(historyEntryOf(raw)).toMatchObject({
      order,
      fetchedAt: '2026-03-01T12:00:00.000Z',
      storedAt: '2026-03-01T12:00:01.000Z',
      feedId: 'orders',
      correlationId: 'poll:run-1:1',
      arrivedAfterVersion: 9,
    });
  });

  it('builds the history in exact version order beyond 2^53, marking out-of-order arrivals and gaps', () => {
    const id = 2n ** 63n - 1n;
    const { acceptedAt: _accepted, ...sample } = toOrder(sampleOrder());
    const base: Order = { ...sample, id, status: 'placed' };
    const low = 2n ** 53n; // 9007199254740992: a JS number would not tell it from 2^53 + 1
    const orders: Order[] = [
      { ...base, version: low + 1n, status: 'accepted', acceptedAt: '2026-03-01T11:01:00.000Z' },
      { ...base, version: low + 4n, status: 'cancelled', cancelledAt: '2026-03-01T11:30:00.000Z' },
      { ...base, version: low },
    ];
    // The items in the order they arrived, not sorted (reading them from the table: ops-history.test.ts).
    const items = [
      historyItem(orders[0] as Order, { fetchedAt: '2026-03-01T11:02:00.000Z' }),
      historyItem(orders[1] as Order, { fetchedAt: '2026-03-01T11:31:00.000Z' }),
      historyItem(orders[2] as Order, {
        fetchedAt: '2026-03-01T11:40:00.000Z',
        arrivedAfterVersion: low + 4n,
      }),
    ];

    const history = buildHistory(String(id), items.map(historyEntryOf));

    expect(history.versions.map((entry) => entry.version)).toEqual([low, low + 1n, low + 4n]);
    expect(history.versions.map((entry) => entry.outOfOrder)).toEqual([true, false, false]);
    expect(history.versions[2]?.gapBefore).toEqual({ from: low + 2n, to: low + 3n });
    expect(history.versions[1]?.changes.map((change) => change.text)).toEqual([
      'status placed -> accepted',
      'acceptedAt set 2026-03-01T11:01:00.000Z',
    ]);
    const text = renderHistory(history);
    expect(text).toContain(`order 9223372036854775807: 3 stored version(s)`);
    expect(text).toContain('v9007199254740992 (arrived out of order):');
    expect(text).toMatch(
      /^9007199254740992 +2026-03-01T11:40:00.000Z {2}placed .*out of order \(after v9007199254740996\)$/m,
    );
    expect(text).toContain('gap: no version 9007199254740994 to 9007199254740995 stored');
    expect(text).toContain('status accepted -> cancelled');
    expect(text.indexOf('9007199254740992  ')).toBeLessThan(text.indexOf('9007199254740993  '));
    const json = stringifyJsonExact(history);
    expect(json).toContain('"orderId":"9223372036854775807"');
    expect(json).toContain('"version":9007199254740993');
    expect(json).toContain('"arrivedAfterVersion":9007199254740996');
  });
});
