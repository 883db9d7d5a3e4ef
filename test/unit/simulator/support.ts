// Shared helpers of the simulator tests: HTTP calls against a running simulator, draining polls, and an
// independent checker of the payload rules (spec section 2) that the simulator promises to obey.

import { checkConsistency } from '../../../functions/core/model/consistency.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import type { Order } from '../../../functions/core/model/types.js';
import type { ExpectedOrder, ExpectedSale } from '../../../tools/simulator/index.js';
import type { RunCounters, ScenarioRun } from '../../../tools/simulator/scenarios/expectations.js';
import { salesTotals } from '../../../tools/store/sales-ledger.js';

export const TOKEN = 'unit-test-token';

export interface Money {
  amount: number;
  currency: string;
}

export interface WireItem {
  id: string;
  name: string;
  type: string;
  price: Money;
  total: Money;
  quantityOrdered: number;
  quantityFulfilled: number;
  barcode?: string;
  ageRestricted?: boolean;
  optionCategories?: Array<{ name: string; selectedOptions: Array<{ name: string; optionPrice?: Money }> }>;
  substitutionDetails?: { substitutedBy?: string[]; substitutedFor?: string[] };
  priceAdjustmentDetails?: { relatedPriceAdjustment?: string; itemsAdjusted?: string[] };
}

export interface WireOrder {
  id: number;
  version: number;
  latestVersion: boolean;
  vendorId: string;
  status: 'placed' | 'rejected' | 'accepted' | 'cancelled';
  type: 'collection' | 'delivery';
  placedAt: number | string;
  acceptedAt?: number | string;
  cancelledAt?: number | string;
  dispatchedAt?: number | string;
  deliveredAt?: number | string;
  returnedAt?: number | string;
  deliveryFee?: Money;
  serviceFee: Money;
  total: Money;
  items: WireItem[];
  customerPayments: Array<{ type: string; collectedBy: string; payment: Money }>;
  deliveryProvider?: string;
}

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

/** Latest version per order and sales, computed independently of the simulator (max version wins). */
export function finalState(orders: Iterable<WireOrder>): { orders: ExpectedOrder[]; sales: ExpectedSale[] } {
  const latest = new Map<number, WireOrder>();
  for (const order of orders) {
    const known = latest.get(order.id);
    if (!known || order.version > known.version) latest.set(order.id, order);
  }
  const finals = [...latest.values()]
    .sort((a, b) => a.id - b.id)
    .map((o) => ({ id: o.id, version: o.version, status: o.status, vendorId: o.vendorId, total: o.total }));
  const sales = new Map<string, ExpectedSale>();
  for (const order of finals) {
    if (order.status !== 'accepted') continue;
    const key = `${order.vendorId}|${order.total.currency}`;
    const sale = sales.get(key) ?? {
      vendorId: order.vendorId,
      currency: order.total.currency,
      count: 0,
      amount: 0,
    };
    sale.count += 1;
    sale.amount += order.total.amount;
    sales.set(key, sale);
  }
  const sorted = [...sales.values()].sort((a, b) =>
    a.vendorId === b.vendorId ? (a.currency < b.currency ? -1 : 1) : a.vendorId < b.vendorId ? -1 : 1,
  );
  return { orders: finals, sales: sorted };
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

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?(Z|[+-]\d{2}:\d{2})$/;

export function timestampMs(value: number | string): number {
  if (typeof value === 'number') return value;
  if (!ISO.test(value)) throw new Error(`not an ISO 8601 date-time with offset: ${value}`);
  return Date.parse(value);
}

/** Every rule the simulator promises for one payload; [] when all hold. */
export function orderProblems(order: WireOrder): string[] {
  // checkConsistency covers one currency, payments = total, and substitution and adjustment lines.
  const problems = checkConsistency(order as unknown as Order).map((f) => `${f.code}: ${f.detail}`);
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

  const times: Record<string, number> = {};
  for (const field of [
    'placedAt',
    'acceptedAt',
    'cancelledAt',
    'dispatchedAt',
    'deliveredAt',
    'returnedAt',
  ] as const) {
    const value = order[field];
    if (value === undefined) continue;
    try {
      times[field] = timestampMs(value);
    } catch (err) {
      problems.push(`${field}: ${err instanceof Error ? err.message : String(err)}`);
    }
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
