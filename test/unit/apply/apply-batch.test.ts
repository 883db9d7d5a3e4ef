// A superseded lower version is acknowledged only once the version superseding it is applied (issue 11
// point 10): if that write fails, both fail, so neither is missing from the table while the higher one waits.

import { describe, expect, it } from 'vitest';
import { batchApplier, SupersedingVersionFailedError } from '../../../functions/core/apply/apply-batch.js';
import { planBatch } from '../../../functions/core/apply/plan-batch.js';
import type { OrderStore } from '../../../functions/core/apply/ports.js';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import type { Int64 } from '../../../functions/core/model/int64.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { MemoryOrderStore } from '../../support/fakes.js';

const source = {
  feedId: 'f',
  pageId: null,
  fetchedAt: '2024-05-01T08:00:00.000Z',
  findings: [],
  correlationId: 'poll:run-1:1',
  origin: 'poll' as const,
};
const body = (id: number, version: number) =>
  buildOrderVersionMessage(toOrder(sampleOrder({ id, version })), source).body;

/** A store whose writes of one order fail (a throttled or unavailable table, for that key). */
function failingFor(orderId: number, store = new MemoryOrderStore()): OrderStore & { writes: Int64[] } {
  const writes: Int64[] = [];
  return {
    writes,
    async putIfNewer(order, sale) {
      writes.push(order.version);
      if (order.id === orderId) throw new Error('ProvisionedThroughputExceededException');
      return store.putIfNewer(order, sale);
    },
  };
}

describe('batchApplier', () => {
  const records = [
    { id: 'low', body: body(1, 2) },
    { id: 'high', body: body(1, 4) },
    { id: 'other', body: body(2, 1) },
  ];

  it('acknowledges a superseded version as stale once its successor is applied, writing only the successor', async () => {
    const store = new MemoryOrderStore();
    const apply = batchApplier(store, planBatch(records));

    const results = await Promise.all(records.map((record) => apply(record.id)));

    expect(results.map((result) => result.outcome)).toEqual(['stale', 'applied', 'applied']);
    expect(store.items.get(1)?.order.version).toBe(4);
  });

  it('fails a superseded version together with its successor when the successor cannot be written', async () => {
    const store = failingFor(1);
    const apply = batchApplier(store, planBatch(records));

    const results = await Promise.allSettled(records.map((record) => apply(record.id)));

    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
    const low = results[0];
    expect(low?.status === 'rejected' && low.reason).toBeInstanceOf(SupersedingVersionFailedError);
    // The successor was written once, whichever record asked first.
    expect(store.writes.filter((version) => version === 4)).toHaveLength(1);
  });

  it('waits for the successor even when the superseded record is processed first, alone', async () => {
    const store = new MemoryOrderStore();
    const apply = batchApplier(store, planBatch(records));

    const low = await apply('low');
    const high = await apply('high');

    expect(low).toMatchObject({ outcome: 'stale', storedVersion: 4 });
    expect(high.outcome).toBe('applied');
    expect(store.items.get(1)?.order.version).toBe(4);
  });
});
