import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../tools/simulator/index.js';
import {
  drainPoll,
  finalState,
  get,
  orderProblems,
  TOKEN,
  updatesPath,
  type WireOrder,
  type WirePage,
} from './support.js';

const HOUR = 3_600_000;
const FEED = { seed: 7, orders: 400, vendors: 4, currencies: ['EUR', 'GBP'] };
const key = (o: WireOrder): string => `${o.id}:${o.version}`;

let sim: RunningSimulator;
let drained: Awaited<ReturnType<typeof drainPoll>>;
let stream: WireOrder[];

beforeAll(async () => {
  sim = await startSimulator({ token: TOKEN, feed: FEED });
  drained = await drainPoll(sim.url, '', { pageSize: 100 });
  stream = drained.orders;
});
afterAll(async () => {
  await sim.close();
});

describe('generated feed content', () => {
  it('obeys the payload rules on every version', () => {
    expect(stream.length).toBeGreaterThan(FEED.orders);
    const problems = stream.flatMap((order) => orderProblems(order).map((p) => `${key(order)} ${p}`));
    expect(problems).toEqual([]);
  });

  it('mixes epoch-ms and ISO 8601 timestamps at several offsets, all in the past', () => {
    const placed = stream.map((o) => o.placedAt);
    expect(placed.some((t) => typeof t === 'number')).toBe(true);
    const offsets = new Set(
      placed
        .filter((t): t is string => typeof t === 'string')
        .map((t) => /(Z|[+-]\d{2}:\d{2})$/.exec(t)?.[1]),
    );
    for (const offset of ['Z', '+02:00', '-05:00', '+05:30']) expect(offsets).toContain(offset);
    const latest = Math.max(
      ...stream.map((o) => (typeof o.placedAt === 'number' ? o.placedAt : Date.parse(o.placedAt))),
    );
    expect(latest).toBeLessThan(Date.now() - 3 * HOUR);
  });

  it('has every lifecycle, vendor and currency, and the money-changing features', () => {
    const finals = finalState(stream).orders;
    expect(new Set(finals.map((o) => o.status))).toEqual(
      new Set(['placed', 'accepted', 'rejected', 'cancelled']),
    );
    expect(new Set(finals.map((o) => o.vendorId)).size).toBe(4);
    expect(new Set(finals.map((o) => o.total.currency))).toEqual(new Set(['EUR', 'GBP']));
    const items = stream.flatMap((o) => o.items);
    for (const type of ['offer', 'voucher', 'adjustment'])
      expect(items.some((i) => i.type === type)).toBe(true);
    expect(items.some((i) => i.substitutionDetails?.substitutedFor)).toBe(true);
    expect(stream.some((o) => o.customerPayments.length > 1)).toBe(true);
    expect(stream.some((o) => o.deliveredAt !== undefined)).toBe(true);
  });

  it('bumps versions with and without visible changes', () => {
    const byOrder = new Map<number, WireOrder[]>();
    for (const order of stream) byOrder.set(order.id, [...(byOrder.get(order.id) ?? []), order]);
    let invisible = 0;
    let moneyChanged = 0;
    for (const versions of byOrder.values()) {
      for (let i = 1; i < versions.length; i++) {
        const [before, after] = [versions[i - 1], versions[i]];
        if (!before || !after) continue;
        const strip = ({ version, latestVersion, ...rest }: WireOrder) => JSON.stringify(rest);
        if (strip(before) === strip(after)) invisible++;
        if (before.total.amount !== after.total.amount) moneyChanged++;
      }
    }
    expect(invisible).toBeGreaterThan(0);
    expect(moneyChanged).toBeGreaterThan(0);
  });

  it('interleaves the versions of one order with other orders, across pages', () => {
    const pages = [];
    for (let i = 0; i < stream.length; i += 10) pages.push(stream.slice(i, i + 10));
    const pagesOf = new Map<number, Set<number>>();
    pages.forEach((page, n) => {
      for (const o of page) pagesOf.set(o.id, (pagesOf.get(o.id) ?? new Set()).add(n));
    });
    expect([...pagesOf.values()].some((set) => set.size > 1)).toBe(true);
  });
});

describe('determinism', () => {
  it('same seed and endsAt give the same feed; another seed gives another', async () => {
    const endsAt = Date.now() - 5 * HOUR;
    const small = { seed: 11, orders: 60, endsAt };
    const [a, b, c] = await Promise.all([
      startSimulator({ token: TOKEN, feed: small }),
      startSimulator({ token: TOKEN, feed: small }),
      startSimulator({ token: TOKEN, feed: { ...small, seed: 12 } }),
    ]);
    try {
      const [sa, sb, sc] = await Promise.all(
        [a, b, c].map(async (s) => (await drainPoll(s?.url ?? '', '', { pageSize: 100 })).orders),
      );
      expect(sb).toEqual(sa);
      expect(sc).not.toEqual(sa);
      // Cursors are interchangeable between two simulators with the same feed options.
      const page = await get<WirePage>(a?.url ?? '', updatesPath('', { pageSize: 5 }));
      const next = updatesPath('', { pageSize: 5, pageId: page.body.nextPageId });
      expect((await get(b?.url ?? '', next)).text).toBe((await get(a?.url ?? '', next)).text);
    } finally {
      await Promise.all([a, b, c].map((s) => s?.close()));
    }
  });
});

// latestVersion and expected() against the stream walked, on a feed with duplicated and out-of-order versions.
describe('stream defects', () => {
  it('duplicated and out-of-order versions: expected() keeps the max version and counts distinct pairs', async () => {
    const defective = await startSimulator({
      token: TOKEN,
      feed: { seed: 3, orders: 300, vendors: 3, duplicateVersions: 0.05, outOfOrderVersions: 0.2 },
    });
    try {
      const served = (await drainPoll(defective.url, '', { pageSize: 100 })).orders;
      const seen = new Set<string>();
      let duplicates = 0;
      let outOfOrder = 0;
      const highest = new Map<number, number>();
      for (const o of served) {
        if (seen.has(key(o))) duplicates++;
        seen.add(key(o));
        if ((highest.get(o.id) ?? 0) > o.version) outOfOrder++;
        highest.set(o.id, Math.max(o.version, highest.get(o.id) ?? 0));
      }
      expect(duplicates).toBeGreaterThan(0);
      expect(outOfOrder).toBeGreaterThan(0);
      const expected = defective.expected();
      const walked = finalState(served);
      expect([...expected.orders.values()].sort((a, b) => a.id - b.id)).toEqual(walked.orders);
      expect(expected.sales).toEqual(walked.sales);
      expect(expected.distinctVersions).toBe(seen.size);
      expect(served.every((o) => o.latestVersion === (o.version === highest.get(o.id)))).toBe(true);
    } finally {
      await defective.close();
    }
  });
});

describe('filters and paging', () => {
  it('filters by vendorIds, repeated or comma-separated', async () => {
    const wanted = ['vendor-1', 'vendor-3'];
    const expected = stream.filter((o) => wanted.includes(o.vendorId));
    const comma = await drainPoll(sim.url, '', { pageSize: 50, extra: { vendorIds: wanted.join(',') } });
    expect(comma.orders).toEqual(expected);
    const repeated = await get<WirePage>(
      sim.url,
      '/v1/orderUpdates?pageSize=100&vendorIds=vendor-1&vendorIds=vendor-3',
    );
    expect(repeated.body.data).toEqual(expected.slice(0, 100));
  });

  it('filters by orderIds across the whole stream', async () => {
    const ids = [...new Set(stream.map((o) => o.id))].slice(3, 6);
    const expected = stream.filter((o) => ids.includes(o.id));
    const poll = await drainPoll(sim.url, '', { pageSize: 2, extra: { orderIds: ids.join(',') } });
    expect(poll.orders).toEqual(expected);
    expect(poll.pages.length).toBe(Math.ceil(expected.length / 2));
  });

  it('fromTimestamp serves a suffix of the stream (entries strictly after it)', async () => {
    const all = await get<WirePage>(
      sim.url,
      updatesPath('', { fromTimestamp: '2000-01-01T00:00:00Z', pageSize: 5 }),
    );
    expect(all.body.data).toEqual(stream.slice(0, 5));
    const none = await get(sim.url, updatesPath('', { fromTimestamp: new Date().toISOString() }));
    expect(none.text).toBe('{"data":[],"hasMore":false}');
    const middle = new Date(Date.now() - 3 * HOUR - 36 * HOUR).toISOString();
    const suffix = (await drainPoll(sim.url, '', { pageSize: 100, extra: { fromTimestamp: middle } })).orders;
    expect(suffix.length).toBeGreaterThan(0);
    expect(suffix.length).toBeLessThan(stream.length);
    expect(suffix).toEqual(stream.slice(stream.length - suffix.length));
  });

  it('restarting with fromTimestamp = the newest timestamp seen skips nothing after what was seen', async () => {
    const seenCount = 137;
    const times = stream
      .slice(0, seenCount)
      .flatMap((o) => [o.placedAt, o.acceptedAt, o.cancelledAt, o.dispatchedAt, o.deliveredAt, o.returnedAt])
      .filter((t) => t !== undefined)
      .map((t) => (typeof t === 'number' ? t : Date.parse(t)));
    const from = new Date(Math.max(...times)).toISOString();
    const resumed = (await drainPoll(sim.url, '', { pageSize: 100, extra: { fromTimestamp: from } })).orders;
    expect(resumed.slice(-(stream.length - seenCount))).toEqual(stream.slice(seenCount));
  });

  it('minAgeMinutes hides the newest entries, and the cursor later resumes without skipping', async () => {
    const recent = await startSimulator({
      token: TOKEN,
      feed: { seed: 5, orders: 150, endsAt: Date.now() - 10 * 60_000 },
    });
    try {
      const full = (await drainPoll(recent.url, '', { pageSize: 100 })).orders;
      const delayed = await drainPoll(recent.url, '', { pageSize: 100, extra: { minAgeMinutes: 120 } });
      expect(delayed.orders.length).toBeGreaterThan(0);
      expect(delayed.orders.length).toBeLessThan(full.length);
      expect(delayed.orders).toEqual(full.slice(0, delayed.orders.length));
      const again = await get<WirePage>(
        recent.url,
        updatesPath('', { minAgeMinutes: 120, pageId: delayed.nextPageId }),
      );
      expect(again.body).toEqual({ data: [], hasMore: false, nextPageId: delayed.nextPageId });
      const rest = await drainPoll(recent.url, '', { pageSize: 100, pageId: delayed.nextPageId });
      expect([...delayed.orders, ...rest.orders]).toEqual(full);
      const small = await drainPoll(recent.url, '', { pageSize: 100, extra: { minAgeMinutes: 5 } });
      expect(small.orders).toEqual(full);
    } finally {
      await recent.close();
    }
  });
});

describe('pagination rules', () => {
  it('rules 1-2: /v1 without a feed is the empty stream: no nextPageId', async () => {
    const empty = await startSimulator({ token: TOKEN });
    try {
      const res = await get(empty.url, updatesPath(''));
      expect(res.text).toBe('{"data":[],"hasMore":false}');
      expect(empty.expected()).toEqual({ orders: new Map(), sales: [], distinctVersions: 0 });
      expect((await get(empty.url, '/v1/orders/1')).status).toBe(404);
    } finally {
      await empty.close();
    }
  });

  it('rule 1: every non-empty page has a nextPageId, the last one included', () => {
    expect(drained.pages.every((page) => typeof page.nextPageId === 'string')).toBe(true);
  });

  it('rule 3: a cursor with no new data answers [] with the same pageId', async () => {
    const { nextPageId } = drained;
    const res = await get<WirePage>(sim.url, updatesPath('', { pageId: nextPageId }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], hasMore: false, nextPageId });
  });

  it('new versions arriving: only the entries shown are served, and a cursor at the end picks up the next ones', async () => {
    const local = await startSimulator({ token: TOKEN, feed: { seed: 9, orders: 100 } });
    try {
      const full = (await drainPoll(local.url, '', { pageSize: 100 })).orders;
      local.showFirst(20);
      const early = await drainPoll(local.url, '', { pageSize: 7 });
      expect(early.orders).toEqual(full.slice(0, 20));
      local.showFirst(23);
      const next = await drainPoll(local.url, '', { pageSize: 7, pageId: early.nextPageId });
      expect(next.orders).toEqual(full.slice(20, 23));
    } finally {
      await local.close();
    }
  });

  it('rules 4-5: a purged cursor answers 404; without pageId paging restarts at the first retained entry', async () => {
    const local = await startSimulator({ token: TOKEN, feed: { seed: 9, orders: 100 } });
    try {
      const full = (await drainPoll(local.url, '', { pageSize: 100 })).orders;
      const first = await get<WirePage>(local.url, updatesPath('', { pageSize: 10 }));
      const late = await get<WirePage>(
        local.url,
        updatesPath('', { pageSize: 100, pageId: first.body.nextPageId }),
      );
      local.purgeBefore(50.5 / full.length); // entries 0..49 are purged
      const purged = await get(local.url, updatesPath('', { pageId: first.body.nextPageId }));
      expect(purged).toMatchObject({ status: 404, body: { message: 'pageId not found' } });
      // A cursor beyond the purge point still works.
      const kept = await drainPoll(local.url, '', { pageSize: 100, pageId: late.body.nextPageId });
      expect(kept.orders).toEqual(full.slice(110));
      const restart = await drainPoll(local.url, '', { pageSize: 100 });
      expect(restart.orders).toEqual(full.slice(50));
    } finally {
      await local.close();
    }
  });
});
