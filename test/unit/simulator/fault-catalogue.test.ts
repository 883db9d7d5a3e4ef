// The fault catalogue (tools/simulator/faults.ts) over real HTTP: each fault served as its entry says, the
// layers composed, the dice deterministic, the oracle of what was delivered; then each named fault scenario.
// The client here is undici's `request`, which neither decodes nor follows anything: the bytes as sent.
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { FAULT_CATALOGUE } from '../../../tools/simulator/faults.js';
import {
  type FaultOptions,
  type RunningSimulator,
  SCENARIO_EXPECTATIONS,
  startSimulator,
} from '../../../tools/simulator/index.js';
import { SCENARIOS } from '../../../tools/simulator/scenarios/index.js';
import {
  FAULT_SCENARIO_IDS,
  type FaultScenarioId,
  RETRY_AFTER_FORMS,
} from '../../../tools/simulator/types.js';
import { finalState, TOKEN, updatesPath, type WireOrder, type WirePage } from './support.js';

const FEED = { seed: 31, orders: 40 };
const agents: Agent[] = [];
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.close()));
});

/** A fresh connection per request unless `agent` is given (keep-alive reuse is what some faults need). */
function freshAgent(): Agent {
  const agent = new Agent();
  agents.push(agent);
  return agent;
}

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

async function raw(
  base: string,
  path: string,
  options: { agent?: Agent; signal?: AbortSignal; maxBytes?: number } = {},
): Promise<Raw> {
  const res = await request(`${base}${path}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
    dispatcher: options.agent ?? freshAgent(),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (options.maxBytes !== undefined && size >= options.maxBytes) {
      res.body.destroy();
      break;
    }
  }
  return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
}

/** The body decoded as its Content-Encoding says. */
function decoded(answer: Raw): string {
  const coding = answer.headers['content-encoding'];
  if (coding === 'gzip') return gunzipSync(answer.body).toString();
  if (coding === 'deflate') return inflateSync(answer.body).toString();
  if (coding === 'br') return brotliDecompressSync(answer.body).toString();
  return answer.body.toString();
}

async function withSimulator<T>(
  faults: FaultOptions,
  run: (sim: RunningSimulator) => Promise<T>,
): Promise<T> {
  const sim = await startSimulator({ token: TOKEN, feed: FEED, faults });
  try {
    return await run(sim);
  } finally {
    await sim.close();
  }
}

/**
 * A correct client of any named scenario or faulty feed, quick: decodes every coding, ignores a byte order mark,
 * retries resets, 5xx,
 * 429 (at once: the simulator does not enforce Retry-After), 3xx and unreadable 200s, restarts on 404 pageId
 * not found, halves the page size of a body over `capBytes`; returns every record of every page read.
 */
async function drain(
  base: string,
  prefix: string,
  capBytes = 10 * 1024 * 1024,
): Promise<{ records: WireOrder[]; attempts: number }> {
  const records: WireOrder[] = [];
  let pageId: string | undefined;
  let pageSize = 10;
  for (let attempts = 1; attempts < 500; attempts++) {
    let answer: Raw;
    try {
      answer = await raw(base, updatesPath(prefix, { pageId, pageSize }), {
        signal: AbortSignal.timeout(5_000),
        maxBytes: capBytes + 1,
      });
    } catch {
      continue;
    }
    if (answer.body.length > capBytes) {
      pageSize = Math.max(1, pageSize >> 1);
      continue;
    }
    if (answer.status === 404) {
      pageId = undefined;
      continue;
    }
    if (answer.status !== 200) continue;
    let page: WirePage;
    try {
      // A leading byte order mark ignored, as RFC 8259 (8.1) lets a parser do.
      page = JSON.parse(decoded(answer).replace(/^\uFEFF/, ''));
    } catch {
      continue;
    }
    if (!Array.isArray(page?.data) || typeof page.hasMore !== 'boolean') continue;
    records.push(...page.data);
    pageId = page.nextPageId ?? pageId;
    if (!page.hasMore) return { records, attempts };
  }
  throw new Error(`drain of ${prefix}: no end`);
}

const key = (order: WireOrder) => `${order.id}:${order.version}`;

describe('the fault catalogue', () => {
  it('describes every fault once, each with its class and its option', () => {
    const faults = FAULT_CATALOGUE.map((entry) => entry.fault);
    expect(new Set(faults).size).toBe(faults.length);
    for (const entry of FAULT_CATALOGUE) {
      expect(entry.does.length).toBeGreaterThan(10);
      if (entry.class.kind !== 'exact') expect(entry.class.outcome).toMatch(/^[a-z-]+$/);
    }
    // Every named fault scenario shows a fault of the catalogue, but escape-heavy, which shows data.
    const shown = new Set(FAULT_CATALOGUE.flatMap((entry) => entry.scenarios ?? []));
    expect(FAULT_SCENARIO_IDS.filter((id) => !shown.has(id))).toEqual(['escape-heavy']);
  });
});

describe('answer faults', () => {
  it('429s carry Retry-After in each form in turn, HTTP-dates and Date in the partner’s skewed clock', async () => {
    const skew = 3_600_000;
    const forms = RETRY_AFTER_FORMS;
    await withSimulator(
      { seed: 1, rateLimit: 1, retryAfterSeconds: 2, retryAfterForms: forms, clockSkewMs: skew },
      async (sim) => {
        const answers = [];
        for (const _ of forms) answers.push(await raw(sim.url, updatesPath('')));
        const now = Date.now();
        const values = answers.map((answer) => answer.headers['retry-after'] as string | undefined);
        expect(answers.every((answer) => answer.status === 429)).toBe(true);
        expect(values[0]).toBe('2');
        expect(Date.parse(values[1] ?? '') - now).toBeGreaterThan(skew);
        expect(Date.parse(values[1] ?? '') - now).toBeLessThanOrEqual(skew + 3_000);
        expect(Date.parse(values[2] ?? '')).toBeLessThan(now + skew);
        expect(Number(values[3])).toBeGreaterThan(365 * 86_400);
        expect(Date.parse(values[4] ?? '') - now).toBeGreaterThan(4 * 365 * 86_400_000);
        expect(values[5]).toBe('soon');
        expect(values[6]).toBeUndefined();
        for (const answer of answers) {
          expect(Date.parse(String(answer.headers.date)) - now).toBeGreaterThan(skew - 5_000);
        }
        expect(sim.faultCounts()).toEqual({ 'rate-limit': 7, 'skewed-clock': 7 });
      },
    );
  });

  it('5xx come with a JSON, an HTML, an empty body and one echoing the token', async () => {
    await withSimulator(
      { seed: 2, serverError: 1, serverErrorBodies: ['json', 'html', 'empty', 'token-echo'] },
      async (sim) => {
        const bodies = [];
        for (let i = 0; i < 4; i++) {
          const answer = await raw(sim.url, updatesPath(''));
          expect([500, 502, 503]).toContain(answer.status);
          bodies.push(answer.body.toString());
        }
        expect(JSON.parse(bodies[0] ?? '')).toHaveProperty('message');
        expect(bodies[1]).toMatch(/^<html>/);
        expect(bodies[2]).toBe('');
        expect(bodies[3]).toContain(`Bearer ${TOKEN}`);
      },
    );
  });

  it('3xx go to a login page with a query, the statuses in turn; 200s that are no Page in turn', async () => {
    await withSimulator({ seed: 3, redirect: 1 }, async (sim) => {
      const statuses = [];
      for (let i = 0; i < 5; i++) {
        const answer = await raw(sim.url, updatesPath(''));
        statuses.push(answer.status);
        expect(new URL(String(answer.headers.location)).search).not.toBe('');
      }
      expect(statuses).toEqual([302, 301, 307, 308, 303]);
    });
    await withSimulator({ seed: 4, nonPage200: 1 }, async (sim) => {
      const bodies = [];
      for (let i = 0; i < 7; i++) {
        const answer = await raw(sim.url, updatesPath(''));
        expect(answer.status).toBe(200);
        bodies.push(answer.body.toString());
      }
      expect(bodies.slice(1)).toEqual([
        '',
        'OK',
        '[]',
        'null',
        '{"status":"ok"}',
        expect.stringContaining('"hasMore":"false"'),
      ]);
      expect(bodies[0]).toMatch(/^<!DOCTYPE html>/);
    });
  });

  it('a revoked token answers 401 from a request on; an outage answers 503 or resets, then ends', async () => {
    await withSimulator({ seed: 5, revokeTokenAfter: 2 }, async (sim) => {
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await raw(sim.url, updatesPath(''))).status);
      expect(statuses).toEqual([200, 200, 401, 401]);
    });
    // The simulator's clock is Date, faked (timers and sockets stay real): the window is open exactly while the
    // test says, however slowly a loaded machine answers.
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    await withSimulator({ seed: 6, outages: [{ afterMs: 0, forMs: 400 }] }, async (sim) => {
      const during = [];
      for (let i = 0; i < 4; i++)
        during.push(
          await raw(sim.url, updatesPath('')).then(
            (a) => a.status,
            () => 0,
          ),
        );
      vi.setSystemTime(Date.now() + 400);
      const after = await raw(sim.url, updatesPath(''));
      expect(during).toEqual([503, 0, 503, 0]);
      expect(after.status).toBe(200);
      expect(sim.faultCounts()).toEqual({ outage: 4 });
    });
  });

  it('a request on a reused keep-alive connection is dropped unanswered; one on a fresh connection is not', async () => {
    await withSimulator({ seed: 7, keepAliveDrop: 1 }, async (sim) => {
      // undici may open a second connection before it reuses the first: a few requests on one agent.
      const agent = freshAgent();
      const outcomes = [];
      for (let i = 0; i < 4; i++) {
        outcomes.push(
          await raw(sim.url, updatesPath(''), { agent }).then(
            (a) => a.status,
            (e: Error) => e.message,
          ),
        );
      }
      expect(outcomes[0]).toBe(200);
      expect(
        outcomes.filter((outcome) => outcome !== 200).every((o) => /closed|reset|socket/i.test(String(o))),
      ).toBe(true);
      const dropped = sim.requests.filter((r) => r.fault === 'keep-alive-drop');
      expect(dropped.length).toBe(outcomes.filter((outcome) => outcome !== 200).length);
      expect(dropped.length).toBeGreaterThan(0);
      expect((await raw(sim.url, updatesPath(''))).status).toBe(200);
    });
  });
});

describe('page faults', () => {
  it('a stuck cursor, a page without nextPageId, a cursor cycle for ever from a point of the stream', async () => {
    await withSimulator({ seed: 8, stuckCursor: 1 }, async (sim) => {
      const first = JSON.parse((await raw(sim.url, updatesPath(''))).body.toString()) as WirePage;
      const stuck = await raw(sim.url, updatesPath('', { pageId: first.nextPageId }));
      expect(JSON.parse(stuck.body.toString())).toEqual({
        data: [],
        hasMore: true,
        nextPageId: first.nextPageId,
      });
    });
    await withSimulator({ seed: 9, missingNextPageId: 1 }, async (sim) => {
      const page = JSON.parse((await raw(sim.url, updatesPath(''))).body.toString()) as WirePage;
      expect(page).toMatchObject({ hasMore: true });
      expect(page.data).toHaveLength(10);
      expect(page.nextPageId).toBeUndefined();
    });
    await withSimulator({ seed: 10, cursorCycleAt: 0.5 }, async (sim) => {
      let pageId: string | undefined;
      const sent: Array<string | undefined> = [];
      const next: Array<string | undefined> = [];
      for (let i = 0; i < 12; i++) {
        const page = JSON.parse(
          (await raw(sim.url, updatesPath('', { pageId, pageSize: 10 }))).body.toString(),
        );
        expect(page.data.length).toBeGreaterThan(0);
        sent.push(pageId);
        next.push(page.nextPageId);
        pageId = page.nextPageId;
      }
      // Before the cycle the cursor moves on; from it on, each page hands back the cursor it was sent.
      const cycling = next.findIndex((cursor, i) => cursor === sent[i]);
      expect(cycling).toBeGreaterThan(0);
      expect(next.slice(cycling)).toEqual(sent.slice(cycling));
      const length = sim.oracle('stream').entries;
      expect(sim.oracle('delivered').entries).toBeLessThan(length);
    });
  });

  it('floods a page past pageSize: the stream ahead, junk records first, or duplicates first; within a byte budget', async () => {
    for (const [filler, check] of [
      ['stream', (page: WirePage) => expect(new Set(page.data.map(key)).size).toBe(page.data.length)],
      [
        'junk',
        (page: WirePage) => expect(page.data.slice(0, 4).map((r) => JSON.stringify(r))).toContain('{}'),
      ],
      [
        'duplicates',
        (page: WirePage) => expect(new Set(page.data.map(key)).size).toBeLessThan(page.data.length),
      ],
    ] as const) {
      await withSimulator(
        {
          seed: 11,
          pageFlood: 1,
          pageFloodFiller: filler,
          pageFloodRecords: 60,
          pageFloodMaxBytes: 10 * 1024 * 1024,
        },
        async (sim) => {
          const first = JSON.parse((await raw(sim.url, updatesPath('', { pageSize: 5 }))).body.toString());
          const second = await raw(sim.url, updatesPath('', { pageSize: 5, pageId: first.nextPageId }));
          const page = JSON.parse(second.body.toString()) as WirePage;
          expect(page.data.length).toBeGreaterThan(5 * 4);
          check(page);
        },
      );
    }
    await withSimulator(
      { seed: 12, pageFlood: 1, pageFloodRecords: 1_000, pageFloodMaxBytes: 20_000 },
      async (sim) => {
        const answer = await raw(sim.url, updatesPath('', { pageSize: 5 }));
        expect(answer.body.length).toBeLessThanOrEqual(20_000 + 200);
        expect(JSON.parse(answer.body.toString()).data.length).toBeGreaterThan(5);
      },
    );
  });

  it('a giant order is over the cap even in a page of one; it is never delivered, the pages before it are', async () => {
    await withSimulator({ seed: 13, giantOrderAt: 0.5, giantOrderBytes: 3 * 1024 * 1024 }, async (sim) => {
      const total = sim.oracle('stream').entries;
      const giantAt = Math.floor(0.5 * total);
      // Pages of 5 up to the one holding it; from its cursor, pages of 1 until the giant itself.
      let pageId: string | undefined;
      let answer = await raw(sim.url, updatesPath('', { pageSize: 5 }));
      while (answer.body.length < 3 * 1024 * 1024) {
        pageId = JSON.parse(answer.body.toString()).nextPageId;
        answer = await raw(sim.url, updatesPath('', { pageId, pageSize: 5 }));
      }
      answer = await raw(sim.url, updatesPath('', { pageId, pageSize: 1 }));
      while (answer.body.length < 3 * 1024 * 1024) {
        pageId = JSON.parse(answer.body.toString()).nextPageId;
        answer = await raw(sim.url, updatesPath('', { pageId, pageSize: 1 }));
      }
      expect(JSON.parse(answer.body.toString()).data).toHaveLength(1);
      expect(sim.requests.at(-1)?.fault).toBe('giant-order');
      const delivered = sim.oracle('delivered');
      expect(delivered.entries).toBeLessThanOrEqual(giantAt);
      expect(delivered.entries).toBeGreaterThanOrEqual(giantAt - 10);
    });
  });
});

describe('delivery faults', () => {
  it('slow headers arrive after slowMs; a trickle sends the body piece by piece and finishes', async () => {
    await withSimulator({ seed: 14, slow: 1, slowMs: 300 }, async (sim) => {
      const started = Date.now();
      const answer = await raw(sim.url, updatesPath(''));
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(JSON.parse(answer.body.toString()).data).toHaveLength(10);
    });
    await withSimulator(
      { seed: 15, trickle: 1, trickleChunkBytes: 2_000, trickleIntervalMs: 40 },
      async (sim) => {
        const started = Date.now();
        const answer = await raw(sim.url, updatesPath(''));
        const chunks = Math.ceil(answer.body.length / 2_000);
        expect(Date.now() - started).toBeGreaterThanOrEqual((chunks - 1) * 40 - 10);
        expect(JSON.parse(answer.body.toString()).data).toHaveLength(10);
        expect(sim.oracle('delivered').entries).toBe(10);
      },
    );
  });

  it('resets after the headers, cuts a body short of its Content-Length, cuts JSON in an escape-heavy name', async () => {
    await withSimulator({ seed: 16, resetAfterHeaders: 1 }, async (sim) => {
      await expect(raw(sim.url, updatesPath(''))).rejects.toThrow();
      expect(sim.requests.at(-1)).toMatchObject({ status: 200, fault: 'reset-after-headers' });
    });
    await withSimulator({ seed: 17, truncatedBody: 1 }, async (sim) => {
      await expect(raw(sim.url, updatesPath(''))).rejects.toThrow();
      expect(sim.oracle('delivered').entries).toBe(0);
    });
    const sim = await startSimulator({
      token: TOKEN,
      feed: { ...FEED, escapeHeavy: 1, longStringBytes: 4_000 },
      faults: { seed: 18, truncatedJson: 1 },
    });
    try {
      const answer = await raw(sim.url, updatesPath(''));
      const text = answer.body.toString();
      expect(answer.status).toBe(200);
      expect(Number(answer.headers['content-length'])).toBe(answer.body.length);
      expect(() => JSON.parse(text)).toThrow();
      expect(text).toMatch(/\d{16}/);
      expect(text.endsWith('\\"\\\\') || text.endsWith('\\"') || text.endsWith('\\')).toBe(true);
      expect(sim.oracle('delivered').entries).toBe(0);
    } finally {
      await sim.close();
    }
  });

  it('an endless body goes on until the client hangs up; the request is recorded with its duration', async () => {
    await withSimulator({ seed: 19, endlessBody: 1 }, async (sim) => {
      const answer = await raw(sim.url, updatesPath(''), { maxBytes: 4 * 1024 * 1024 });
      expect(answer.body.length).toBeGreaterThanOrEqual(4 * 1024 * 1024);
      expect(answer.body.subarray(0, 9).toString()).toBe('{"data":[');
      await expect.poll(() => sim.requests.at(-1)?.durationMs).toBeGreaterThanOrEqual(0);
      expect(sim.requests.at(-1)).toMatchObject({ status: 200, fault: 'endless-body' });
    });
  });
});

describe('codings', () => {
  it.each(['gzip', 'deflate', 'br'] as const)(
    '%s codes pages and errors alike, whatever the request asked for',
    async (coding) => {
      await withSimulator(
        { seed: 20, encoding: 1, codings: [coding], expireCursor: 1, limits: { 'expire-cursor': 1 } },
        async (sim) => {
          const first = await raw(sim.url, updatesPath(''));
          expect(first.headers['content-encoding']).toBe(coding);
          const page = JSON.parse(decoded(first)) as WirePage;
          expect(page.data).toHaveLength(10);
          const expired = await raw(sim.url, updatesPath('', { pageId: page.nextPageId }));
          expect(expired.status).toBe(404);
          expect(JSON.parse(decoded(expired))).toEqual({ message: 'pageId not found' });
        },
      );
    },
  );

  it('a byte order mark goes before pages and errors alike, under the coding', async () => {
    const faults = { seed: 23, byteOrderMark: 1, encoding: 1, codings: ['gzip'] as const, expireCursor: 1 };
    await withSimulator({ ...faults, limits: { 'expire-cursor': 1 } }, async (sim) => {
      const first = await raw(sim.url, updatesPath(''));
      expect(first.headers['content-encoding']).toBe('gzip');
      const text = decoded(first);
      expect(text.startsWith('\uFEFF{"data":[')).toBe(true);
      const page = JSON.parse(text.slice(1)) as WirePage;
      expect(page.data).toHaveLength(10);
      const expired = await raw(sim.url, updatesPath('', { pageId: page.nextPageId }));
      expect([expired.status, decoded(expired)]).toEqual([404, '\uFEFF{"message":"pageId not found"}']);
      expect(sim.faultCounts()).toMatchObject({ 'byte-order-mark': 2, encoding: 2 });
    });
  });

  it('a bomb is small on the wire and decodes to bombBytes of a Page’s opening and whitespace', async () => {
    await withSimulator({ seed: 21, bomb: 1, codings: ['gzip'], bombBytes: 8 * 1024 * 1024 }, async (sim) => {
      const answer = await raw(sim.url, updatesPath(''));
      expect(answer.body.length).toBeLessThan(64 * 1024);
      const text = decoded(answer);
      expect(text.length).toBe(8 * 1024 * 1024);
      expect(text.startsWith('{"data":[ ')).toBe(true);
      expect(sim.oracle('delivered').entries).toBe(0);
    });
  });
});

describe('composition and determinism', () => {
  const MIX: FaultOptions = {
    seed: 22,
    rateLimit: 0.1,
    retryAfterForms: ['seconds', 'junk', 'far-future-date'],
    serverError: 0.1,
    serverErrorBodies: ['html', 'empty'],
    connectionReset: 0.05,
    redirect: 0.05,
    nonPage200: 0.05,
    expireCursor: 0.05,
    repeatPage: 0.05,
    stuckCursor: 0.05,
    pageFlood: 0.1,
    pageFloodRecords: 30,
    resetAfterHeaders: 0.05,
    truncatedBody: 0.05,
    encoding: 0.5,
    byteOrderMark: 0.2,
    clockSkewMs: -90_000,
  };

  it('the same seed and request sequence draw the same faults; a correct client still drains the feed', async () => {
    const run = () =>
      withSimulator(MIX, async (sim) => {
        const { records } = await drain(sim.url, '');
        return {
          faults: sim.requests.map((r) => [r.fault, ...(r.also ?? [])].join('+')),
          seen: new Set(records.map(key)),
          distinct: sim.expected().distinctVersions,
          delivered: sim.oracle('delivered'),
          stream: sim.oracle('stream'),
        };
      });
    const [one, two] = [await run(), await run()];
    expect(one.faults).toEqual(two.faults);
    expect(one.seen.size).toBe(one.distinct);
    // Layers compose: some answer carries a fault and a coding at once.
    expect(one.faults.some((faults) => /\+encoding/.test(faults) && !faults.startsWith('+'))).toBe(true);
    expect([...one.delivered.versionKeys].sort()).toEqual([...one.stream.versionKeys].sort());
    expect(one.delivered.orders).toEqual(one.stream.orders);
  });

  it('limits and afterRequests schedule a fault exactly: the second request, once', async () => {
    await withSimulator(
      { seed: 23, rateLimit: 1, afterRequests: 1, limits: { 'rate-limit': 1 } },
      async (sim) => {
        const statuses = [];
        for (let i = 0; i < 4; i++) statuses.push((await raw(sim.url, updatesPath(''))).status);
        expect(statuses).toEqual([200, 429, 200, 200]);
      },
    );
  });
});

describe('escape-heavy records', () => {
  it('carry long escape-heavy names (some as ASCII-only JSON) and leave money and state as they were', async () => {
    const plain = await startSimulator({ token: TOKEN, feed: FEED });
    const heavy = await startSimulator({
      token: TOKEN,
      feed: { ...FEED, escapeHeavy: 0.5, longStringBytes: 2_000 },
    });
    try {
      const served = await raw(heavy.url, updatesPath('', { pageSize: 100 }));
      const text = served.body.toString();
      const page = JSON.parse(text) as WirePage;
      const names = page.data.map((order) => order.items[0]?.name ?? '');
      expect(
        names.some((name) => name.length >= 500 && name.includes('"\\') && name.includes('4111111111111111')),
      ).toBe(true);
      expect(text).toMatch(/\\u00e9|\\ud83d/);
      expect(heavy.expected()).toEqual(plain.expected());
    } finally {
      await Promise.all([plain.close(), heavy.close()]);
    }
  });
});

/** What the first page request of each named fault scenario shows (the rest: it drains to its expectation). */
const FIRST_REQUEST: Record<FaultScenarioId, (sim: RunningSimulator, prefix: string) => Promise<void>> = {
  gzip: async (sim, prefix) => {
    expect((await raw(sim.url, updatesPath(prefix))).headers['content-encoding']).toBe('gzip');
  },
  deflate: async (sim, prefix) => {
    expect((await raw(sim.url, updatesPath(prefix))).headers['content-encoding']).toBe('deflate');
  },
  brotli: async (sim, prefix) => {
    expect((await raw(sim.url, updatesPath(prefix))).headers['content-encoding']).toBe('br');
  },
  'byte-order-mark': async (sim, prefix) => {
    const answer = await raw(sim.url, updatesPath(prefix));
    expect(answer.status).toBe(429);
    expect(answer.body.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
  },
  'gzip-bomb': async (sim, prefix) => {
    const answer = await raw(sim.url, updatesPath(prefix));
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(answer.body.length).toBeLessThan(1024 * 1024);
  },
  'slow-headers': async (sim, prefix) => {
    await expect(raw(sim.url, updatesPath(prefix), { signal: AbortSignal.timeout(1_000) })).rejects.toThrow();
  },
  'far-future-retry-after': async (sim, prefix) => {
    await raw(sim.url, updatesPath(prefix));
    const limited = await raw(sim.url, updatesPath(prefix));
    expect(limited.status).toBe(429);
    expect(Date.parse(String(limited.headers['retry-after']))).toBeGreaterThan(
      Date.now() + 4 * 365 * 86_400_000,
    );
  },
  'skewed-clock': async (sim, prefix) => {
    const first = await raw(sim.url, updatesPath(prefix));
    expect(Date.parse(String(first.headers.date)) - Date.now()).toBeGreaterThan(3_590_000);
    const limited = await raw(sim.url, updatesPath(prefix));
    expect(limited.status).toBe(429);
    expect(Date.parse(String(limited.headers['retry-after'])) - Date.now()).toBeGreaterThan(3_600_000);
  },
  'retry-after-forms': async (sim, prefix) => {
    const statuses = [];
    for (let i = 0; i < 30; i++) statuses.push((await raw(sim.url, updatesPath(prefix))).status);
    expect(statuses.filter((status) => status === 429)).toHaveLength(5);
  },
  'server-errors': async (sim, prefix) => {
    const bodies = [];
    for (let i = 0; bodies.length < 4 && i < 40; i++) {
      const answer = await raw(sim.url, updatesPath(prefix));
      if (answer.status >= 500) bodies.push(answer.body.toString());
    }
    expect(bodies[2]).toBe('');
    expect(bodies[3]).toContain(TOKEN);
  },
  'keep-alive-drop': async (sim, prefix) => {
    const agent = freshAgent();
    for (let i = 0; i < 4; i++) await raw(sim.url, updatesPath(prefix), { agent }).catch(() => undefined);
    expect(sim.requests.filter((r) => r.fault === 'keep-alive-drop').length).toBeGreaterThan(0);
  },
  'reset-after-headers': async (sim, prefix) => {
    await expect(raw(sim.url, updatesPath(prefix))).rejects.toThrow();
  },
  'truncated-body': async (sim, prefix) => {
    await expect(raw(sim.url, updatesPath(prefix))).rejects.toThrow();
  },
  'truncated-json': async (sim, prefix) => {
    const answer = await raw(sim.url, updatesPath(prefix));
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBeGreaterThan(64 * 1024);
    // Cut inside a run of escaped quotes and backslashes some 64 KiB long.
    expect(answer.body.toString()).toMatch(/[\\"]{60000}$/);
    expect(() => JSON.parse(answer.body.toString())).toThrow();
  },
  'endless-body': async (sim, prefix) => {
    const answer = await raw(sim.url, updatesPath(prefix), { maxBytes: 11 * 1024 * 1024 });
    expect(answer.body.length).toBeGreaterThan(10 * 1024 * 1024);
  },
  'non-page-200': async (sim, prefix) => {
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await raw(sim.url, updatesPath(prefix)));
    expect(
      answers.some((answer) => answer.status === 200 && !answer.body.toString().startsWith('{"data":[')),
    ).toBe(true);
  },
  'page-flood': async (sim, prefix) => {
    const page = JSON.parse((await raw(sim.url, updatesPath(prefix, { pageSize: 10 }))).body.toString());
    expect(page.data).toHaveLength(10_010);
    // The junk first: the page's own orders are its 10,001st to 10,010th records.
    expect(page.data.slice(0, 10_000).every((record: WireOrder) => !('total' in record))).toBe(true);
    expect(page.data.slice(10_000).every((record: WireOrder) => 'total' in record)).toBe(true);
  },
  outage: async (sim, prefix) => {
    expect((await raw(sim.url, updatesPath(prefix))).status).toBe(200);
    // Past the scenario's first 500 ms on the simulator's clock (Date, faked to the end of the test).
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    vi.setSystemTime(Date.now() + 500);
    const during = await raw(sim.url, updatesPath(prefix)).then(
      (a) => a.status,
      () => 0,
    );
    expect([0, 503]).toContain(during);
  },
  'escape-heavy': async (sim, prefix) => {
    const page = JSON.parse((await raw(sim.url, updatesPath(prefix))).body.toString()) as WirePage;
    expect(page.data.every((order) => (order.items[0]?.name.length ?? 0) >= 20_000)).toBe(true);
  },
  'giant-order': async (sim, prefix) => {
    const first = JSON.parse((await raw(sim.url, updatesPath(prefix, { pageSize: 20 }))).body.toString());
    expect(first.data).toHaveLength(20);
    const giant = await raw(sim.url, updatesPath(prefix, { pageSize: 1, pageId: first.nextPageId }));
    expect(giant.body.length).toBeGreaterThan(12 * 1024 * 1024);
  },
};

/** Shown by their first requests only: what costs real minutes (an outage, slow headers) or never ends. */
const NOT_DRAINED = new Set<FaultScenarioId>(['outage', 'giant-order', 'slow-headers']);

describe('named fault scenarios', () => {
  it.each(FAULT_SCENARIO_IDS)(
    '%s serves its fault, and a correct client ends with its expectation',
    async (id) => {
      const sim = await startSimulator({ token: TOKEN });
      try {
        await FIRST_REQUEST[id](sim, `/${id}`);
        const expected = SCENARIO_EXPECTATIONS[id];
        expect(expected.quarantined).toBe(id === 'page-flood' ? 4 : 0);
        if (NOT_DRAINED.has(id)) return;
        // The junk of a flood is no order: what a correct client keeps is the rest.
        const records = (await drain(sim.url, `/${id}`)).records.filter((record) => 'total' in record);
        expect(finalState(records)).toEqual({ orders: expected.orders, sales: expected.sales });
        expect(new Set(records.map(key)).size).toBe(expected.stored);
      } finally {
        await sim.close();
      }
    },
    60_000,
  );

  it('giant-order stops a correct client at the order over the cap, everything before it read', () => {
    const expected = SCENARIO_EXPECTATIONS['giant-order'];
    const served = SCENARIOS['giant-order'].polls.flat();
    expect(expected).toMatchObject({ stop: 'order-over-body-cap', stored: served.length - 1 });
    expect(expected.orders.map((order) => order.id)).not.toContain(served.at(-1)?.order.id);
  });
});
