// Planning a cursor change: what reset-cursor, replay and clear-auth-backoff change, the revision bump
// that fences out a running poller, and the refusal under a live lease unless forced.
import { describe, expect, it } from 'vitest';
import { type CursorItem, cursorItemOf, planCursorChange } from '../../../tools/ops/cursor.js';

const NOW = Date.parse('2026-05-01T12:00:00.000Z');

function item(overrides: Partial<CursorItem> = {}): CursorItem {
  return {
    ...cursorItemOf('orders', { feedId: 'orders', revision: 7, pageId: 'cursor-abcdefghijklmnopqrstuvwxyz' }),
    highWaterMark: '2026-05-01T11:00:00.000Z',
    ...overrides,
  };
}

describe('planCursorChange', () => {
  const leased = item({ leaseOwner: 'request-1', leaseExpiresAt: NOW + 30_000 });

  it.each([
    [
      'reset-cursor removes the cursor and the high-water mark, expecting the revision it read',
      item(),
      { kind: 'reset-cursor' },
      false,
      {
        set: {},
        remove: ['pageId', 'highWaterMark'],
        expectRevision: 7,
        revisionAfter: 8,
        requireNoLease: true,
        itemExists: true,
      },
    ],
    [
      'replay sets the cursor to the page',
      item(),
      { kind: 'replay', fromPage: 'page-9' },
      false,
      { set: { pageId: 'page-9' }, remove: [], revisionAfter: 8 },
    ],
    [
      'replay of a feed without an item creates it at revision 1',
      cursorItemOf('orders', undefined),
      { kind: 'replay', fromPage: 'page-9' },
      false,
      { itemExists: false, expectRevision: undefined, revisionAfter: 1 },
    ],
    [
      'clear-auth-backoff removes the failure count and the retry time',
      item({ authFailures: 2, authRetryNotBefore: NOW + 60_000 }),
      { kind: 'clear-auth-backoff' },
      false,
      { remove: ['authFailures', 'authRetryNotBefore'] },
    ],
    [
      'clear-auth-backoff also removes the refused token version when one is recorded',
      item({ authFailures: 1, authRetryNotBefore: NOW + 60_000, authFailedTokenVersion: 4 }),
      { kind: 'clear-auth-backoff' },
      false,
      { remove: ['authFailures', 'authRetryNotBefore', 'authFailedTokenVersion'] },
    ],
    [
      'reset-cursor under a live lease with --force goes ahead, without the lease condition',
      leased,
      { kind: 'reset-cursor' },
      true,
      { requireNoLease: false, revisionAfter: 8 },
    ],
    [
      'reset-cursor goes ahead when the lease has expired',
      item({ leaseOwner: 'request-1', leaseExpiresAt: NOW - 1 }),
      { kind: 'reset-cursor' },
      false,
      {},
    ],
  ] as const)('%s', (_name, current, action, force, expected) => {
    expect(planCursorChange(current, action, { nowMs: NOW, force })).toMatchObject({
      kind: 'update',
      ...expected,
    });
  });

  it.each([
    [
      'reset-cursor of a feed at the start',
      item({ pageId: undefined, highWaterMark: undefined }),
      { kind: 'reset-cursor' },
    ],
    [
      'replay to the cursor it has',
      item(),
      { kind: 'replay', fromPage: 'cursor-abcdefghijklmnopqrstuvwxyz' },
    ],
    ['clear-auth-backoff without a backoff', item(), { kind: 'clear-auth-backoff' }],
    ['reset-cursor of a feed without an item', cursorItemOf('orders', undefined), { kind: 'reset-cursor' }],
  ] as const)('changes nothing for %s', (_name, current, action) => {
    expect(planCursorChange(current, action, { nowMs: NOW, force: false }).kind).toBe('no-op');
  });

  it('refuses while a live lease is held, naming the holder and --force', () => {
    const plan = planCursorChange(leased, { kind: 'reset-cursor' }, { nowMs: NOW, force: false });

    expect(plan.kind).toBe('refused');
    expect(plan.kind === 'refused' && plan.why).toMatch(/leased by request-1 until .*--force/);
  });

  it('says what changes, with the cursor shortened', () => {
    const plan = planCursorChange(
      item(),
      { kind: 'replay', fromPage: 'page-9' },
      { nowMs: NOW, force: false },
    );

    expect(plan.kind === 'update' && plan.changes).toEqual([
      'cursor cursor-a…stuvwxyz → page-9: the next run replays from that page',
      'revision 7 → 8: a running invocation cannot commit over it',
    ]);
  });
});
