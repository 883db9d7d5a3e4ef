import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../../tools/simulator/cursor.js';
import { type RunningSimulator, startSimulator } from '../../../tools/simulator/index.js';
import { formatIso } from '../../../tools/simulator/model.js';
import { get, orderProblems, TOKEN, updatesPath, type WireOrder, type WirePage } from './support.js';

let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ token: TOKEN, feed: { seed: 2, orders: 50 } });
});
afterAll(async () => {
  await sim.close();
});

describe('authentication', () => {
  it.each([
    ['no Authorization header', null],
    ['a wrong token', 'not-the-token'],
  ])('answers 401 Unauthorized with %s', async (_, token) => {
    const res = await get(sim.url, updatesPath(''), token);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Unauthorized' });
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('does not accept the token in the URL', async () => {
    const res = await get(sim.url, `/v1/orderUpdates?access_token=${TOKEN}`, null);
    expect(res.status).toBe(401);
  });

  it('checks the token before routing', async () => {
    expect((await get(sim.url, '/nowhere', null)).status).toBe(401);
  });

  it('records each request with its Authorization header value, when it came, how long it took, its body size', async () => {
    await get(sim.url, '/v1/orderUpdates?pageSize=1');
    const last = sim.requests.at(-1);
    expect(last).toEqual({
      method: 'GET',
      url: '/v1/orderUpdates?pageSize=1',
      authorization: `Bearer ${TOKEN}`,
      status: 200,
      receivedAt: expect.any(Number),
      durationMs: expect.any(Number),
      bytes: expect.any(Number),
    });
  });
});

describe('routing', () => {
  it.each([
    '/nowhere',
    '/v1/orders',
    '/v1/orders/',
    '/v2/orderUpdates',
    '/test-unknown/v1/orderUpdates',
    '/v1/orderUpdates/x',
  ])('answers 404 not found for %s', async (path) => {
    const res = await get(sim.url, path);
    expect(res).toMatchObject({ status: 404, body: { message: 'not found' } });
  });

  it('answers 405 to a method other than GET', async () => {
    const res = await get(sim.url, '/v1/orderUpdates', TOKEN, { method: 'POST', body: '{}' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
  });

  it('serves application/json', async () => {
    const res = await get(sim.url, updatesPath(''));
    expect(res.headers.get('content-type')).toBe('application/json');
  });
});

describe('query validation', () => {
  it.each([
    { pageSize: 0 },
    { pageSize: 101 },
    { pageSize: 'ten' },
    { pageSize: '1.5' },
    { minAgeMinutes: 0 },
    { minAgeMinutes: 1441 },
    { fromTimestamp: 'yesterday' },
    { fromTimestamp: '2024-05-01' },
    { orderIds: '12,abc' },
    { pageId: '' },
  ])('answers 400 with a message for %o', async (params) => {
    const res = await get<{ message: string }>(sim.url, updatesPath('', params));
    expect(res.status).toBe(400);
    expect(typeof res.body.message).toBe('string');
  });

  it.each([{ pageSize: 1 }, { pageSize: 100 }, { minAgeMinutes: 1 }, { minAgeMinutes: 1440 }])(
    'accepts the bounds %o',
    async (params) => {
      expect((await get(sim.url, updatesPath('', params))).status).toBe(200);
    },
  );

  it('accepts fromTimestamp with an offset', async () => {
    const res = await get(sim.url, updatesPath('', { fromTimestamp: '2024-05-01T12:00:00.5+02:00' }));
    expect(res.status).toBe(200);
  });
});

describe('cursors', () => {
  it('are opaque strings', async () => {
    const res = await get<WirePage>(sim.url, updatesPath(''));
    expect(res.body.nextPageId).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('answers 400 invalid pageId to a garbled or tampered cursor', async () => {
    const res = await get<WirePage>(sim.url, updatesPath(''));
    const cursor = res.body.nextPageId ?? '';
    const decoded = decodeCursor(cursor);
    expect(decoded).toBeDefined();
    const tampered = `${Buffer.from(JSON.stringify({ ...decoded, p: 0 })).toString('base64url')}.${cursor.split('.')[1]}`;
    for (const pageId of ['garbage', `${cursor}x`, tampered]) {
      const bad = await get(sim.url, updatesPath('', { pageId }));
      expect(bad).toMatchObject({ status: 400, body: { message: 'invalid pageId' } });
    }
  });

  it('answers 404 pageId not found to a cursor of another stream', async () => {
    const scenario = await get<WirePage>(sim.url, updatesPath('/test-pagination'));
    const res = await get(sim.url, updatesPath('', { pageId: scenario.body.nextPageId }));
    expect(res).toMatchObject({ status: 404, body: { message: 'pageId not found' } });
    const foreign = encodeCursor({ k: 'feed:someone-else', p: 0, b: 0 });
    expect((await get(sim.url, updatesPath('/test-pagination', { pageId: foreign }))).status).toBe(404);
  });
});

describe('GET /v1/orders/{id}', () => {
  it('answers 400 to a non-integer id and 404 to an unknown one', async () => {
    expect(await get(sim.url, '/v1/orders/abc')).toMatchObject({ status: 400 });
    expect(await get(sim.url, '/v1/orders/1.5')).toMatchObject({ status: 400 });
    expect(await get(sim.url, '/v1/orders/-3')).toMatchObject({ status: 400 });
    expect(await get(sim.url, '/v1/orders/123')).toMatchObject({
      status: 404,
      body: { message: 'order not found' },
    });
  });

  it('answers the latest version of a known order', async () => {
    const [expected] = [...sim.expected().orders.values()];
    const res = await get<WireOrder>(sim.url, `/v1/orders/${expected?.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ...expected, latestVersion: true });
  });
});

describe('support: the payload checker used by these tests', () => {
  it('reports broken payloads', async () => {
    const order = (await get<WirePage>(sim.url, updatesPath('', { pageSize: 1 }))).body.data[0] as WireOrder;
    expect(orderProblems(order)).toEqual([]);
    const unpaid = { ...order, total: { ...order.total, amount: order.total.amount + 1 } };
    expect(orderProblems(unpaid).length).toBeGreaterThan(0);
    const cancelledWithoutTime: WireOrder = { ...order, status: 'cancelled' };
    expect(orderProblems(cancelledWithoutTime).length).toBeGreaterThan(0);
  });

  it('formats ISO timestamps at an offset that parse back to the same instant', () => {
    const instant = Date.UTC(2024, 4, 1, 22, 30, 15, 250);
    for (const offset of [0, 120, -300, 330]) {
      expect(Date.parse(formatIso(instant, offset))).toBe(instant);
    }
    expect(formatIso(instant, 120)).toBe('2024-05-02T00:30:15.250+02:00');
    expect(formatIso(Date.UTC(2024, 0, 1), 0, true)).toBe('2024-01-01T00:00:00Z');
  });
});
