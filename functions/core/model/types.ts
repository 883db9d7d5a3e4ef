// The normalised order model: what the parser produces, what goes on the queue and into the orders table.
// Field names follow the partner API (spec section 2). Timestamps are UTC ISO 8601 strings exactly as
// Date.prototype.toISOString() prints them; money is integer minor units. Optional fields are present
// only when the partner sent them.

import type { Int64 } from './int64.js';

export type OrderStatus = 'placed' | 'rejected' | 'accepted' | 'cancelled';
export const ORDER_STATUSES: readonly OrderStatus[] = ['placed', 'rejected', 'accepted', 'cancelled'];

export interface MonetaryAmount {
  /** int64 minor units: a number, or a bigint beyond 2^53 (see int64.ts). */
  amount: Int64;
  currency: string;
}

export interface SelectedOption {
  name: string;
  optionPrice?: MonetaryAmount;
}

export interface OptionCategory {
  name: string;
  selectedOptions: SelectedOption[];
}

export interface SubstitutionDetails {
  substitutedBy?: string[];
  substitutedFor?: string[];
}

export interface PriceAdjustmentDetails {
  relatedPriceAdjustment?: string;
  itemsAdjusted?: string[];
}

/** Known item types; an unknown one is kept verbatim (see the parse policy in parse-order.ts). */
export type OrderItemType = 'product' | 'offer' | 'voucher' | 'adjustment' | (string & {});

export interface OrderItem {
  id: string;
  name: string;
  ageRestricted?: boolean;
  barcode?: string;
  vendorReference?: string;
  type: OrderItemType;
  optionCategories?: OptionCategory[];
  quantityOrdered: number;
  quantityFulfilled: number;
  price: MonetaryAmount;
  total: MonetaryAmount;
  substitutionDetails?: SubstitutionDetails;
  priceAdjustmentDetails?: PriceAdjustmentDetails;
}

export interface CustomerPayment {
  type: 'online' | 'voucher' | 'cash' | (string & {});
  collectedBy: 'platform' | 'vendor' | (string & {});
  payment: MonetaryAmount;
}

export interface Order {
  /** int64: a number, or a bigint beyond 2^53 (see int64.ts). */
  id: Int64;
  version: Int64;
  latestVersion: boolean;
  vendorId: string;
  status: OrderStatus;
  type: 'collection' | 'delivery' | (string & {});
  placedAt: string;
  acceptedAt?: string;
  cancelledAt?: string;
  dispatchedAt?: string;
  deliveredAt?: string;
  returnedAt?: string;
  deliveryFee?: MonetaryAmount;
  serviceFee: MonetaryAmount;
  total: MonetaryAmount;
  items: OrderItem[];
  customerPayments: CustomerPayment[];
  deliveryProvider?: 'vendor' | 'courier_partner' | (string & {});
}

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
