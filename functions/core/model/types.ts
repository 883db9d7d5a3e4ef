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

/** One normalised order version: the parser's schema (parse-order.ts) is the one description of its shape. */
export type Order = WithoutNull<ParsedRecord>;
export type OrderItem = Order['items'][number];
export type MonetaryAmount = Order['total'];

/** A consistency-rule violation or schema drift noticed on an accepted record. Never a rejection. */
export interface Finding {
  /** Stable machine code, e.g. `payments-sum-mismatch`. */
  code: string;
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
