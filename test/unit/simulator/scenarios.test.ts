// The simulator serves each scenario as the spec describes it: the exact expectation (SCENARIO_EXPECTATIONS)
// over its polls, and the spec's own words (SPEC_CHECKS, which npm run verify applies) on what it served.
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import {
  type HostileScenarioId,
  type RunningSimulator,
  SCENARIO_EXPECTATIONS,
  SCENARIO_IDS,
  type ScenarioId,
  startSimulator,
} from '../../../tools/simulator/index.js';
import { toWire } from '../../../tools/simulator/model.js';
import { SPEC_CHECKS } from '../../../tools/simulator/scenarios/expectations.js';
import { SCENARIOS } from '../../../tools/simulator/scenarios/index.js';
import {
  drainPoll,
  faithfulRun,
  finalState,
  get,
  orderProblems,
  TOKEN,
  updatesPath,
  type WireOrder,
  type WirePage,
} from './support.js';

const OTHER_TOKEN = 'second-unit-test-token';
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ token: TOKEN, additionalTokens: [OTHER_TOKEN], scenarioRetryAfterSeconds: 1 });
});
afterAll(async () => {
  await sim.close();
});

/** Drains every poll of a scenario, following the cursor chain; returns the orders of each poll. */
async function drainScenario(id: ScenarioId, pageSize = 10) {
  const polls: WireOrder[][] = [];
  let pages = 0;
  let pageId: string | undefined;
  for (let n = 0; n < SCENARIO_EXPECTATIONS[id].polls; n++) {
    const poll = await drainPoll(sim.url, `/${id}`, { pageId, pageSize });
    polls.push(poll.orders);
    pages += poll.pages.length;
    pageId = poll.nextPageId;
  }
  return { polls, pages, lastPageId: pageId };
}

const DRAINABLE = SCENARIO_IDS.filter(
  (id) =>
    !['test-invalid-token', 'test-rate-limit', 'test-transient-error', 'test-expired-page-id'].includes(id),
);

describe('every scenario', () => {
  it.each(DRAINABLE)(
    '%s serves its expectation and the spec over its polls, then answers rule 3',
    async (id) => {
      const { polls, pages, lastPageId } = await drainScenario(id);
      const served = polls.flat();
      const expectation = SCENARIO_EXPECTATIONS[id];

      expect(served).toHaveLength(expectation.versions);
      expect(finalState(served)).toEqual({ orders: expectation.orders, sales: expectation.sales });
      expect(SPEC_CHECKS[id].check(faithfulRun(served, { polls: expectation.polls, pages }))).toEqual([]);
      for (const order of served) {
        expect(orderProblems(order), `order ${order.id} v${order.version}`).toEqual([]);
        expect(Math.abs(Date.now() - Number(order.placedAt))).toBeLessThan(3 * 24 * 3_600_000);
      }
      if (expectation.versions === 0) {
        expect(lastPageId).toBeUndefined();
        return;
      }
      const after = await get<WirePage>(sim.url, updatesPath(`/${id}`, { pageId: lastPageId }));
      expect(after).toMatchObject({
        status: 200,
        body: { data: [], hasMore: false, nextPageId: lastPageId },
      });
    },
  );

  it.each(SCENARIO_IDS.filter((id) => id !== 'test-invalid-token'))(
    '%s: GET /orders/{id} returns the latest known version of each order',
    async (id) => {
      for (const expected of SCENARIO_EXPECTATIONS[id].orders) {
        const res = await get<WireOrder>(sim.url, `/${id}/v1/orders/${expected.id}`);
        expect(res).toMatchObject({ status: 200, body: { ...expected, latestVersion: true } });
      }
      const missing = await get(sim.url, `/${id}/v1/orders/42`);
      expect(missing).toMatchObject({ status: 404, body: { message: 'order not found' } });
    },
  );

  it('ignores minAgeMinutes and fromTimestamp, and rejects the same invalid parameters as production', async () => {
    const res = await get<WirePage>(
      sim.url,
      updatesPath('/test-multi-location', { minAgeMinutes: 1440, fromTimestamp: new Date().toISOString() }),
    );
    expect(res.body.data).toHaveLength(2);
    expect((await get(sim.url, updatesPath('/test-pagination', { pageSize: 0 }))).status).toBe(400);
  });
});

describe('the spec checks (SPEC_CHECKS) name what is wrong in a broken run', () => {
  /** A faithful run of the scenario's data, without HTTP. */
  const runOf = (id: ScenarioId) => {
    const served = SCENARIOS[id].polls
      .flat()
      .map((entry) => toWire(entry.order, entry.latestVersion, { kind: 'epoch' }));
    return faithfulRun(served, { polls: SCENARIOS[id].polls.length });
  };

  it('test-order-lifecycle: the cancelled sale was not reversed', () => {
    const run = runOf('test-order-lifecycle');
    const cancelled = run.orders.find((order) => order.status === 'cancelled');
    const { vendorId, total } = cancelled ??
      run.orders[0] ?? { vendorId: '', total: { currency: '', amount: 0 } };
    run.sales.push({ vendorId, currency: total.currency, count: 1, amount: total.amount });
    expect(SPEC_CHECKS['test-order-lifecycle'].check(run).join('; ')).toMatch(/ledger/);
  });

  it('test-versioning: an older version was kept', () => {
    const run = runOf('test-versioning');
    run.orders = run.orders.map((order) => ({ ...order, version: 3 }));
    expect(SPEC_CHECKS['test-versioning'].check(run)).toContain('kept version 3, expected 4');
  });

  it('a version was lost, a 429 never seen, a record quarantined or dead-lettered, a 401 not stopped on', () => {
    const lost = runOf('test-pagination');
    if (lost.counters) lost.counters.applied -= 1;
    expect(SPEC_CHECKS['test-pagination'].check(lost).join('; ')).toMatch(/!= applied/);
    expect(SPEC_CHECKS['test-rate-limit'].check(runOf('test-rate-limit'))).toEqual([
      'no rate-limit wait was observed (expected a 429)',
    ]);
    const spoilt = { ...runOf('test-delivery'), quarantined: ['quarantine/x'], deadLettered: 1 };
    expect(SPEC_CHECKS['test-delivery'].check(spoilt)).toEqual(
      expect.arrayContaining(['1 record(s) quarantined', '1 message(s) dead-lettered']),
    );
    const invalidToken = { ...runOf('test-invalid-token'), exitCode: 0, outcome: 'drained' };
    expect(SPEC_CHECKS['test-invalid-token'].check(invalidToken).join('; ')).toMatch(/expected auth failure/);
    expect(
      SPEC_CHECKS['test-invalid-token'].check({ ...invalidToken, exitCode: 3, outcome: 'auth-failed' }),
    ).toEqual([]);
  });
});

describe('test-authentication / test-invalid-token / test-empty-stream', () => {
  it('test-authentication needs the token in the Authorization header', async () => {
    expect((await get(sim.url, updatesPath('/test-authentication'), null)).status).toBe(401);
    const ok = await get<WirePage>(sim.url, updatesPath('/test-authentication'));
    expect(ok).toMatchObject({ status: 200, body: { hasMore: true, nextPageId: expect.any(String) } });
  });

  it('test-invalid-token answers 401 Unauthorized to every request, even with the right token', async () => {
    for (const path of ['/test-invalid-token/v1/orderUpdates', '/test-invalid-token/v1/orders/1']) {
      const res = await get(sim.url, path);
      expect(res).toMatchObject({ status: 401, body: { message: 'Unauthorized' } });
    }
  });

  it('test-empty-stream answers exactly the empty-stream body', async () => {
    const res = await get(sim.url, updatesPath('/test-empty-stream'));
    expect(res.text).toBe('{"data":[],"hasMore":false}');
  });
});

describe('test-pagination', () => {
  it('serves a 230-version backlog in pages that honour pageSize (default 10)', async () => {
    const poll = await drainPoll(sim.url, '/test-pagination', { pageSize: 7 });
    expect(poll.pages).toHaveLength(Math.ceil(230 / 7));
    expect(poll.pages.slice(0, -1).every((page) => page.data.length === 7 && page.hasMore)).toBe(true);
    expect(poll.orders).toHaveLength(230);
    const defaults = await drainPoll(sim.url, '/test-pagination');
    expect(defaults.pages).toHaveLength(23);
    expect(defaults.orders).toEqual(poll.orders);
  });
});

describe('multi-poll and content scenarios', () => {
  const shape = (orders: WireOrder[] | undefined) =>
    orders?.map((o) => [o.id, o.version, o.status, o.latestVersion]);

  it('test-order-lifecycle: placed, accepted, cancelled over three polls; poll 3 adds rejected/accepted/placed', async () => {
    const { polls } = await drainScenario('test-order-lifecycle');
    const id = 3_008_000_001;
    expect(polls.slice(0, 2).map(shape)).toEqual([[[id, 1, 'placed', true]], [[id, 2, 'accepted', true]]]);
    expect(shape(polls[2])?.[0]).toEqual([id, 3, 'cancelled', true]);
    expect(finalState(polls[2] ?? []).orders.map((o) => o.status)).toEqual([
      'cancelled',
      'rejected',
      'accepted',
      'placed',
    ]);
  });

  it('test-versioning: v1 | v2 (latestVersion false) + v3 | v4 delivered, with money changing', async () => {
    const { polls } = await drainScenario('test-versioning');
    expect(polls.map((poll) => poll.map((o) => [o.version, o.status, o.latestVersion]))).toEqual([
      [[1, 'placed', true]],
      [
        [2, 'accepted', false],
        [3, 'accepted', true],
      ],
      [[4, 'accepted', true]],
    ]);
    expect(new Set(polls.flat().map((o) => o.total.amount)).size).toBe(4);
    expect(polls[2]?.[0]?.deliveredAt).toBeTypeOf('number');
  });

  it('test-out-of-order-versions: accepted v2 comes before placed v1', async () => {
    const { polls } = await drainScenario('test-out-of-order-versions');
    expect(polls[0]?.map((o) => [o.version, o.status, o.latestVersion])).toEqual([
      [2, 'accepted', true],
      [1, 'placed', false],
    ]);
  });

  it('content scenarios change between versions as the spec says', async () => {
    const [options1, options2] = (await drainScenario('test-items-and-options')).polls.flat();
    expect(options2?.total.amount).toBeLessThan(options1?.total.amount ?? 0);
    const [substituted1, substituted2] = (await drainScenario('test-substitutions')).polls.flat();
    expect(substituted1?.items.some((i) => i.substitutionDetails)).toBe(false);
    expect(substituted2?.items.filter((i) => i.substitutionDetails?.substitutedBy)).toHaveLength(3);
    const substitutes = substituted2?.items.filter((i) => i.substitutionDetails?.substitutedFor) ?? [];
    expect(substitutes.map((i) => i.substitutionDetails?.substitutedFor?.length).sort()).toEqual([1, 2]);
    const [adjusted1, adjusted2] = (await drainScenario('test-price-adjustments')).polls.flat();
    expect(adjusted1?.items.some((i) => i.type === 'adjustment')).toBe(false);
    expect(adjusted2?.total).toEqual(adjusted1?.total);
    const adjustment = adjusted2?.items.find((i) => i.type === 'adjustment');
    expect(adjustment).toMatchObject({ quantityOrdered: 0, quantityFulfilled: 1 });
    const payments = (await drainScenario('test-payments')).polls.flat();
    expect(payments.map((o) => o.customerPayments.map((p) => `${p.type}/${p.collectedBy}`).sort())).toEqual([
      ['cash/vendor', 'voucher/platform'],
      ['online/platform', 'voucher/platform'],
    ]);
    expect(payments.every((o) => o.deliveryFee && o.serviceFee)).toBe(true);
  });
});

describe('stateful scenarios', () => {
  it('test-rate-limit: the 2nd page request answers 429 until Retry-After has passed, once per run', async () => {
    const first = await get<WirePage>(sim.url, updatesPath('/test-rate-limit'));
    expect(first.status).toBe(200);
    const second = updatesPath('/test-rate-limit', { pageId: first.body.nextPageId });
    const limited = await get(sim.url, second);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect((await get(sim.url, second)).status).toBe(429);

    // Retry-After's second passes on the simulator's clock (Date, faked to the end of the test; timers and
    // sockets stay real): back on the real clock, the run would be before its retry time again.
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    vi.setSystemTime(Date.now() + 1_000);
    const retried = await get<WirePage>(sim.url, second);
    expect(retried.status).toBe(200);
    const rest = await drainPoll(sim.url, '/test-rate-limit', { pageId: retried.body.nextPageId });
    const served = [...first.body.data, ...retried.body.data, ...rest.orders];
    expect(finalState(served).orders).toEqual(SCENARIO_EXPECTATIONS['test-rate-limit'].orders);

    // A restart (no pageId) starts a new run, which fires the fault again.
    const restart = await get<WirePage>(sim.url, updatesPath('/test-rate-limit'));
    expect(
      (await get(sim.url, updatesPath('/test-rate-limit', { pageId: restart.body.nextPageId }))).status,
    ).toBe(429);
  });

  it('test-rate-limit keeps its progress per token', async () => {
    const mine = await get<WirePage>(sim.url, updatesPath('/test-rate-limit'));
    const theirs = await get<WirePage>(sim.url, updatesPath('/test-rate-limit'), OTHER_TOKEN);
    const next = (page: WirePage) => updatesPath('/test-rate-limit', { pageId: page.nextPageId });
    expect((await get(sim.url, next(mine.body))).status).toBe(429);
    expect((await get(sim.url, next(theirs.body), OTHER_TOKEN)).status).toBe(429);
  });

  it('test-rate-limit forgets a run after scenarioStateTtlMs of inactivity', async () => {
    // The simulator's clock is Date, faked here (timers and sockets stay real): the run is idle exactly as long
    // as the test says, however loaded the machine (a real 150 ms sleep against a 100 ms TTL was flaky).
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const quick = await startSimulator({ token: TOKEN, scenarioStateTtlMs: 100 });
    try {
      const first = await get<WirePage>(quick.url, updatesPath('/test-rate-limit'));
      vi.setSystemTime(Date.now() + 101);
      // The run was forgotten: this request is the first of a new run, so it succeeds...
      const second = await get<WirePage>(
        quick.url,
        updatesPath('/test-rate-limit', { pageId: first.body.nextPageId }),
      );
      expect(second.status).toBe(200);
      // ...and the one after it is the run's second page request.
      const third = await get(quick.url, updatesPath('/test-rate-limit', { pageId: second.body.nextPageId }));
      expect(third.status).toBe(429);
    } finally {
      await quick.close();
    }
  });

  it('test-transient-error: the 2nd page request answers 503 once; the same request then succeeds', async () => {
    const first = await get<WirePage>(sim.url, updatesPath('/test-transient-error'));
    const second = updatesPath('/test-transient-error', { pageId: first.body.nextPageId });
    expect((await get(sim.url, second)).status).toBe(503);
    const retried = await get<WirePage>(sim.url, second);
    expect(retried.status).toBe(200);
    const rest = await drainPoll(sim.url, '/test-transient-error', { pageId: retried.body.nextPageId });
    expect([...first.body.data, ...retried.body.data, ...rest.orders]).toHaveLength(25);
    expect(
      sim.requests.filter((r) => r.url.startsWith('/test-transient-error') && r.status === 503),
    ).toHaveLength(1);
  });

  it('test-expired-page-id: the first page carries an expired cursor, re-expired on every restart', async () => {
    for (let run = 0; run < 2; run++) {
      const first = await get<WirePage>(sim.url, updatesPath('/test-expired-page-id'));
      expect(first.status).toBe(200);
      expect(first.body.data).toHaveLength(5);
      expect(first.body.hasMore).toBe(false);
      const next = await get(
        sim.url,
        updatesPath('/test-expired-page-id', { pageId: first.body.nextPageId }),
      );
      expect(next).toMatchObject({ status: 404, body: { message: 'pageId not found' } });
      expect(finalState(first.body.data).orders).toEqual(
        SCENARIO_EXPECTATIONS['test-expired-page-id'].orders,
      );
    }
  });
});

describe('hostile scenarios (partners nobody scripted)', () => {
  const expectation = (id: HostileScenarioId) => SCENARIO_EXPECTATIONS[id];
  /** The expected orders and sales of what was served, leaving out the orders the ingester must refuse. */
  const kept = (id: HostileScenarioId, served: WireOrder[]) =>
    finalState(served.filter((order) => expectation(id).orders.some((expected) => expected.id === order.id)));

  it('large-orders: a page of 100 is over the 10 MiB body cap, a page of 50 is not; each version is ~150 KB', async () => {
    const full = await get<WirePage>(sim.url, updatesPath('/large-orders', { pageSize: 100 }));
    expect(full.text.length).toBeGreaterThan(10 * 1024 * 1024);
    const half = await drainPoll(sim.url, '/large-orders', { pageSize: 50 });
    expect(Math.max(...half.pages.map((page) => JSON.stringify(page).length))).toBeLessThan(10 * 1024 * 1024);
    for (const order of half.orders) expect(JSON.stringify(order).length).toBeGreaterThan(140_000);
    expect(half.orders).toHaveLength(expectation('large-orders').versions);
    expect(kept('large-orders', half.orders)).toEqual({
      orders: expectation('large-orders').orders,
      sales: expectation('large-orders').sales,
    });
  });

  it('trickle: the first page request sends its body one byte at a time and stops when the client hangs up; the retry is whole', async () => {
    const abort = new AbortController();
    const res = await fetch(`${sim.url}${updatesPath('/trickle')}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    const first = await reader?.read();
    expect(first?.value).toHaveLength(1);
    abort.abort();
    const retried = await drainPoll(sim.url, '/trickle');
    expect(kept('trickle', retried.orders).orders).toEqual(expectation('trickle').orders);
    expect(sim.requests.filter((r) => r.url.startsWith('/trickle/') && r.fault === 'trickle')).toHaveLength(
      1,
    );
  });

  it('redirect: the first page request answers 302 with a Location carrying a query, once', async () => {
    const redirected = await fetch(`${sim.url}${updatesPath('/redirect')}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      redirect: 'manual',
    });
    expect(redirected.status).toBe(302);
    expect(new URL(redirected.headers.get('location') ?? '').search).not.toBe('');
    const drained = await drainPoll(sim.url, '/redirect');
    expect(kept('redirect', drained.orders).orders).toEqual(expectation('redirect').orders);
  });

  it('html-200: the first two page requests answer 200 with an HTML maintenance page, then the real page', async () => {
    for (let n = 0; n < 2; n++) {
      const page = await fetch(`${sim.url}${updatesPath('/html-200')}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html');
      expect(await page.text()).toMatch(/^<!DOCTYPE html>/);
    }
    const drained = await drainPoll(sim.url, '/html-200');
    expect(kept('html-200', drained.orders).orders).toEqual(expectation('html-200').orders);
  });

  it('cursor-cycle: the third page hands back the second page’s cursor byte for byte (A → B → A), with data', async () => {
    const served: WireOrder[] = [];
    const cursors: string[] = [];
    let pageId: string | undefined;
    for (let n = 0; n < 4; n++) {
      const page = await get<WirePage>(sim.url, updatesPath('/cursor-cycle', { pageId }));
      expect(page.body).toMatchObject({ hasMore: true });
      expect(page.body.data).toHaveLength(3);
      served.push(...page.body.data);
      pageId = page.body.nextPageId;
      cursors.push(pageId ?? '');
    }
    const [a, b] = cursors;
    expect(cursors).toEqual([a, b, a, b]);
    expect(new Set(served.map((order) => `${order.id}:${order.version}`)).size).toBe(9);
    expect(kept('cursor-cycle', served).orders).toEqual(expectation('cursor-cycle').orders);
    expect(expectation('cursor-cycle').stop).toBe('stuck-cursor');
  });

  it('record-flood: the first page carries 30,000 tiny invalid records (4 distinct) besides what was asked, before its last 3 versions', async () => {
    const whole = await get<WirePage>(sim.url, updatesPath('/record-flood', { pageSize: 100 }));
    expect(whole.body.data.slice(10, -3).every((record) => !('total' in record))).toBe(true);
    expect(whole.body.data.slice(-3).map((record) => [record.id, record.version])).toEqual([
      [3_023_000_064, 2],
      [3_023_000_057, 3],
      [3_023_000_950, 1],
    ]);
    const first = await get<WirePage>(sim.url, updatesPath('/record-flood', { pageSize: 3 }));
    expect(first.body.data).toHaveLength(3 + 30_000);
    // The generated orders are whole; the flood's records have no total.
    const orders = first.body.data.filter((record) => 'total' in record);
    const invalid = first.body.data.filter((record) => !('total' in record));
    // Interleaved, so all four are among the first records a page's hand-off validates.
    expect(new Set(invalid.slice(0, 4).map((record) => JSON.stringify(record))).size).toBe(4);
    expect(new Set(invalid.map((record) => JSON.stringify(record))).size).toBe(4);
    const rest = await drainPoll(sim.url, '/record-flood', { pageSize: 3, pageId: first.body.nextPageId });
    expect(rest.pages.every((page) => page.data.length <= 3)).toBe(true);
    expect(kept('record-flood', [...orders, ...rest.orders]).orders).toEqual(
      expectation('record-flood').orders,
    );
  });

  it('over-long-values: a 3,000-character vendorId, and a 450 KB nextPageId on the first page request only', async () => {
    const first = await get<WirePage>(sim.url, updatesPath('/over-long-values'));
    expect(first.body.nextPageId?.length).toBe(450_000);
    const drained = await drainPoll(sim.url, '/over-long-values');
    expect(drained.pages[0]?.nextPageId?.length).toBeLessThan(200);
    const overLong = drained.orders.filter((order) => order.vendorId.length > 2048);
    expect(overLong).toHaveLength(expectation('over-long-values').quarantined ?? 0);
    expect(kept('over-long-values', drained.orders).orders).toEqual(expectation('over-long-values').orders);
  });

  it('deep-expiry: the cursor ending poll 1 answers 404 once; the replay ends there with a cursor that serves poll 2', async () => {
    const poll1 = await drainPoll(sim.url, '/deep-expiry');
    const expired = await get(sim.url, updatesPath('/deep-expiry', { pageId: poll1.nextPageId }));
    expect(expired).toMatchObject({ status: 404, body: { message: 'pageId not found' } });
    const replay = await drainPoll(sim.url, '/deep-expiry');
    expect(replay.orders).toEqual(poll1.orders);
    const poll2 = await drainPoll(sim.url, '/deep-expiry', { pageId: replay.nextPageId });
    expect(poll2.orders.length).toBeGreaterThan(poll1.orders.length);
    expect(kept('deep-expiry', [...poll1.orders, ...poll2.orders]).orders).toEqual(
      expectation('deep-expiry').orders,
    );
    const after = await get<WirePage>(sim.url, updatesPath('/deep-expiry', { pageId: poll2.nextPageId }));
    expect(after.body).toEqual({ data: [], hasMore: false, nextPageId: poll2.nextPageId });
  });
});
