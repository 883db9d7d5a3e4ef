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
  it('reset-cursor removes the cursor and the high-water mark, expecting the revision it read', () => {
    const plan = planCursorChange(item(), { kind: 'reset-cursor' }, { nowMs: NOW, force: false });

    expect(plan).toMatchObject({
      kind: 'update',
      set: {},
      remove: ['pageId', 'highWaterMark'],
      expectRevision: 7,
      revisionAfter: 8,
      requireNoLease: true,
      itemExists: true,
    });
  });

  it('replay sets the cursor to the page', () => {
    const plan = planCursorChange(
      item(),
      { kind: 'replay', fromPage: 'page-9' },
      { nowMs: NOW, force: false },
    );

    expect(plan).toMatchObject({ kind: 'update', set: { pageId: 'page-9' }, remove: [], revisionAfter: 8 });
  });

  it('replay of a feed without an item creates it at revision 1', () => {
    const plan = planCursorChange(
      cursorItemOf('orders', undefined),
      { kind: 'replay', fromPage: 'page-9' },
      { nowMs: NOW, force: false },
    );

    expect(plan).toMatchObject({
      kind: 'update',
      itemExists: false,
      expectRevision: undefined,
      revisionAfter: 1,
    });
  });

  it('clear-auth-backoff removes the failure count and the retry time', () => {
    const plan = planCursorChange(
      item({ authFailures: 2, authRetryNotBefore: NOW + 60_000 }),
      { kind: 'clear-auth-backoff' },
      { nowMs: NOW, force: false },
    );

    expect(plan).toMatchObject({ kind: 'update', remove: ['authFailures', 'authRetryNotBefore'] });
  });

  it('clear-auth-backoff also removes the refused token version when one is recorded', () => {
    const plan = planCursorChange(
      item({ authFailures: 1, authRetryNotBefore: NOW + 60_000, authFailedTokenVersion: 4 }),
      { kind: 'clear-auth-backoff' },
      { nowMs: NOW, force: false },
    );

    expect(plan).toMatchObject({
      kind: 'update',
      remove: ['authFailures', 'authRetryNotBefore', 'authFailedTokenVersion'],
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
    const leased = item({ leaseOwner: 'request-1', leaseExpiresAt: NOW + 30_000 });

    const plan = planCursorChange(leased, { kind: 'reset-cursor' }, { nowMs: NOW, force: false });

    expect(plan.kind).toBe('refused');
    expect(plan.kind === 'refused' && plan.why).toMatch(/leased by request-1 until .*--force/);
  });

  it('goes ahead under a live lease with --force, without the lease condition', () => {
    const leased = item({ leaseOwner: 'request-1', leaseExpiresAt: NOW + 30_000 });

    const plan = planCursorChange(leased, { kind: 'reset-cursor' }, { nowMs: NOW, force: true });

    expect(plan).toMatchObject({ kind: 'update', requireNoLease: false, revisionAfter: 8 });
  });

  it('goes ahead when the lease has expired', () => {
    const expired = item({ leaseOwner: 'request-1', leaseExpiresAt: NOW - 1 });

    expect(planCursorChange(expired, { kind: 'reset-cursor' }, { nowMs: NOW, force: false }).kind).toBe(
      'update',
    );
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
