// The partner client against the partner simulator, scenario by scenario (spec section 4, "Test
// environment"): each stream is drained along its cursor chain until the repeated empty page of
// pagination rule 3, and the faults of the transport scenarios are checked from both ends.

import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient, type PartnerClientOptions } from '../../functions/core/partner/client.js';
import {
  AuthenticationError,
  CursorExpiredError,
  OrderNotFoundError,
  RetryLaterError,
} from '../../functions/core/partner/errors.js';
import type { PartnerApi, RawPage, RetryEvent } from '../../functions/core/partner/types.js';
import {
  type RunningSimulator,
  SCENARIO_EXPECTATIONS,
  SCENARIO_IDS,
  type ScenarioId,
  startSimulator,
} from '../../tools/simulator/index.js';

const TOKEN = 'sim-token-5b2d8e41';

let sim: RunningSimulator;
let agent: Agent;

beforeAll(async () => {
  sim = await startSimulator({ token: TOKEN });
  agent = new Agent({ connectTimeout: 2_000 });
});

afterAll(async () => {
  await agent.close();
  await sim.close();
});

interface Run {
  client: PartnerApi;
  events: RetryEvent[];
  /** Requested waits and how long each really took (the sleep is real: the simulator keeps time). */
  sleeps: Array<{ requested: number; actual: number }>;
}

function clientFor(scenario: ScenarioId, overrides: Partial<PartnerClientOptions> = {}): Run {
  const events: RetryEvent[] = [];
  const sleeps: Run['sleeps'] = [];
  const api = createPartnerClient({
    baseUrl: `${sim.url}/${scenario}`,
    token: async () => TOKEN,
    dispatcher: agent,
    sleep: async (ms) => {
      const started = Date.now();
      await new Promise((resolve) => setTimeout(resolve, ms));
      sleeps.push({ requested: ms, actual: Date.now() - started });
    },
    ...overrides,
  });
  // Retry events arrive through each call's own onRetry, as the poller counts them.
  const onRetry = (e: RetryEvent) => events.push(e);
  const client: PartnerApi = {
    getOrderUpdates: (query, call) => api.getOrderUpdates(query, { onRetry, ...call }),
    getOrder: (id, call) => api.getOrder(id, { onRetry, ...call }),
  };
  return { client, events, sleeps };
}

const within = (ms = 30_000) => ({ deadline: Date.now() + ms });

const requestsOf = (scenario: ScenarioId) => sim.requests.filter((r) => r.url.startsWith(`/${scenario}/`));

interface Drained {
  pages: RawPage[];
  records: Array<{ id: number; version: number }>;
  /** Runs of pages that end on hasMore false and carry data. */
  polls: number;
}

/**
 * Follows the cursor chain: pages until hasMore false (one poll), then the saved cursor again, which
 * either starts the next poll or answers rule 3 (data [], hasMore false, the same nextPageId).
 */
async function drain(client: PartnerApi): Promise<Drained> {
  const pages: RawPage[] = [];
  let page = await client.getOrderUpdates({}, within());
  pages.push(page);
  let polls = page.hasMore || page.data.length === 0 ? 0 : 1;
  for (let i = 0; page.nextPageId !== undefined; i++) {
    if (i > 500) throw new Error('cursor chain does not end');
    const cursor = page.nextPageId;
    const next = await client.getOrderUpdates({ pageId: cursor }, within());
    if (!next.hasMore && next.data.length === 0) {
      expect(next).toEqual({ hasMore: false, data: [], nextPageId: cursor });
      break;
    }
    pages.push(next);
    if (!next.hasMore) polls += 1;
    page = next;
  }
  const records = pages.flatMap((p) => p.data) as Array<{ id: number; version: number }>;
  for (const record of records) {
    expect(record).toEqual(expect.objectContaining({ id: expect.any(Number), version: expect.any(Number) }));
  }
  return { pages, records, polls };
}

function highestVersions(records: Drained['records']): Array<[number, number]> {
  const highest = new Map<number, number>();
  for (const { id, version } of records) highest.set(id, Math.max(version, highest.get(id) ?? 0));
  return [...highest].sort(([a], [b]) => a - b);
}

// Checked in their own tests below (test-rate-limit drains there too: its real one-second wait runs once).
const SPECIAL: readonly ScenarioId[] = [
  'test-invalid-token',
  'test-expired-page-id',
  'test-empty-stream',
  'test-rate-limit',
];
const DATA_SCENARIOS = SCENARIO_IDS.filter((id) => !SPECIAL.includes(id));

describe('every data scenario drains along its cursor chain', () => {
  it.each(DATA_SCENARIOS)('%s', async (scenario) => {
    const { client } = clientFor(scenario);
    const expected = SCENARIO_EXPECTATIONS[scenario];

    const drained = await drain(client);

    expect(drained.records).toHaveLength(expected.versions);
    expect(drained.polls).toBe(expected.polls);
    expect(highestVersions(drained.records)).toEqual(expected.orders.map((o) => [o.id, o.version]));
  });
});

describe('transport scenarios', () => {
  it('test-authentication: the token travels only in the Authorization header', async () => {
    const { client } = clientFor('test-authentication');
    await drain(client);
    const requests = requestsOf('test-authentication');
    expect(requests.length).toBeGreaterThan(0);
    for (const r of requests) {
      expect(r.authorization).toBe(`Bearer ${TOKEN}`);
      expect(r.url).not.toContain(TOKEN);
      expect(r.status).toBe(200);
    }
  });

  it('test-invalid-token: AuthenticationError after exactly one request', async () => {
    const { client, events } = clientFor('test-invalid-token');
    await expect(client.getOrderUpdates({}, within())).rejects.toBeInstanceOf(AuthenticationError);
    expect(requestsOf('test-invalid-token')).toHaveLength(1);
    expect(events).toEqual([]);
  });

  it('test-rate-limit: waits at least Retry-After, then the same request succeeds', async () => {
    const { client, events, sleeps } = clientFor('test-rate-limit');

    const drained = await drain(client);

    const expected = SCENARIO_EXPECTATIONS['test-rate-limit'];
    expect(drained.records).toHaveLength(expected.versions);
    expect(drained.polls).toBe(expected.polls);
    expect(highestVersions(drained.records)).toEqual(expected.orders.map((o) => [o.id, o.version]));
    expect(events.map((e) => [e.kind, e.status])).toEqual([['rate-limited', 429]]);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]?.requested).toBeGreaterThanOrEqual(1_000);
    expect(sleeps[0]?.actual).toBeGreaterThanOrEqual(1_000);
    const requests = requestsOf('test-rate-limit');
    const limited = requests.findIndex((r) => r.status === 429);
    expect(limited).toBeGreaterThan(0);
    expect(requests[limited + 1]).toMatchObject({ url: requests[limited]?.url, status: 200 });
  });

  it('test-rate-limit: a deadline too close for Retry-After → RetryLaterError without sleeping', async () => {
    const { client, sleeps } = clientFor('test-rate-limit');
    const first = await client.getOrderUpdates({}, within());
    const err = await client
      .getOrderUpdates({ pageId: first.nextPageId }, within(500))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryLaterError);
    expect(err).toMatchObject({ reason: 'rate-limited', statusCode: 429, retryAfterMs: 1_000 });
    expect(sleeps).toEqual([]);
  });

  it('test-transient-error: the 5xx is retried and the stream completes', async () => {
    const { client, events } = clientFor('test-transient-error', { random: () => 0 });

    const drained = await drain(client);

    expect(drained.records).toHaveLength(SCENARIO_EXPECTATIONS['test-transient-error'].versions);
    expect(events.map((e) => e.kind)).toEqual(['server-error']);
    const requests = requestsOf('test-transient-error');
    const failed = requests.findIndex((r) => r.status >= 500);
    expect(failed).toBeGreaterThan(0);
    expect(requests[failed + 1]).toMatchObject({ url: requests[failed]?.url, status: 200 });
  });

  it('test-expired-page-id: CursorExpiredError on the 2nd request; restarting without pageId recovers', async () => {
    const { client } = clientFor('test-expired-page-id');

    const first = await client.getOrderUpdates({}, within());
    expect(first.data).toHaveLength(SCENARIO_EXPECTATIONS['test-expired-page-id'].versions);
    await expect(client.getOrderUpdates({ pageId: first.nextPageId }, within())).rejects.toBeInstanceOf(
      CursorExpiredError,
    );
    expect(requestsOf('test-expired-page-id').map((r) => r.status)).toEqual([200, 404]);

    // Pagination rule 5: repeat the request without pageId.
    expect((await client.getOrderUpdates({}, within())).data).toEqual(first.data);
  });

  it('test-empty-stream: data [], hasMore false, no nextPageId', async () => {
    const { client } = clientFor('test-empty-stream');
    const page = await client.getOrderUpdates({}, within());
    expect(page).toEqual({ hasMore: false, data: [] });
    expect('nextPageId' in page).toBe(false);
  });
});

describe('getOrder', () => {
  it('returns the latest version of a known order', async () => {
    const { client } = clientFor('test-versioning');
    const drained = await drain(client);
    const [[id, version] = [0, 0]] = highestVersions(drained.records);

    const order = await client.getOrder(id, within());

    expect(order).toMatchObject({ id, version, latestVersion: true });
  });

  it('answers OrderNotFoundError for an unknown id', async () => {
    const { client } = clientFor('test-versioning');
    const err = await client.getOrder(1, within()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OrderNotFoundError);
    expect(err).toMatchObject({ orderId: 1, statusCode: 404 });
  });
});
