// The consumer's use case over the orders table in memory (the same PutItem inputs go to moto in
// test/integration/consumer.test.ts): version guard, sales ledger, what the item carries.
import { describe, expect, it } from 'vitest';
import { saleOfStoredItem } from '../../../functions/core/adapters/stored-order-item.js';
import { applyOrderVersion } from '../../../functions/core/apply/apply-order-version.js';
import { saleOf } from '../../../functions/core/apply/sale.js';
import { parseOrderVersionMessage } from '../../../functions/core/contract/consumer-kit.js';
import {
  buildOrderVersionMessage,
  type OrderVersionMessage,
} from '../../../functions/core/contract/order-version-message.js';
import type { Finding, Order } from '../../../functions/core/model/types.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { MemoryOrdersTable } from '../../support/fakes.js';
import { messageSource } from '../../support/message-source.js';

function message(order: Order, findings: Finding[] = []): OrderVersionMessage {
  return parseOrderVersionMessage(buildOrderVersionMessage(order, messageSource({ findings })).body);
}

function version(version: number, status: string, amount: number, vendorId = 'vendor-1'): Order {
  const raw = sampleOrder({ id: 42, version, status, vendorId });
  raw.total = { amount, currency: 'EUR' };
  raw.customerPayments = [{ type: 'online', collectedBy: 'platform', payment: { amount, currency: 'EUR' } }];
  return toOrder(raw);
}

/** Sums the table's sale entries the way the ledger index does. */
function ledger(table: MemoryOrdersTable) {
  const totals: Record<string, { count: number; amount: number }> = {};
  for (const item of table.items()) {
    const sale = saleOfStoredItem(item);
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
    const table = new MemoryOrdersTable();
    await applyOrderVersion(table, message(version(1, 'placed', 1000)));

    const result = await applyOrderVersion(table, message(version(2, 'accepted', 1000)));

    expect(result).toEqual({
      outcome: 'applied',
      orderId: 42,
      version: 2,
      salesChange: 'counted',
      replacedVersion: 1,
    });
    expect(ledger(table)).toEqual({ 'vendor-1#EUR': { count: 1, amount: 1000 } });
  });

  it('counts an equal or lower version as stale and leaves the stored order alone', async () => {
    const table = new MemoryOrdersTable();
    await applyOrderVersion(table, message(version(3, 'accepted', 900)));

    const same = await applyOrderVersion(table, message(version(3, 'accepted', 900)));
    const older = await applyOrderVersion(table, message(version(2, 'placed', 1000)));

    expect(same).toMatchObject({ outcome: 'stale', storedVersion: 3 });
    expect(older).toMatchObject({ outcome: 'stale', storedVersion: 3 });
    expect(table.items()).toMatchObject([{ orderId: 42, version: 3, total: { amount: 900 } }]);
  });

  it('reverses the sale when the order is cancelled, and ends with the same ledger in any delivery order', async () => {
    const versions = [
      version(1, 'placed', 1000),
      version(2, 'accepted', 1000),
      version(3, 'cancelled', 1000),
    ];
    const inOrder = new MemoryOrdersTable();
    const changes = [];
    for (const v of versions) changes.push(await applyOrderVersion(inOrder, message(v)));
    const shuffled = new MemoryOrdersTable();
    for (const v of [versions[2], versions[0], versions[1], versions[2]]) {
      if (v) await applyOrderVersion(shuffled, message(v));
    }

    expect(changes.map((result) => result.outcome === 'applied' && result.salesChange)).toEqual([
      'none',
      'counted',
      'reversed',
    ]);
    expect(ledger(inOrder)).toEqual({});
    expect(ledger(shuffled)).toEqual({});
    expect(shuffled.items()).toMatchObject([{ status: 'cancelled' }]);
  });

  it('moves the sale amount when an accepted order changes its total', async () => {
    const table = new MemoryOrdersTable();
    await applyOrderVersion(table, message(version(2, 'accepted', 1000)));
    const result = await applyOrderVersion(table, message(version(3, 'accepted', 800)));
    expect(result).toMatchObject({ outcome: 'applied', salesChange: 'amount-changed' });
    expect(ledger(table)).toEqual({ 'vendor-1#EUR': { count: 1, amount: 800 } });
  });

  it('moves the sale to another vendor key when the vendor changes', async () => {
    const table = new MemoryOrdersTable();
    await applyOrderVersion(table, message(version(2, 'accepted', 1000)));
    const result = await applyOrderVersion(table, message(version(3, 'accepted', 1000, 'vendor-2')));
    expect(result).toMatchObject({ outcome: 'applied', salesChange: 'moved' });
    expect(ledger(table)).toEqual({ 'vendor-2#EUR': { count: 1, amount: 1000 } });
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

  it('stores the correlation id and the distinct finding codes of the applied version, and nothing without them', async () => {
    const table = new MemoryOrdersTable();
    const drift = { code: 'unknown-field', detail: 'loyaltyTier' };
    await applyOrderVersion(table, message(version(1, 'placed', 100), [drift, drift]));
    expect(table.items()).toMatchObject([
      { correlationId: 'poll:run-1:1', findingCodes: new Set(['unknown-field']) },
    ]);

    const older = message(version(2, 'placed', 100));
    delete older.source.correlationId; // a message sent before correlation ids existed
    await applyOrderVersion(table, older);

    const [item] = table.items();
    expect(item).toMatchObject({ version: 2 });
    expect(item).not.toHaveProperty('correlationId');
    expect(item).not.toHaveProperty('findingCodes');
  });
});
