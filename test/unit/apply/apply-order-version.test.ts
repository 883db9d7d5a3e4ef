import { describe, expect, it } from 'vitest';
import { applyOrderVersion } from '../../../functions/core/apply/apply-order-version.js';
import { saleOf, salesChange } from '../../../functions/core/apply/sale.js';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import type { Order } from '../../../functions/core/model/types.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { MemoryOrderStore } from '../../support/fakes.js';

function body(order: Order): string {
  return buildOrderVersionMessage(order, {
    feedId: 'f',
    pageId: null,
    fetchedAt: '2024-05-01T08:00:00.000Z',
    findings: [],
    correlationId: 'poll:run-1:1',
    origin: 'poll',
  }).body;
}

function version(version: number, status: string, amount: number, vendorId = 'vendor-1'): Order {
  const raw = sampleOrder({ id: 42, version, status, vendorId });
  raw.total = { amount, currency: 'EUR' };
  raw.customerPayments = [{ type: 'online', collectedBy: 'platform', payment: { amount, currency: 'EUR' } }];
  return toOrder(raw);
}

/** Sums the store's sale entries the way the ledger index does. */
function ledger(store: MemoryOrderStore) {
  const totals: Record<string, { count: number; amount: number }> = {};
  for (const { sale } of store.items.values()) {
    if (!sale) continue;
    const total = totals[sale.saleKey] ?? { count: 0, amount: 0 };
    total.count += 1;
    total.amount += Number(sale.amount);
    totals[sale.saleKey] = total;
  }
  return totals;
}

describe('applyOrderVersion', () => {
  it('applies a newer version and reports a sale counted when it is accepted', async () => {
    const store = new MemoryOrderStore();
    await applyOrderVersion(store, body(version(1, 'placed', 1000)));

    const result = await applyOrderVersion(store, body(version(2, 'accepted', 1000)));

    expect(result).toEqual({ outcome: 'applied', orderId: 42, version: 2, salesChange: 'counted' });
    expect(ledger(store)).toEqual({ 'vendor-1#EUR': { count: 1, amount: 1000 } });
  });

  it('counts an equal or lower version as stale and leaves the stored order alone', async () => {
    const store = new MemoryOrderStore();
    await applyOrderVersion(store, body(version(3, 'accepted', 900)));

    const same = await applyOrderVersion(store, body(version(3, 'accepted', 900)));
    const older = await applyOrderVersion(store, body(version(2, 'placed', 1000)));

    expect(same).toMatchObject({ outcome: 'stale', storedVersion: 3 });
    expect(older).toMatchObject({ outcome: 'stale', storedVersion: 3 });
    expect(store.items.get(42)?.order.total.amount).toBe(900);
  });

  it('reverses the sale when the order is cancelled, and ends with the same ledger in any delivery order', async () => {
    const versions = [
      version(1, 'placed', 1000),
      version(2, 'accepted', 1000),
      version(3, 'cancelled', 1000),
    ];
    const inOrder = new MemoryOrderStore();
    for (const v of versions) await applyOrderVersion(inOrder, body(v));
    const shuffled = new MemoryOrderStore();
    for (const v of [versions[2], versions[0], versions[1], versions[2]]) {
      if (v) await applyOrderVersion(shuffled, body(v));
    }

    expect(ledger(inOrder)).toEqual({});
    expect(ledger(shuffled)).toEqual({});
    expect(shuffled.items.get(42)?.order.status).toBe('cancelled');
  });

  it('moves the sale amount when an accepted order changes its total', async () => {
    const store = new MemoryOrderStore();
    await applyOrderVersion(store, body(version(2, 'accepted', 1000)));
    const result = await applyOrderVersion(store, body(version(3, 'accepted', 800)));
    expect(result).toMatchObject({ outcome: 'applied', salesChange: 'amount-changed' });
    expect(ledger(store)).toEqual({ 'vendor-1#EUR': { count: 1, amount: 800 } });
  });

  it('rejects a message that breaks the contract with a reason', async () => {
    const store = new MemoryOrderStore();
    await expect(applyOrderVersion(store, 'not json')).rejects.toThrow(/body is not JSON/);
    await expect(applyOrderVersion(store, JSON.stringify({ schemaVersion: 2 }))).rejects.toThrow(
      /unsupported schemaVersion 2/,
    );
    const unknownStatus = JSON.parse(body(version(1, 'placed', 1)));
    unknownStatus.order.status = 'refunded';
    await expect(applyOrderVersion(store, JSON.stringify(unknownStatus))).rejects.toThrow(/refunded/);
    expect(store.items.size).toBe(0);
  });
});

describe('sale rule', () => {
  it('counts only accepted orders as sales', () => {
    for (const status of ['placed', 'rejected', 'cancelled'] as const) {
      expect(saleOf({ status, vendorId: 'v', total: { amount: 1, currency: 'EUR' } })).toBeUndefined();
    }
    expect(saleOf({ status: 'accepted', vendorId: 'v', total: { amount: 5, currency: 'GBP' } })).toEqual({
      saleKey: 'v#GBP',
      vendorId: 'v',
      currency: 'GBP',
      amount: 5,
    });
  });

  it('classifies every ledger change', () => {
    const a = { saleKey: 'v#EUR', vendorId: 'v', currency: 'EUR', amount: 5 };
    expect(salesChange(undefined, undefined)).toBe('none');
    expect(salesChange(undefined, a)).toBe('counted');
    expect(salesChange(a, undefined)).toBe('reversed');
    expect(salesChange(a, { ...a, amount: 6 })).toBe('amount-changed');
    expect(salesChange(a, { ...a, saleKey: 'w#EUR', vendorId: 'w' })).toBe('moved');
    expect(salesChange(a, { ...a })).toBe('none');
  });

  it('stores the correlation id of the applied version with it, and stores nothing without one', async () => {
    const annotations: unknown[] = [];
    const store = new MemoryOrderStore();
    const recording = {
      putIfNewer: (order: Order, sale: Parameters<MemoryOrderStore['putIfNewer']>[1], notes?: unknown) => {
        annotations.push(notes);
        return store.putIfNewer(order, sale);
      },
    };

    await applyOrderVersion(recording, body(version(1, 'placed', 100)));
    const older = JSON.parse(body(version(2, 'placed', 100)));
    delete older.source.correlationId; // a message sent before correlation ids existed
    await applyOrderVersion(recording, JSON.stringify(older));

    expect(annotations).toEqual([{ findingCodes: [], correlationId: 'poll:run-1:1' }, { findingCodes: [] }]);
  });
});
