// A property of the poll loop against a model partner that misbehaves at the PartnerApi port: bodies over
// the cap depending on the page size asked, 429s and 5xx (and 3xx or unreadable bodies, which the client
// turns into the same RetryLaterError), hangs up to the deadline, expired cursors, pages repeated, cursor
// cycles, empty hops, missing cursors, more records than asked. Whatever the sequence, every version served
// is published before a cursor past it is committed, requests per run stay bounded, nothing rejects
// unhandled and the run ends with a known outcome. A fixed number of runs on a fake clock: no real waits.
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import type {
  CallOptions,
  OrderUpdatesQuery,
  PartnerApi,
  RawPage,
} from '../../../functions/core/partner/types.js';
import { sampleOrder } from '../../fixtures/orders.js';
import { pollFeedFixtureFor } from '../../support/fakes.js';
import { pollerConfig } from '../../support/poller-config.js';

const KNOWN_OUTCOMES = new Set([
  'caught-up',
  'page-limit',
  'out-of-time',
  'retry-later',
  'cursor-expired-again',
  'stuck-cursor',
  'missing-next-page-id',
  'order-over-body-cap',
]);

type Action =
  | { kind: 'serve' }
  | { kind: 'repeat' }
  | { kind: 'cycle'; back: number }
  | { kind: 'empty-hop' }
  | { kind: 'missing-next' }
  | { kind: 'more-than-asked'; extra: number }
  | { kind: 'rate-limited-then-serve' }
  | { kind: 'retry-later'; reason: 'rate-limited' | 'server-error' | 'network' }
  | { kind: 'hang' }
  | { kind: 'expired' };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'serve' as const }) },
  fc.constant({ kind: 'repeat' as const }),
  fc.record({ kind: fc.constant('cycle' as const), back: fc.integer({ min: 1, max: 4 }) }),
  fc.constant({ kind: 'empty-hop' as const }),
  fc.constant({ kind: 'missing-next' as const }),
  fc.record({ kind: fc.constant('more-than-asked' as const), extra: fc.integer({ min: 1, max: 150 }) }),
  fc.constant({ kind: 'rate-limited-then-serve' as const }),
  fc.record({
    kind: fc.constant('retry-later' as const),
    reason: fc.constantFrom('rate-limited' as const, 'server-error' as const, 'network' as const),
  }),
  fc.constant({ kind: 'hang' as const }),
  fc.constant({ kind: 'expired' as const }),
);

interface Served {
  asked: string | undefined;
  next: string | undefined;
  versions: string[];
}

/**
 * A stream of `length` positions; a cursor names a position (each minted string is new unless the action
 * hands back an old one). Bodies over `capRecords` records are over the body cap. Every served record is a
 * version of its own (order id = position, version = the call number), so a repeat is a new version.
 */
class ModelPartner implements PartnerApi {
  readonly served: Served[] = [];
  calls = 0;
  private readonly positions = new Map<string, number>();
  private readonly minted: string[] = [];

  constructor(
    private readonly script: readonly Action[],
    private readonly length: number,
    private readonly capRecords: number,
    private readonly clock: { now: number },
    private readonly msPerCall: number,
  ) {}

  async getOrderUpdates(query: OrderUpdatesQuery, options: CallOptions): Promise<RawPage> {
    this.calls += 1;
    const act = this.script[this.calls - 1] ?? { kind: 'serve' };
    this.clock.now += this.msPerCall;
    await Promise.resolve();
    const start = query.pageId === undefined ? 0 : this.positions.get(query.pageId);
    if (start === undefined || act.kind === 'expired') {
      if (query.pageId !== undefined) throw new PartnerError('cursor-expired');
    }
    if (act.kind === 'hang') {
      this.clock.now = Math.max(this.clock.now, options.deadline);
      throw new PartnerError('retry-later', 'no complete response before the call deadline', {
        reason: 'network',
        deadlinePassed: true,
      });
    }
    if (act.kind === 'retry-later')
      throw new PartnerError('retry-later', 'later', { reason: act.reason, retryAfterMs: 120_000 });
    if (act.kind === 'rate-limited-then-serve') {
      options.onRetry?.({ kind: 'rate-limited', attempt: 1, waitMs: 1_000, status: 429 });
    }
    const size = (query.pageSize ?? 10) + (act.kind === 'more-than-asked' ? act.extra : 0);
    if (size > this.capRecords && act.kind !== 'empty-hop') {
      throw new PartnerError('body-too-large', 'body over the cap', { statusCode: 200 });
    }
    const from = start ?? 0;
    const to = act.kind === 'empty-hop' ? from : Math.min(this.length, from + size);
    const data = [];
    for (let position = from; position < to; position += 1) {
      data.push(sampleOrder({ id: position + 1, version: this.calls }));
    }
    const next =
      act.kind === 'repeat' && query.pageId !== undefined
        ? query.pageId
        : act.kind === 'cycle' && this.minted.length > 0
          ? this.minted[Math.max(0, this.minted.length - act.back)]
          : this.mint(to);
    const hasMore = act.kind === 'empty-hop' || to < this.length;
    const page: RawPage =
      act.kind === 'missing-next'
        ? { data, hasMore }
        : { data, hasMore, ...(next ? { nextPageId: next } : {}) };
    this.served.push({
      asked: query.pageId,
      next: page.nextPageId,
      versions: data.map((order) => `${order.id}@${order.version}`),
    });
    return page;
  }

  async getOrder(): Promise<unknown> {
    throw new Error('not modelled');
  }

  private mint(position: number): string {
    const cursor = `p${position}-${this.minted.length}`;
    this.positions.set(cursor, position);
    this.minted.push(cursor);
    return cursor;
  }
}

let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
});

describe('the poll loop against a hostile partner (property)', () => {
  it('publishes every served version before committing a cursor past it, bounds requests, and ends known', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { maxLength: 40 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 0, max: 20_000 }),
        async (script, length, pageSize, capRecords, msPerCall) => {
          const clock = { now: 1_000_000 };
          const settings = pollerConfig({ pageSize, maxPagesPerRun: 12 });
          const partner = new ModelPartner(script, length, capRecords, clock, msPerCall);
          const { deps, run: poll } = pollFeedFixtureFor(partner, { clock, settings });
          const published = () => new Set(deps.publisher.published.map((m) => `${m.orderId}@${m.version}`));
          const commit = deps.cursorStore.commit.bind(deps.cursorStore);
          deps.cursorStore.commit = async (lease, change) => {
            const done = published();
            const { partialPage } = change;
            if (partialPage) {
              // In part (the run's time ran out): the cursor stays, and the page's first records are published.
              const page = partner.served.findLast((served) => served.asked === change.pageId);
              const handed = page?.versions.slice(0, partialPage.records) ?? [];
              expect(handed.every((version) => done.has(version))).toBe(true);
              return commit(lease, change);
            }
            // Some page that named this cursor was handed off whole before it is committed.
            const naming = partner.served.filter(
              (page) =>
                page.next === change.pageId || (page.next === undefined && page.asked === change.pageId),
            );
            expect(naming.some((page) => page.versions.every((version) => done.has(version)))).toBe(true);
            return commit(lease, change);
          };
          for (let run = 0; run < 2; run += 1) {
            const callsBefore = partner.calls;
            const servedBefore = partner.served.length;
            const outcome = await poll(`run-${run}`, settings, {
              deadline: clock.now + 100_000,
              requestDeadline: clock.now + 110_000,
              leaseExpiresAt: clock.now + 200_000,
            });
            expect(KNOWN_OUTCOMES).toContain(outcome.kind);
            // 12 pages, each after at most 7 halvings, one recovery and its retry.
            expect(partner.calls - callsBefore).toBeLessThanOrEqual(12 * 8 + 2);
            // A run that ended on its own terms handed off every page it was served, but for a page it ran out
            // of time on: that one in part (the next run finishes it), and the page it had prefetched not at all.
            const done = published();
            const { partialPage, pageId } = deps.cursorStore.items.get(settings.feedId) ?? {};
            const served = partner.served.slice(servedBefore);
            const cut = partialPage ? served.findLastIndex((page) => page.asked === pageId) : served.length;
            for (const [index, page] of served.entries()) {
              const handed =
                index < cut
                  ? page.versions
                  : index === cut
                    ? page.versions.slice(0, partialPage?.records)
                    : [];
              for (const version of handed) expect(done).toContain(version);
            }
            clock.now += 300_000;
          }
          expect(unhandled).toEqual([]);
        },
      ),
      {
        numRuns: 100,
        // Found by this property: a page of more than a slice, then a hang that takes the clock to the
        // run's request deadline while the page is handed off: it is committed in part.
        examples: [[[{ kind: 'more-than-asked', extra: 150 }, { kind: 'hang' }], 152, 1, 151, 0]],
      },
    );
  });
});
