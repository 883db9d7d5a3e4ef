// The request budget's hook on the partner client (partner/budgeted-dispatcher.ts), over real HTTP against
// the simulator's per-token rate limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withRequestBudget } from '../../functions/core/partner/budgeted-dispatcher.js';
import { createPartnerAgent, createPartnerClient } from '../../functions/core/partner/client.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';

const TOKEN = 'budget-hook-token-5a1e';
let sim: RunningSimulator;
const agent = createPartnerAgent();

beforeAll(async () => {
  sim = await startSimulator({ token: TOKEN, tokenRateLimit: { requestsPerSecond: 1, burst: 2 } });
});
afterAll(async () => {
  await agent.close();
  await sim?.close();
});

describe('withRequestBudget', () => {
  it('takes a turn before every attempt and reports each 429 with its Retry-After', async () => {
    const calls: string[] = [];
    const budget = {
      take: async () => void calls.push('take'),
      rateLimited: async (retryAfterMs: number | undefined) => void calls.push(`429 ${retryAfterMs}`),
    };
    const partner = createPartnerClient({
      baseUrl: sim.url,
      token: async () => TOKEN,
      dispatcher: withRequestBudget(agent, budget),
      // The client's waits are skipped: the partner's bucket stays empty, so the retries meet 429s.
      sleep: async () => {},
      retryPolicy: { maxRateLimitRetries: 2 },
    });
    const deadline = Date.now() + 30_000;

    await partner.getOrderUpdates({ pageSize: 1 }, { deadline });
    await partner.getOrderUpdates({ pageSize: 1 }, { deadline });
    const third = partner.getOrderUpdates({ pageSize: 1 }, { deadline });

    await expect(third).rejects.toMatchObject({ kind: 'retry-later', reason: 'rate-limited' });
    expect(sim.requests.map((request) => request.status)).toEqual([200, 200, 429, 429, 429]);
    expect(calls).toEqual(['take', 'take', 'take', '429 1000', 'take', '429 1000', 'take', '429 1000']);
  });

  it('gives up the wait for a turn when the call is aborted, as an abort during the request would', async () => {
    const budget = {
      take: (signal?: AbortSignal) =>
        new Promise<void>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
      rateLimited: async () => {},
    };
    const partner = createPartnerClient({
      baseUrl: sim.url,
      token: async () => TOKEN,
      dispatcher: withRequestBudget(agent, budget),
    });

    const call = partner.getOrderUpdates({}, { deadline: Date.now() + 300 });

    await expect(call).rejects.toMatchObject({ kind: 'retry-later', deadlinePassed: true });
  });
});
