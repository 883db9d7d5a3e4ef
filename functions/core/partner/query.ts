// Client-side validation and encoding of request inputs. Values the API would refuse are caught here
// with a message naming the parameter, before any request (and any token) leaves the process.

import { type Int64, isInt64 } from '../model/int64.js';
import { InvalidArgumentError } from './errors.js';
import type { OrderUpdatesQuery } from './types.js';

/**
 * How array query parameters (`vendorIds`, `orderIds`) go on the wire; the spec does not say.
 * - `repeat` (default): `vendorIds=a&vendorIds=b`, the OpenAPI default for query arrays
 *   (`style: form, explode: true`) and what most server frameworks parse into an array.
 * - `comma`: `vendorIds=a,b` (`explode: false`); commas inside a value would be ambiguous, so such
 *   values are refused.
 */
export type ArrayEncoding = 'repeat' | 'comma';

const PAGE_SIZE = { min: 1, max: 100 } as const;
const MIN_AGE_MINUTES = { min: 1, max: 1440 } as const;

function checkIntegerInRange(name: string, value: unknown, range: { min: number; max: number }): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < range.min || value > range.max) {
    throw new InvalidArgumentError(
      `${name} must be an integer from ${range.min} to ${range.max} (got ${String(value)})`,
    );
  }
  return value;
}

/**
 * Order ids are int64 on the wire. Beyond 2^53 - 1 a JS number is no longer exact, so such an id must come as
 * a bigint (model/int64.ts); a number that large would already have been rounded to another order, so it is
 * refused rather than sent.
 */
export function checkOrderId(name: string, value: unknown): Int64 {
  if (typeof value === 'bigint') {
    // int64 ids beyond 2^53 travel as bigints (the canonical form, model/int64.ts).
    if (value < 0n || !isInt64(value)) {
      throw new InvalidArgumentError(`${name} must be a non-negative int64 (got ${String(value)})`);
    }
    return value;
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${name} must be a non-negative integer (got ${String(value)})`);
  }
  if (!Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(
      `${name} ${String(value)} exceeds Number.MAX_SAFE_INTEGER (2^53 - 1) as a number, so it is not exact: pass an int64 id beyond that as a bigint`,
    );
  }
  return value;
}

// An ISO 8601 date, or date-time with an explicit zone. A zone-less date-time would be read in the
// machine's local zone by Date.parse (UTC on Lambda, something else on a laptop): refused as ambiguous.
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/i;

function checkTimestamp(value: unknown): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new InvalidArgumentError('fromTimestamp is an invalid Date');
    return value.toISOString();
  }
  if (typeof value === 'string' && ISO_DATE_TIME.test(value)) {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms)) return new Date(ms).toISOString();
  }
  throw new InvalidArgumentError(
    'fromTimestamp must be a valid Date or an ISO 8601 string with a time zone (e.g. 2024-05-01T00:00:00Z)',
  );
}

function checkArray<T>(name: string, value: unknown, check: (item: unknown, index: number) => T): T[] {
  if (!Array.isArray(value) || value.length === 0) {
    // An empty filter is refused rather than sent: omitting the parameter means "all", and a
    // silently dropped empty list would widen the query to every vendor or order.
    throw new InvalidArgumentError(`${name} must be a non-empty array when given (omit it to mean all)`);
  }
  return value.map(check);
}

// One `name=value` pair with application/x-www-form-urlencoded escaping, as URLSearchParams does it.
function formPair(name: string, value: string): string {
  return new URLSearchParams([[name, value]]).toString();
}

/**
 * The query string for GET /v1/orderUpdates ('' or '?...'). `pageId` is passed through byte for byte;
 * URLSearchParams only escapes it (`a+b/c=d&e` → `a%2Bb%2Fc%3Dd%26e`), so the server decodes the
 * exact cursor it issued.
 */
export function buildOrderUpdatesQuery(query: OrderUpdatesQuery, arrayEncoding: ArrayEncoding): string {
  if (query === null || typeof query !== 'object') {
    throw new InvalidArgumentError('query must be an object');
  }
  const pairs: string[] = [];
  const addArray = (name: string, values: string[]) => {
    if (arrayEncoding === 'comma') {
      pairs.push(`${name}=${values.map((v) => formPair('', v).slice(1)).join(',')}`);
    } else {
      for (const v of values) pairs.push(formPair(name, v));
    }
  };

  if (query.pageId !== undefined) {
    if (typeof query.pageId !== 'string' || query.pageId === '') {
      throw new InvalidArgumentError('pageId must be a non-empty string (the nextPageId of a previous page)');
    }
    pairs.push(formPair('pageId', query.pageId));
  }
  if (query.pageSize !== undefined) {
    pairs.push(formPair('pageSize', String(checkIntegerInRange('pageSize', query.pageSize, PAGE_SIZE))));
  }
  if (query.vendorIds !== undefined) {
    const ids = checkArray('vendorIds', query.vendorIds, (id, i) => {
      if (typeof id !== 'string' || id === '') {
        throw new InvalidArgumentError(`vendorIds[${i}] must be a non-empty string`);
      }
      if (arrayEncoding === 'comma' && id.includes(',')) {
        throw new InvalidArgumentError(
          `vendorIds[${i}] contains a comma, which the 'comma' array encoding cannot carry`,
        );
      }
      return id;
    });
    addArray('vendorIds', ids);
  }
  if (query.orderIds !== undefined) {
    const ids = checkArray('orderIds', query.orderIds, (id, i) => String(checkOrderId(`orderIds[${i}]`, id)));
    addArray('orderIds', ids);
  }
  if (query.fromTimestamp !== undefined) {
    pairs.push(formPair('fromTimestamp', checkTimestamp(query.fromTimestamp)));
  }
  if (query.minAgeMinutes !== undefined) {
    pairs.push(
      formPair(
        'minAgeMinutes',
        String(checkIntegerInRange('minAgeMinutes', query.minAgeMinutes, MIN_AGE_MINUTES)),
      ),
    );
  }
  return pairs.length === 0 ? '' : `?${pairs.join('&')}`;
}
