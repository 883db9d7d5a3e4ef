// Query-string validation of GET /v1/orderUpdates and of the order id of GET /v1/orders/{id}.
// Array parameters are accepted both repeated (`vendorIds=a&vendorIds=b`) and comma-separated
// (`vendorIds=a,b`), since the spec leaves their encoding open.

export interface UpdatesQuery {
  pageId?: string;
  pageSize: number;
  vendorIds?: string[];
  orderIds?: number[];
  /** Epoch ms. */
  fromTimestamp?: number;
  minAgeMinutes?: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

const DATE_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
const INTEGER = /^\d+$/;

function integerInRange(raw: string, min: number, max: number): number | undefined {
  if (!INTEGER.test(raw)) return undefined;
  const value = Number(raw);
  return value >= min && value <= max ? value : undefined;
}

function listOf(params: URLSearchParams, name: string): string[] | undefined {
  const values = params
    .getAll(name)
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
  return values.length > 0 ? values : undefined;
}

/** An RFC 3339 / ISO 8601 date-time with seconds and an offset (`Z` or `±HH:MM`), as epoch ms. */
export function parseDateTime(raw: string): number | undefined {
  const match = DATE_TIME.exec(raw);
  if (!match) return undefined;
  const fraction = match[2] ? match[2].slice(0, 4).padEnd(4, '0') : '';
  const value = Date.parse(`${match[1]}${fraction}${match[3]?.toUpperCase()}`);
  return Number.isFinite(value) ? value : undefined;
}

export function parseUpdatesQuery(params: URLSearchParams): Parsed<UpdatesQuery> {
  const query: UpdatesQuery = { pageSize: 10 };
  const pageId = params.get('pageId');
  if (pageId !== null) {
    if (pageId === '') return { ok: false, message: 'invalid pageId' };
    query.pageId = pageId;
  }
  const pageSize = params.get('pageSize');
  if (pageSize !== null) {
    const value = integerInRange(pageSize, 1, 100);
    if (value === undefined) return { ok: false, message: 'pageSize must be an integer from 1 to 100' };
    query.pageSize = value;
  }
  const minAge = params.get('minAgeMinutes');
  if (minAge !== null) {
    const value = integerInRange(minAge, 1, 1440);
    if (value === undefined) return { ok: false, message: 'minAgeMinutes must be an integer from 1 to 1440' };
    query.minAgeMinutes = value;
  }
  const from = params.get('fromTimestamp');
  if (from !== null) {
    const value = parseDateTime(from);
    if (value === undefined) {
      return { ok: false, message: 'fromTimestamp must be an ISO 8601 date-time, e.g. 2024-05-01T12:00:00Z' };
    }
    query.fromTimestamp = value;
  }
  const vendorIds = listOf(params, 'vendorIds');
  if (vendorIds) query.vendorIds = vendorIds;
  const orderIds = listOf(params, 'orderIds');
  if (orderIds) {
    const ids = orderIds.map((raw) => parseOrderId(raw));
    if (ids.some((id) => id === undefined)) return { ok: false, message: 'orderIds must be integers' };
    query.orderIds = ids.filter((id): id is number => id !== undefined);
  }
  return { ok: true, value: query };
}

/** An int64 order id (digits only, at most 19), or undefined. */
export function parseOrderId(raw: string): number | undefined {
  return /^\d{1,19}$/.test(raw) ? Number(raw) : undefined;
}
