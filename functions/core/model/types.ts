// The normalised order model: what the parser produces, what goes on the queue and into the orders table.
// Field names follow the partner API (spec section 2). Timestamps are UTC ISO 8601 strings exactly as
// Date.prototype.toISOString() prints them; money is integer minor units. Optional fields are present
// only when the partner sent them.

import type { Int64 } from './int64.js';
import type { ParsedRecord } from './parse-order.js';

export type OrderStatus = 'placed' | 'rejected' | 'accepted' | 'cancelled';
export const ORDER_STATUSES: readonly OrderStatus[] = ['placed', 'rejected', 'accepted', 'cancelled'];

/** An optional field zod reads as `T | null` without the null: the parser's walk deletes such keys. */
type WithoutNull<T> = T extends readonly (infer E)[]
  ? WithoutNull<E>[]
  : T extends object
    ? { [K in keyof T]: WithoutNull<Exclude<T[K], null>> }
    : T;

/**
 * One order version as the parser's schema (parse-order.ts) reads it, the one description of its shape:
 * `id`, `version` and every `amount` are int64 (a number, or a bigint beyond 2^53: int64.ts); open enums
 * (order, item and payment `type`, `collectedBy`, `deliveryProvider`) are strings, kept verbatim.
 */
export type Order = WithoutNull<ParsedRecord>;
export type OrderItem = Order['items'][number];
export type MonetaryAmount = Order['total'];

/** A consistency-rule violation or schema drift noticed on an accepted record. Never a rejection. */
export interface Finding {
  /** Stable machine code, e.g. `payments-sum-mismatch`, `substitution-link-missing`, `unknown-field`. */
  code: string;
  /** Human-readable detail naming the item ids / paths involved. */
  detail: string;
}

export type ParseResult =
  | { ok: true; order: Order; findings: Finding[] }
  | {
      ok: false;
      /** One line naming what is wrong, e.g. `missing required field: total`. */
      reason: string;
      /** Every problem found, each as `path: message`. */
      issues: string[];
      /** Identity when it could be read, so a quarantined record can be found by order id. */
      orderId?: Int64;
      version?: Int64;
    };
