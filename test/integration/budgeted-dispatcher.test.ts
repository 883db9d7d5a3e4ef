// The request budget's hook on the partner client (partner/budgeted-dispatcher.ts), over real HTTP: against the
// simulator's per-token rate limit, and a scripted partner for the 429s nobody scripted (a clock an hour fast,
// a Retry-After years ahead); the request a hold keeps past its deadline. The poller's wiring of the budget on
// moto: cursor-store.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BUDGET_POLICY, type LongHold, RequestBudget } from '../../functions/core/ingest/request-budget.js';
import { withRequestBudget } from '../../functions/core/partner/budgeted-dispatcher.js';
import { createPartnerAgent, createPartnerClient } from '../../functions/core/partner/client.js';
import { MemoryBudgetStore } from '../../tools/harness/memory-budget-store.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

const TOKEN = 'budget-hook-token-5a1e';
let sim: RunningSimulator;
let partner: ScriptedServer;
const agent = createPartnerAgent();

beforeAll(async () => {
  [sim, partner] = await Promise.all([
    startSimulator({ token: TOKEN, tokenRateLimit: { requestsPerSecond: 1, burst: 2 } }),
    startScriptedServer(),
  ]);
});
afterAll(async () => {
  await agent.close();
  await Promise.all([sim?.close(), partner?.close()]);
});
beforeEach(() => partner.reset());

const httpDate = (ms: number) => new Date(ms).toUTCString();

/** The real budget over the in-memory store (the store's own behaviour: cursor-store.test.ts). */
function memoryBudget() {
  const store = new MemoryBudgetStore();
  const longHolds: LongHold[] = [];
  const budget = new RequestBudget({ store, key: 'k', onLongHold: (hold) => longHolds.push(hold) });
  return { budget, longHolds, state: () => store.items.get('k') };
}

/** One request answered 429 with `headers`: the hold the budget took (ms after the request) and its reports. */
async function holdAfter429(headers: Record<string, string>) {
  const { budget, longHolds, state } = memoryBudget();
  partner.script({ status: 429, headers });
  const client = createPartnerClient({
    baseUrl: partner.url,
    token: async () => TOKEN,
    dispatcher: withRequestBudget(agent, budget),
  });
  await client.getOrderUpdates({}, { deadline: Date.now() + 5_000 }).catch(() => undefined);
  await budget.settled();
  return { heldMs: (state()?.holdUntil ?? 0) - (partner.requests[0]?.receivedAt ?? 0), longHolds };
}

describe('withRequestBudget', () => {
  it('takes a turn before every attempt and reports each 429 with its Retry-After', async () => {
    const calls: string[] = [];
    const budget = {
      take: async () => void calls.push('take'),
      rateLimited: async (retryAfterMs: number | undefined) => void calls.push(`429 ${retryAfterMs}`),
    };
    const client = createPartnerClient({
      baseUrl: sim.url,
      token: async () => TOKEN,
      dispatcher: withRequestBudget(agent, budget),
      // The client's waits are skipped: the partner's bucket stays empty, so the retries meet 429s.
      sleep: async () => {},
      retryPolicy: { maxRateLimitRetries: 2 },
    });
    const deadline = Date.now() + 30_000;

    await client.getOrderUpdates({ pageSize: 1 }, { deadline });
    await client.getOrderUpdates({ pageSize: 1 }, { deadline });
    const third = client.getOrderUpdates({ pageSize: 1 }, { deadline });

    await expect(third).rejects.toMatchObject({ kind: 'retry-later', reason: 'rate-limited' });
    expect(sim.requests.map((request) => request.status)).toEqual([200, 200, 429, 429, 429]);
    expect(calls).toEqual(['take', 'take', 'take', '429 1000', 'take', '429 1000', 'take', '429 1000']);
  });

  it('holds for the partner’s wait by the partner’s clock: an HTTP-date Retry-After against its Date', async () => {
    // The partner's clock is an hour ahead of ours; it asks for 10 s.
    const partnerNow = Math.floor(Date.now() / 1000) * 1000 + 3_600_000;
    const date = httpDate(partnerNow);

    const { heldMs } = await holdAfter429({ date, 'retry-after': httpDate(partnerNow + 10_000) });

    expect(heldMs).toBeGreaterThanOrEqual(10_000 - 50);
    expect(heldMs).toBeLessThanOrEqual(10_000 + 1_000);
  });

  it('clamps a Retry-After years ahead to the longest hold and reports it with the partner’s words', async () => {
    const date = httpDate(Date.now());
    const retryAfter = 'Fri, 01 Jan 2100 00:00:00 GMT';

    const { heldMs, longHolds } = await holdAfter429({ date, 'retry-after': retryAfter });

    expect(heldMs).toBeGreaterThan(BUDGET_POLICY.maxHoldMs - 1_000);
    expect(heldMs).toBeLessThanOrEqual(BUDGET_POLICY.maxHoldMs + 1_000);
    expect(longHolds).toMatchObject([{ clamped: true, heldMs: BUDGET_POLICY.maxHoldMs, retryAfter, date }]);
  });

  it('fails a request the shared hold keeps past its timeout or deadline as rate limiting, naming the hold', async () => {
    const { budget } = memoryBudget();
    await budget.take();
    await budget.rateLimited(120_000);
    const client = (requestTimeoutMs: number) =>
      createPartnerClient({
        baseUrl: partner.url,
        token: async () => TOKEN,
        dispatcher: withRequestBudget(agent, budget),
        timeouts: { requestTimeoutMs },
      });
    const held = {
      kind: 'retry-later',
      reason: 'rate-limited',
      message: expect.stringMatching(
        /^GET \/v1\/orderUpdates: held by the token's shared rate-limit hold until \d{4}-\d\d-\d\dT/,
      ),
    };

    // Cut by the request's own timeout (the run has time left), then by the run's deadline.
    const timedOut = client(300).getOrderUpdates({}, { deadline: Date.now() + 10_000 });
    await expect(timedOut).rejects.toMatchObject({ ...held, deadlinePassed: false });
    const outOfTime = client(30_000).getOrderUpdates({}, { deadline: Date.now() + 1_000 });
    await expect(outOfTime).rejects.toMatchObject({ ...held, deadlinePassed: true });
    expect(partner.requests).toEqual([]);
  });
});
