// handOffPage over in-memory ports: a page of any size is validated and handed off whole, in slices, or in parts
// across runs when time runs out. What the poll loop makes of a page handed off in part: poll-feed.test.ts.
import { describe, expect, it } from 'vitest';
import type { OutgoingMessage } from '../../../functions/core/contract/order-version-message.js';
import { type HandOffTime, handOffPage } from '../../../functions/core/ingest/hand-off.js';
import { collectionOrder, sampleOrder } from '../../fixtures/orders.js';
import { CountingMetrics, MemoryLog, MemoryQuarantine } from '../../support/fakes.js';

const CONTEXT = {
  feedId: 'feed-a',
  pageId: 'c7',
  fetchedAt: '2026-11-23T06:00:00.000Z',
  correlationId: 'poll:run-1:1',
  maxMessageBytes: 256 * 1024,
};

/** The ports, and a clock that each publish moves on by a second (as a slice's sends take time). */
function handOff() {
  const clock = { now: 0 };
  const slices: OutgoingMessage[][] = [];
  const deps = {
    publisher: {
      publish: async (messages: OutgoingMessage[]) => {
        slices.push(messages);
        clock.now += 1000;
      },
    },
    quarantine: new MemoryQuarantine(),
    metrics: new CountingMetrics(),
    log: new MemoryLog(),
  };
  const time = (until: number, handedBefore?: HandOffTime['handedBefore']): HandOffTime => ({
    until,
    now: () => clock.now,
    handedBefore,
  });
  const published = () => slices.flat().map((message) => [message.orderId, message.version]);
  return { deps, slices, clock, time, published };
}

const orders = (count: number, firstId = 1) =>
  Array.from({ length: count }, (_, index) => sampleOrder({ id: firstId + index }));

describe('handOffPage', () => {
  it('publishes a page of 16,000 valid records whole, in slices of 100, and quarantines nothing', async () => {
    const { deps, slices, published } = handOff();
    // Orders of about 500 bytes: 16,000 are 8 MB, under the body cap.
    const page = Array.from({ length: 16_000 }, (_, index) => ({ ...collectionOrder(), id: index + 1 }));

    const handed = await handOffPage(deps, page, CONTEXT);

    expect(handed).toMatchObject({ versionsPublished: 16_000, quarantined: 0 });
    expect(handed.partial).toBeUndefined();
    expect(slices).toHaveLength(160);
    expect(slices.every((slice) => slice.length === 100)).toBe(true);
    expect(published()).toEqual(page.map((order) => [order.id, 1]));
    expect(deps.quarantine.records).toEqual([]);
    expect(deps.metrics.counts.VersionsPublished).toBe(16_000);
  });

  it('publishes every valid record of a page where thousands of invalid ones come first: identical ones quarantined once, 100 distinct one by one, the rest in one object of several records', async () => {
    const { deps, published } = handOff();
    const identical = Array.from({ length: 6_000 }, () => ({}));
    const distinct = Array.from({ length: 6_000 }, (_, index) => ({ id: 500_000 + index }));
    const beyond = [
      sampleOrder({ id: 7, version: 3 }),
      ...orders(20, 1_000),
      sampleOrder({ id: 7, version: 4, status: 'cancelled', cancelledAt: Date.UTC(2024, 4, 1, 9) }),
    ];
    const page = [sampleOrder({ id: 7, version: 2 }), ...identical, ...distinct, ...beyond];

    const handed = await handOffPage(deps, page, CONTEXT);

    expect(handed).toMatchObject({ versionsPublished: 23, quarantined: 12_000 });
    // Past the 10,000th record: the newer versions of order 7 and the 20 orders between them.
    expect(published()).toEqual([[7, 2], [7, 3], ...orders(20, 1_000).map((order) => [order.id, 3]), [7, 4]]);
    // {} once, then the first 99 distinct ones; the other 5,901 together, in page order.
    expect(deps.quarantine.records).toHaveLength(101);
    expect(deps.quarantine.records.at(-1)).toMatchObject({
      feedId: 'feed-a',
      pageId: 'c7',
      records: 5_901,
      raw: distinct.slice(99),
      issues: ['5901 × missing required field: version'],
    });
    expect(deps.quarantine.maxInFlight).toBeLessThanOrEqual(8);
    expect(deps.metrics.counts.RecordsQuarantined).toBe(12_000);
    expect(deps.log.lines.filter((line) => line.message === 'record quarantined')).toHaveLength(100);
    expect(
      deps.log.lines.find((line) => line.message === 'records quarantined together')?.attributes,
    ).toMatchObject({ records: 5_901 });
  });

  it('stops between slices when its time runs out (one slice at least), naming the part handed off; the same page handed off later goes on after that part', async () => {
    const page = orders(1_000);
    const first = handOff();

    // Each slice takes a second: slices start at 0, 1 and 2 s; the fourth would start at the deadline.
    const part = await handOffPage(first.deps, page, CONTEXT, first.time(3_000));
    const late = await handOffPage(handOff().deps, page, CONTEXT, first.time(0));

    expect(part).toMatchObject({ versionsPublished: 300, partial: { records: 300 } });
    expect(late).toMatchObject({ versionsPublished: 100, partial: { records: 100 } });
    expect(first.deps.log.lines.at(-1)).toMatchObject({
      level: 'warn',
      attributes: { records: 1_000, handedOff: 300, versionsPublished: 300 },
    });
    // Asked again, the partner serves the page anew: latestVersion may have changed, the versions have not.
    const again = page.map((order, index) => (index === 5 ? { ...order, latestVersion: false } : order));
    const second = handOff();
    const rest = await handOffPage(second.deps, again, CONTEXT, second.time(60_000, part.partial));
    expect(rest).toMatchObject({ versionsPublished: 700 });
    expect(rest.partial).toBeUndefined();
    expect([...first.published(), ...second.published()]).toEqual(page.map((order) => [order.id, 3]));
  });

  it('hands a page off whole when it does not start with the part handed off before (the partner served another page, or a shorter one)', async () => {
    const first = handOff();
    const part = await handOffPage(first.deps, orders(500), CONTEXT, first.time(1_000));
    const other = orders(500, 2);

    const second = handOff();
    const whole = await handOffPage(second.deps, other, CONTEXT, second.time(60_000, part.partial));
    const shorter = await handOffPage(handOff().deps, orders(50), CONTEXT, second.time(60_000, part.partial));

    expect(part.partial?.records).toBe(100);
    expect(whole).toMatchObject({ versionsPublished: 500 });
    expect(shorter).toMatchObject({ versionsPublished: 50 });
    expect(second.deps.log.lines[0]?.message).toBe(
      'the page differs from the one an earlier run handed off in part; handing it off whole',
    );
  });
});
