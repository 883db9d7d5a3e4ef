// Shared helpers of the simulator tests: HTTP calls against a running simulator, draining polls, and an
// independent checker of the payload rules (spec section 2) that the simulator promises to obey.

import { checkConsistency } from '../../../functions/core/model/consistency.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import type { Order } from '../../../functions/core/model/types.js';
import { type SimOrder, TIMESTAMP_FIELDS } from '../../../tools/simulator/model.js';
import type { RunCounters, ScenarioRun } from '../../../tools/simulator/scenarios/expectations.js';
import { salesTotals } from '../../../tools/store/sales-ledger.js';

export const TOKEN = 'unit-test-token';

type Timestamps = { [field in (typeof TIMESTAMP_FIELDS)[number]]?: number | string };

/** A payload as served: the simulator's priced order, with latestVersion and epoch-ms or ISO timestamps. */
export type WireOrder = Omit<SimOrder, keyof Timestamps> &
  Timestamps & { latestVersion: boolean; placedAt: number | string };

export interface WirePage {
  data: WireOrder[];
  hasMore: boolean;
  nextPageId?: string;
}

export interface Fetched<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** GET with the bearer token (pass `null` for no Authorization header). */
export async function get<T = unknown>(
  base: string,
  path: string,
  token: string | null = TOKEN,
  init: RequestInit = {},
): Promise<Fetched<T>> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: { ...headers, ...(init.headers as object) },
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: (text === '' ? undefined : JSON.parse(text)) as T,
    text,
  };
}

export function updatesPath(
  prefix: string,
  params: Record<string, string | number | undefined> = {},
): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) search.set(name, String(value));
  const query = search.toString();
  return `${prefix}/v1/orderUpdates${query ? `?${query}` : ''}`;
}

/** One poll: pages from `pageId` until hasMore is false. Throws on any non-200. */
export async function drainPoll(
  base: string,
  prefix: string,
  options: {
    pageId?: string;
    pageSize?: number;
    token?: string;
    extra?: Record<string, string | number>;
  } = {},
): Promise<{ pages: WirePage[]; orders: WireOrder[]; nextPageId: string | undefined }> {
  const pages: WirePage[] = [];
  let pageId = options.pageId;
  for (let guard = 0; guard < 10_000; guard++) {
    const res = await get<WirePage>(
      base,
      updatesPath(prefix, { pageId, pageSize: options.pageSize, ...options.extra }),
      options.token ?? TOKEN,
    );
    if (res.status !== 200) throw new Error(`GET ${prefix} answered ${res.status}: ${res.text}`);
    pages.push(res.body);
    if (res.body.nextPageId !== undefined) pageId = res.body.nextPageId;
    if (!res.body.hasMore) return { pages, orders: pages.flatMap((page) => page.data), nextPageId: pageId };
  }
  throw new Error('drainPoll: no end');
}

/** The latest version of each order (sorted by id) and the sales a faithful pipeline ends with. */
export function finalState(served: readonly unknown[]) {
  const { orders, sales } = faithfulRun(served);
  const finals = orders.map(({ id, version, status, vendorId, total }) => ({
    id,
    version,
    status,
    vendorId,
    total,
  }));
  return { orders: finals.sort((a, b) => Number(a.id) - Number(b.id)), sales };
}

/** The run a faithful pipeline makes of `served`: every version applied or stale, the highest one kept. */
export function faithfulRun(served: readonly unknown[], counters: Partial<RunCounters> = {}): ScenarioRun {
  const latest = new Map<string, Order>();
  for (const raw of served) {
    const parsed = parseOrder(raw);
    if (!parsed.ok) throw new Error(parsed.reason);
    const stored = latest.get(String(parsed.order.id));
    if (!stored || stored.version < parsed.order.version) latest.set(String(parsed.order.id), parsed.order);
  }
  const orders = [...latest.values()];
  return {
    exitCode: 0,
    outcome: 'drained',
    counters: {
      ...{ polls: 1, pages: 1, partnerRetries: 0, rateLimitWaits: 0, cursorRecoveries: 0 },
      ...{ versionsPublished: served.length, applied: latest.size, stale: served.length - latest.size },
      ...counters,
    },
    sales: salesTotals(orders),
    deadLettered: 0,
    quarantined: [],
    orders,
  };
}

/** Every rule the simulator promises for one payload; [] when all hold. */
export function orderProblems(order: WireOrder): string[] {
  // parseOrder checks the fields and timestamp formats; checkConsistency one currency, payments = total, and
  // substitution and adjustment lines.
  const parsed = parseOrder(order);
  if (!parsed.ok) return [parsed.reason];
  const problems = checkConsistency(parsed.order).map((f) => `${f.code}: ${f.detail}`);
  let sum = order.serviceFee.amount + (order.deliveryFee?.amount ?? 0);
  for (const item of order.items) {
    sum += item.total.amount;
    if (item.total.amount !== item.price.amount * item.quantityFulfilled) {
      problems.push(`item ${item.id}: total is not price × quantityFulfilled`);
    }
    const negative = item.type === 'offer' || item.type === 'voucher' || item.type === 'adjustment';
    if (negative !== item.price.amount < 0) problems.push(`item ${item.id}: sign of ${item.type} price`);
  }
  if (sum !== order.total.amount) problems.push(`items + fees = ${sum}, total ${order.total.amount}`);
  if (order.customerPayments.some((p) => p.payment.amount <= 0)) problems.push('non-positive payment');

  const times: Partial<Record<string, number>> = {};
  for (const field of TIMESTAMP_FIELDS) {
    const value = parsed.order[field];
    if (value !== undefined) times[field] = Date.parse(value);
  }
  const has = (field: string): boolean => times[field] !== undefined;
  const expectations: Record<WireOrder['status'], [boolean, boolean]> = {
    placed: [false, false],
    accepted: [true, false],
    rejected: [false, true],
    cancelled: [true, true],
  };
  const [accepted, cancelled] = expectations[order.status];
  if (has('acceptedAt') !== accepted) problems.push(`${order.status} with acceptedAt ${has('acceptedAt')}`);
  if (has('cancelledAt') !== cancelled)
    problems.push(`${order.status} with cancelledAt ${has('cancelledAt')}`);
  for (const field of ['acceptedAt', 'cancelledAt', 'dispatchedAt', 'deliveredAt', 'returnedAt']) {
    if (has(field) && (times[field] ?? 0) < (times.placedAt ?? 0)) problems.push(`${field} before placedAt`);
  }
  if (order.type === 'collection') {
    if (order.deliveryFee || order.deliveryProvider) problems.push('collection order with delivery fields');
    if (has('dispatchedAt') || has('deliveredAt') || has('returnedAt'))
      problems.push('collection order tracked');
  } else {
    if (!order.deliveryFee || !order.deliveryProvider)
      problems.push('delivery order without fee or provider');
    if (order.deliveryProvider !== 'courier_partner' && (has('dispatchedAt') || has('deliveredAt'))) {
      problems.push('tracking on an untracked delivery');
    }
  }
  return problems;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
