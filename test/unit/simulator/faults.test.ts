import { describe, expect, it } from 'vitest';
import { decodeCursor } from '../../../tools/simulator/cursor.js';
import { type FaultOptions, type RunningSimulator, startSimulator } from '../../../tools/simulator/index.js';
import { TokenRateLimit } from '../../../tools/simulator/token-rate-limit.js';
import { get, TOKEN, updatesPath, type WireOrder, type WirePage } from './support.js';

const FEED = { seed: 21, orders: 60 };
const key = (o: WireOrder): string => `${o.id}:${o.version}`;

async function withSimulator(
  faults: FaultOptions,
  run: (sim: RunningSimulator) => Promise<void>,
): Promise<void> {
  const sim = await startSimulator({ token: TOKEN, feed: FEED, faults });
  try {
    await run(sim);
  } finally {
    await sim.close();
  }
}

/**
 * A minimal correct client: retries 429/5xx/resets at once (tests need no real waits), restarts without
 * pageId on 404 pageId not found, and keeps every order version it sees.
 */
async function robustDrain(sim: RunningSimulator, pageSize = 10): Promise<WireOrder[]> {
  const seen: WireOrder[] = [];
  let pageId: string | undefined;
  for (let attempt = 0; attempt < 5_000; attempt++) {
    let res: Awaited<ReturnType<typeof get<WirePage>>>;
    try {
      res = await get<WirePage>(sim.url, updatesPath('', { pageId, pageSize }));
    } catch {
      continue; // connection reset
    }
    if (res.status === 404) {
      pageId = undefined;
      continue;
    }
    if (res.status !== 200) continue;
    seen.push(...res.body.data);
    pageId = res.body.nextPageId ?? pageId;
    if (!res.body.hasMore) return seen;
  }
  throw new Error('robustDrain: no end');
}

describe('fault injection on the generated feed', () => {
  it('429 alternates Retry-After as delta-seconds and as an HTTP-date', async () => {
    await withSimulator({ seed: 1, rateLimit: 1, retryAfterSeconds: 2 }, async (sim) => {
      const values = [];
      for (let i = 0; i < 4; i++) {
        const res = await get(sim.url, updatesPath(''));
        expect(res.status).toBe(429);
        values.push(res.headers.get('retry-after') ?? '');
      }
      expect(values[0]).toBe('2');
      expect(values[2]).toBe('2');
      const date = Date.parse(values[1] ?? '');
      expect(values[1]).toMatch(/GMT$/);
      expect(date - Date.now()).toBeGreaterThan(1_000);
      expect(date - Date.now()).toBeLessThanOrEqual(3_000);
      expect(sim.faultCounts()).toEqual({ 'rate-limit': 4 });
    });
  });

  it('5xx come in bursts of serverErrorBurst', async () => {
    await withSimulator({ seed: 2, serverError: 0.2, serverErrorBurst: 3 }, async (sim) => {
      const statuses: number[] = [];
      for (let i = 0; i < 80; i++) statuses.push((await get(sim.url, updatesPath(''))).status);
      const runs = statuses
        .map((s) => (s >= 500 ? 'x' : '.'))
        .join('')
        .split('.')
        .filter((run) => run.length > 0);
      expect(runs.length).toBeGreaterThan(0);
      expect(runs.every((run) => run.length >= 3)).toBe(true);
      expect(statuses.filter((s) => s >= 500).every((s) => [500, 502, 503].includes(s))).toBe(true);
    });
  });

  it('a connection reset destroys the socket without a response, and is logged', async () => {
    await withSimulator({ seed: 3, connectionReset: 1 }, async (sim) => {
      await expect(get(sim.url, updatesPath(''))).rejects.toThrow();
      expect(sim.requests.at(-1)).toMatchObject({ status: 0, fault: 'connection-reset' });
    });
  });

  it('a slow response arrives after slowMs', async () => {
    await withSimulator({ seed: 4, slow: 1, slowMs: 150 }, async (sim) => {
      const started = Date.now();
      const res = await get<WirePage>(sim.url, updatesPath(''));
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      expect(res.body.data).toHaveLength(10);
      expect(sim.requests.at(-1)).toMatchObject({ status: 200, fault: 'slow' });
    });
  });

  it('repeated pages overlap what was served: duplicates, nothing skipped', async () => {
    await withSimulator({ seed: 5, repeatPage: 0.3 }, async (sim) => {
      const seen = await robustDrain(sim);
      expect(sim.faultCounts()['repeat-page']).toBeGreaterThan(0);
      expect(seen.length).toBeGreaterThan(sim.expected().distinctVersions);
      expect(new Set(seen.map(key)).size).toBe(sim.expected().distinctVersions);
    });
  });

  it('expired cursors answer 404 pageId not found; restarting recovers everything', async () => {
    await withSimulator({ seed: 6, expireCursor: 0.05 }, async (sim) => {
      const seen = await robustDrain(sim, 50);
      expect(sim.faultCounts()['expire-cursor']).toBeGreaterThan(0);
      expect(new Set(seen.map(key)).size).toBe(sim.expected().distinctVersions);
      const expired = sim.requests.filter((r) => r.fault === 'expire-cursor');
      expect(expired.every((r) => r.url.includes('pageId=') && r.status === 404)).toBe(true);
    });
  });

  it('expires a cursor only at the frontier, each position once: a client restarting from the start passes', async () => {
    // Every cursor request rolls an expiry: only the furthest position's first is served (rule 4's purge of a
    // kept cursor); the replay behind it reads on.
    await withSimulator({ seed: 6, expireCursor: 1 }, async (sim) => {
      const seen = await robustDrain(sim, 50);
      expect(new Set(seen.map(key)).size).toBe(sim.expected().distinctVersions);
      let frontier = 0;
      const expired: number[] = [];
      for (const request of sim.requests) {
        const pageId = new URL(request.url, sim.url).searchParams.get('pageId');
        const position = pageId === null ? undefined : decodeCursor(pageId)?.p;
        if (position === undefined) continue;
        expect(request.fault === 'expire-cursor', `position ${position}, frontier ${frontier}`).toBe(
          position >= frontier && !expired.includes(position),
        );
        if (request.fault === 'expire-cursor') expired.push(position);
        frontier = Math.max(frontier, position);
      }
      expect(expired.length).toBeGreaterThan(1);
    });
  });

  it('a mix of every fault still lets a correct client drain the feed', async () => {
    const faults = {
      seed: 7,
      rateLimit: 0.05,
      serverError: 0.05,
      connectionReset: 0.05,
      slow: 0.05,
      slowMs: 5,
    };
    await withSimulator({ ...faults, repeatPage: 0.05, expireCursor: 0.02 }, async (sim) => {
      const seen = await robustDrain(sim, 25);
      expect(new Set(seen.map(key)).size).toBe(sim.expected().distinctVersions);
      const counted = Object.values(sim.faultCounts()).reduce((a, b) => a + b, 0);
      expect(counted).toBe(sim.requests.filter((r) => r.fault).length);
      expect(counted).toBeGreaterThan(0);
    });
  });

  it('leaves the scenario prefixes alone', async () => {
    await withSimulator({ seed: 8, rateLimit: 1 }, async (sim) => {
      expect((await get(sim.url, updatesPath('/test-multi-location'))).status).toBe(200);
      expect((await get(sim.url, updatesPath(''))).status).toBe(429);
    });
  });

  it('rolls the same faults for the same seed and request sequence', async () => {
    const sequence = async (): Promise<number[]> => {
      const statuses: number[] = [];
      await withSimulator({ seed: 9, rateLimit: 0.3, serverError: 0.3 }, async (sim) => {
        for (let i = 0; i < 20; i++) statuses.push((await get(sim.url, updatesPath(''))).status);
      });
      return statuses;
    };
    expect(await sequence()).toEqual(await sequence());
  });
});

describe('per-token rate limit (TokenRateLimit)', () => {
  it('lets a burst through, then one request per 1/R, refusing with the seconds until the next; per token', () => {
    const limit = new TokenRateLimit({ requestsPerSecond: 2, burst: 2 });

    expect([limit.check('a', 0), limit.check('a', 0), limit.check('a', 0)]).toEqual([
      undefined,
      undefined,
      1,
    ]);
    expect(limit.check('b', 0)).toBeUndefined();
    // Half a second refills one request; a 429 took nothing.
    expect([limit.check('a', 500), limit.check('a', 500)]).toEqual([undefined, 1]);
    expect(new TokenRateLimit({ requestsPerSecond: 1, burst: 1 }).check('c', 0)).toBeUndefined();
  });
});
