import { describe, expect, it } from 'vitest';
import { planBatch } from '../../../functions/core/apply/plan-batch.js';
import { buildOrderVersionMessage } from '../../../functions/core/contract/order-version-message.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';

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
const actions = (plan: ReturnType<typeof planBatch>) =>
  Object.fromEntries([...plan].map(([id, p]) => [id, p.action]));

describe('planBatch', () => {
  it('writes only the highest version of an order within a batch and marks the others superseded', () => {
    const plan = planBatch([
      { id: 'a', body: body(1, 2) },
      { id: 'b', body: body(1, 4) },
      { id: 'c', body: body(1, 3) },
      { id: 'd', body: body(2, 1) },
    ]);
    expect(actions(plan)).toEqual({ a: 'superseded', b: 'apply', c: 'superseded', d: 'apply' });
    expect(plan.get('a')).toMatchObject({ byVersion: 4 });
  });

  it('writes the first of two deliveries of the same version', () => {
    expect(
      actions(
        planBatch([
          { id: 'a', body: body(1, 2) },
          { id: 'b', body: body(1, 2) },
        ]),
      ),
    ).toEqual({
      a: 'apply',
      b: 'superseded',
    });
  });

  it('never lets an invalid message supersede a valid lower version', () => {
    const invalid = JSON.parse(body(1, 9));
    invalid.order.status = 'refunded';
    const plan = planBatch([
      { id: 'valid', body: body(1, 2) },
      { id: 'invalid', body: JSON.stringify(invalid) },
    ]);
    expect(actions(plan)).toEqual({ valid: 'apply', invalid: 'reject' });
    const rejected = plan.get('invalid');
    expect(rejected?.action === 'reject' && rejected.error.message).toMatch(/refunded/);
  });
});
