// The simulator's order model: drafts with plain numbers (easy to clone and mutate between versions),
// `materialize` (computes every total so the section 2 consistency rules hold by construction) and
// `toWire` (the JSON an endpoint serves, with timestamps as epoch ms or ISO 8601 strings).
//
// Money conventions (the spec leaves them implicit; these satisfy all four consistency rules):
// - an item's `price` is its unit price, option surcharges included (`optionPrice` is informational);
// - an item's `total` is `price × quantityFulfilled` (0 for a substituted original; negative for offer,
//   voucher and adjustment lines);
// - the order `total` is the sum of item totals plus `deliveryFee` and `serviceFee`;
// - `customerPayments` sum to `total`: fixed amounts (e.g. a platform voucher) plus one remainder payment.

export type OrderStatus = 'placed' | 'rejected' | 'accepted' | 'cancelled';
export type ItemType = 'product' | 'offer' | 'voucher' | 'adjustment';

export interface Money {
  amount: number;
  currency: string;
}

export interface SubstitutionDetails {
  substitutedBy?: string[];
  substitutedFor?: string[];
}

export interface PriceAdjustmentDetails {
  relatedPriceAdjustment?: string;
  itemsAdjusted?: string[];
}

export interface ItemDraft {
  id: string;
  name: string;
  type: ItemType;
  /** Unit price in minor units, option surcharges included; negative for offer/voucher/adjustment. */
  price: number;
  quantityOrdered: number;
  quantityFulfilled: number;
  ageRestricted?: boolean;
  barcode?: string;
  vendorReference?: string;
  optionCategories?: Array<{ name: string; selectedOptions: Array<{ name: string; optionPrice?: number }> }>;
  substitutionDetails?: SubstitutionDetails;
  priceAdjustmentDetails?: PriceAdjustmentDetails;
}

export interface PaymentSpec {
  type: 'online' | 'voucher' | 'cash';
  collectedBy: 'platform' | 'vendor';
  /** Fixed amount; the one payment without an amount takes the remainder of the total. */
  amount?: number;
}

/** Timestamps are numbers (epoch ms, or ms relative to an anchor for canned scenarios). */
export interface OrderDraft {
  id: number;
  version: number;
  vendorId: string;
  currency: string;
  status: OrderStatus;
  type: 'collection' | 'delivery';
  placedAt: number;
  acceptedAt?: number;
  cancelledAt?: number;
  dispatchedAt?: number;
  deliveredAt?: number;
  returnedAt?: number;
  deliveryFee?: number;
  serviceFee: number;
  deliveryProvider?: 'vendor' | 'courier_partner';
  items: ItemDraft[];
  payments: PaymentSpec[];
}

export type SimItem = Omit<ItemDraft, 'price' | 'optionCategories'> & {
  optionCategories?: Array<{ name: string; selectedOptions: Array<{ name: string; optionPrice?: Money }> }>;
  price: Money;
  total: Money;
};

export interface SimPayment {
  type: PaymentSpec['type'];
  collectedBy: PaymentSpec['collectedBy'];
  payment: Money;
}

/** A fully priced order version (no `latestVersion`: that depends on the stream it is served from). */
export type SimOrder = Omit<OrderDraft, 'currency' | 'deliveryFee' | 'serviceFee' | 'items' | 'payments'> & {
  deliveryFee?: Money;
  serviceFee: Money;
  total: Money;
  items: SimItem[];
  customerPayments: SimPayment[];
};

export const TIMESTAMP_FIELDS = [
  'placedAt',
  'acceptedAt',
  'cancelledAt',
  'dispatchedAt',
  'deliveredAt',
  'returnedAt',
] as const;

function cloneDetails<T extends object>(details: T): T {
  const out = { ...details };
  for (const [key, value] of Object.entries(out)) {
    if (Array.isArray(value)) (out as Record<string, unknown>)[key] = [...value];
  }
  return out;
}

/**
 * A copy of a draft safe to mutate field by field (items and payments are copied; detail objects and
 * option categories are shared, so replace them rather than editing them in place).
 */
export function cloneDraft(draft: OrderDraft): OrderDraft {
  return {
    ...draft,
    items: draft.items.map((item) => ({ ...item })),
    payments: draft.payments.map((payment) => ({ ...payment })),
  };
}

/** Sum of item totals plus fees: what `total` will be once materialised. */
export function draftTotal(draft: OrderDraft): number {
  let total = draft.serviceFee + (draft.deliveryFee ?? 0);
  for (const item of draft.items) total += item.price * item.quantityFulfilled;
  return total;
}

/** Prices a draft: item totals, order total, and payments that sum to it. Throws on an impossible plan. */
export function materialize(draft: OrderDraft): SimOrder {
  const money = (amount: number): Money => ({ amount, currency: draft.currency });
  const items = draft.items.map(
    (item): SimItem => ({
      id: item.id,
      name: item.name,
      ...(item.ageRestricted === undefined ? {} : { ageRestricted: item.ageRestricted }),
      ...(item.barcode === undefined ? {} : { barcode: item.barcode }),
      ...(item.vendorReference === undefined ? {} : { vendorReference: item.vendorReference }),
      type: item.type,
      ...(item.optionCategories === undefined
        ? {}
        : {
            optionCategories: item.optionCategories.map((category) => ({
              name: category.name,
              selectedOptions: category.selectedOptions.map((option) =>
                option.optionPrice === undefined
                  ? { name: option.name }
                  : { name: option.name, optionPrice: money(option.optionPrice) },
              ),
            })),
          }),
      quantityOrdered: item.quantityOrdered,
      quantityFulfilled: item.quantityFulfilled,
      price: money(item.price),
      total: money(item.price * item.quantityFulfilled),
      ...(item.substitutionDetails === undefined
        ? {}
        : { substitutionDetails: cloneDetails(item.substitutionDetails) }),
      ...(item.priceAdjustmentDetails === undefined
        ? {}
        : { priceAdjustmentDetails: cloneDetails(item.priceAdjustmentDetails) }),
    }),
  );
  const total = draftTotal(draft);
  const fixed = draft.payments.reduce((sum, p) => sum + (p.amount ?? 0), 0);
  const remainderPayments = draft.payments.filter((p) => p.amount === undefined).length;
  if (total <= 0 || remainderPayments !== 1 || fixed >= total) {
    throw new Error(
      `order ${draft.id} v${draft.version}: cannot pay total ${total} with fixed payments ${fixed}`,
    );
  }
  const order: SimOrder = {
    id: draft.id,
    version: draft.version,
    vendorId: draft.vendorId,
    status: draft.status,
    type: draft.type,
    placedAt: draft.placedAt,
    ...(draft.acceptedAt === undefined ? {} : { acceptedAt: draft.acceptedAt }),
    ...(draft.cancelledAt === undefined ? {} : { cancelledAt: draft.cancelledAt }),
    ...(draft.dispatchedAt === undefined ? {} : { dispatchedAt: draft.dispatchedAt }),
    ...(draft.deliveredAt === undefined ? {} : { deliveredAt: draft.deliveredAt }),
    ...(draft.returnedAt === undefined ? {} : { returnedAt: draft.returnedAt }),
    ...(draft.deliveryFee === undefined ? {} : { deliveryFee: money(draft.deliveryFee) }),
    serviceFee: money(draft.serviceFee),
    total: money(total),
    items,
    customerPayments: draft.payments.map((p) => ({
      type: p.type,
      collectedBy: p.collectedBy,
      payment: money(p.amount ?? total - fixed),
    })),
    ...(draft.deliveryProvider === undefined ? {} : { deliveryProvider: draft.deliveryProvider }),
  };
  return order;
}

/** How a version's timestamps are written: epoch ms, or ISO 8601 at a UTC offset (`Z` or `±HH:MM`). */
export type TimestampStyle = { kind: 'epoch' } | { kind: 'iso'; offsetMinutes: number; zulu?: boolean };

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

/** ISO 8601 with the given offset; milliseconds are printed only when not zero. */
export function formatIso(epochMs: number, offsetMinutes: number, zulu = false): string {
  const local = new Date(epochMs + offsetMinutes * 60_000);
  const base =
    `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}` +
    `T${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}`;
  const millis = local.getUTCMilliseconds();
  const fraction = millis === 0 ? '' : `.${pad(millis, 3)}`;
  if (offsetMinutes === 0 && zulu) return `${base}${fraction}Z`;
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${base}${fraction}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

export function formatTimestamp(epochMs: number, style: TimestampStyle): number | string {
  return style.kind === 'epoch' ? epochMs : formatIso(epochMs, style.offsetMinutes, style.zulu);
}

/** The wire object of one order version. `shiftMs` is added to every timestamp (anchor of canned data). */
export function toWire(
  order: SimOrder,
  latestVersion: boolean,
  style: TimestampStyle,
  shiftMs = 0,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: order.id,
    version: order.version,
    latestVersion,
    vendorId: order.vendorId,
    status: order.status,
    type: order.type,
  };
  for (const field of TIMESTAMP_FIELDS) {
    const value = order[field];
    if (value !== undefined) out[field] = formatTimestamp(value + shiftMs, style);
  }
  if (order.deliveryFee !== undefined) out.deliveryFee = order.deliveryFee;
  out.serviceFee = order.serviceFee;
  out.total = order.total;
  out.items = order.items;
  out.customerPayments = order.customerPayments;
  if (order.deliveryProvider !== undefined) out.deliveryProvider = order.deliveryProvider;
  return out;
}
