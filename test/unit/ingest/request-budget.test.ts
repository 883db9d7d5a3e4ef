// The token's shared request budget (ingest/request-budget.ts) over the in-memory store, in virtual time:
// pace and fairness, the shared hold, one back-off per hold, the recovery to the cap, a crashed run.
import { describe, expect, it } from 'vitest';
import { BUDGET_POLICY, RequestBudget } from '../../../functions/core/ingest/request-budget.js';
import { FakeBudgetStore } from '../../support/fakes.js';

/** Virtual time: sleeps resolve in time order as run() advances the clock; no real waiting. */
function virtualTime() {
  let now = 0;
  const timers: Array<{ at: number; resolve: () => void }> = [];
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    now: () => now,
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        timers.push({ at: now + Math.max(0, ms), resolve });
      }),
    /** Runs every timer due up to `until` (ms), letting the awaiting code go on after each. */
    async run(until: number) {
      await flush();
      for (;;) {
        timers.sort((a, b) => a.at - b.at);
        const next = timers[0];
        if (!next || next.at > until) break;
        timers.shift();
        now = next.at;
        next.resolve();
        await flush();
      }
      now = until;
    },
  };
}

function setUp(options: { cap?: number; feeds: number }) {
  const time = virtualTime();
  const store = new FakeBudgetStore();
  const budgets = Array.from(
    { length: options.feeds },
    () =>
      new RequestBudget({ store, key: 'budget#/token', cap: options.cap, now: time.now, sleep: time.sleep }),
  );
  return { time, store, budgets, state: () => store.items.get('budget#/token') };
}

/** Each feed sends a request whenever the budget lets it, each answered after `latencyMs`. */
function keepAsking(budgets: RequestBudget[], time: ReturnType<typeof virtualTime>, latencyMs: number) {
  const sent = budgets.map(() => [] as number[]);
  let stop = false;
  budgets.forEach(async (budget, feed) => {
    while (!stop) {
      await budget.take();
      sent[feed]?.push(time.now());
      await time.sleep(latencyMs);
    }
  });
  return {
    sent,
    stop: () => {
      stop = true;
    },
  };
}

describe('RequestBudget: feeds sharing a token', () => {
  it('paces all feeds together at the cap and shares it equally (fairness)', async () => {
    const { time, budgets } = setUp({ cap: 10, feeds: 4 });
    // Alone, each feed would send 20 requests a second (50 ms a request): 8x the cap together.
    const feeds = keepAsking(budgets, time, 50);
    await time.run(10_000);
    feeds.stop();
    const counts = feeds.sent.map((times) => times.length);
    const total = counts.reduce((sum, n) => sum + n, 0);
    expect(total).toBeGreaterThanOrEqual(100);
    expect(total).toBeLessThanOrEqual(101 + (10 * BUDGET_POLICY.slackMs) / 1000);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  });

  it('holds every feed until the Retry-After of a 429 any one of them saw', async () => {
    const { time, budgets } = setUp({ cap: 10, feeds: 3 });
    const feeds = keepAsking(budgets, time, 50);
    await time.run(1_000);
    await budgets[0]?.rateLimited(3_000);
    const heldAt = time.now();
    await time.run(heldAt + 3_000 - 1);
    const during = feeds.sent.map((times) => times.filter((at) => at > heldAt).length);
    await time.run(heldAt + 5_000);
    feeds.stop();
    // What was already on its way (a slot reserved before the 429: one per feed at most) goes out;
    // nothing more until the hold ends.
    for (const count of during) expect(count).toBeLessThanOrEqual(1);
    // Every feed goes on after the hold, none of them starved.
    for (const times of feeds.sent) expect(times.some((at) => at >= heldAt + 3_000)).toBe(true);
  });

  it('backs off once per hold, however many feeds report its 429s', async () => {
    const { time, budgets, state } = setUp({ cap: 10, feeds: 3 });
    const taking = Promise.all(budgets.map((budget) => budget.take()));
    await time.run(1_000);
    await taking;
    for (const budget of budgets) await budget.rateLimited(1_000);
    expect(state()?.rate).toBe(10 * BUDGET_POLICY.decreaseFactor);
    expect(state()?.holdUntil).toBe(time.now() + 1_000);
  });

  it('recovers together: a step a second without a 429, up to the cap and no further', async () => {
    const { time, budgets, state } = setUp({ cap: 10, feeds: 2 });
    const feeds = keepAsking(budgets, time, 50);
    await time.run(500);
    await budgets[1]?.rateLimited(1_000);
    expect(state()?.rate).toBe(7);
    const rates: number[] = [];
    for (let second = 2; second <= 12; second += 1) {
      await time.run(second * 1_000);
      rates.push(state()?.rate ?? 0);
    }
    feeds.stop();
    // 7 → 10 by steps of 5 % of the cap (0.5 requests/s), one per second: 6 steps.
    expect(rates.slice(0, 3).every((rate, i) => i === 0 || rate > (rates[i - 1] ?? 0))).toBe(true);
    expect(rates.at(-1)).toBe(10);
    expect(Math.max(...rates)).toBe(10);
  });

  it('without a cap, does not pace and writes at most once a second per feed, until a 429 sets a rate', async () => {
    const { time, store, budgets, state } = setUp({ feeds: 2 });
    const feeds = keepAsking(budgets, time, 50);
    await time.run(5_000);
    const sentBefore = feeds.sent.flat().length;
    expect(sentBefore).toBeGreaterThanOrEqual(2 * 99);
    expect(store.writes).toBeLessThanOrEqual(2 * 6);
    await budgets[0]?.rateLimited(1_000);
    // The partner refused about 40 requests a second: the rate is 70 % of what the feeds reached.
    expect(state()?.rate).toBeGreaterThan(20);
    expect(state()?.rate).toBeLessThan(40 * BUDGET_POLICY.decreaseFactor + 1);
    feeds.stop();
  });

  it('without a cap, measures the rate a 429 cuts over the last seconds, not since the budget was made', async () => {
    const { time, budgets, state } = setUp({ feeds: 2 });
    const first = budgets[0]?.take();
    await time.run(1);
    await first;
    await time.run(3_600_000); // an idle hour
    const feeds = keepAsking(budgets, time, 50);
    await time.run(3_600_000 + 25_000);
    await budgets[1]?.rateLimited(1_000);
    feeds.stop();
    expect(state()?.rate).toBeGreaterThan(20);
  });

  it('leaks nothing when a run crashes: its reserved slot goes unused, and no hold or lock stays', async () => {
    const { time, store, budgets, state } = setUp({ cap: 10, feeds: 2 });
    // A run that took its turn and died before sending: nothing to release.
    await budgets[0]?.take();
    const crashedAt = time.now();
    const survivor = budgets[1] as RequestBudget;
    const times: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      const taking = survivor.take();
      await time.run(time.now() + 100);
      await taking;
      times.push(time.now());
    }
    expect(state()?.holdUntil).toBe(0);
    // The survivor's first request waits one slot at most, then goes at the full rate alone.
    expect((times[0] ?? 0) - crashedAt).toBeLessThanOrEqual(100);
    expect(store.items.size).toBe(1);
  });

  it('lets the feed go on when the store fails, reporting the error', async () => {
    const errors: unknown[] = [];
    const failing = new FakeBudgetStore();
    failing.reserve = async () => {
      throw new Error('table unavailable');
    };
    const budget = new RequestBudget({
      store: failing,
      key: 'k',
      cap: 1,
      onStoreError: (e) => errors.push(e),
    });
    await budget.take();
    expect(errors).toHaveLength(1);
  });

  it('gives up waiting when the request is aborted (its deadline passed)', async () => {
    const real = new RequestBudget({ store: new FakeBudgetStore(), key: 'k', cap: 1 });
    await real.take();
    const controller = new AbortController();
    const waiting = real.take(controller.signal);
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
  });
});
