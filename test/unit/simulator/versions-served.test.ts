import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../tools/simulator/index.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ token: 't', feed: { seed: 1, orders: 30 } });
});
afterAll(async () => sim?.close());

async function get(path: string) {
  const response = await fetch(`${sim.url}${path}`, { headers: { authorization: 'Bearer t' } });
  return (await response.json()) as { data: unknown[]; nextPageId?: string };
}

describe('versionsServed', () => {
  it('counts the order versions in every page answered, scenarios included', async () => {
    const first = await get('/v1/orderUpdates?pageSize=7');
    const second = await get(
      `/v1/orderUpdates?pageSize=5&pageId=${encodeURIComponent(first.nextPageId ?? '')}`,
    );
    const scenario = await get('/test-payments/v1/orderUpdates');
    expect(sim.versionsServed()).toBe(first.data.length + second.data.length + scenario.data.length);
    expect(sim.versionsServed()).toBe(14);
  });
});
