// The production-like feed served under /v1: seeded order histories (lifecycles, money-changing and
// invisible version bumps, substitutions, adjustments, vouchers, split payments), flattened into one
// stream ordered by event time, with optional defects (duplicated and out-of-order versions).
// Built once at start; pages are served by position, so 20,000 versions cost nothing per request.
//
// Flow: generateHistories → buildStream (sort, defects, strictly increasing event times, shift to
// `endsAt`) → GeneratedFeed (latestVersion, JSON per entry, indexes, expected state).

import { createHash } from 'node:crypto';
import {
  cloneDraft,
  draftTotal,
  type ItemDraft,
  materialize,
  type OrderDraft,
  type SimOrder,
  TIMESTAMP_FIELDS,
  type TimestampStyle,
  toWire,
} from './model.js';
import { Random } from './random.js';
import type { ExpectedOrder, ExpectedSale, ExpectedState, Oracle, SimulatorOptions } from './types.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export interface GeneratedVersion {
  order: SimOrder;
  /** When this version entered the stream; never earlier than any timestamp inside the order. */
  eventTs: number;
  style: TimestampStyle;
}

export interface HistoryOptions {
  seed: number;
  orders: number;
  vendors: number;
  currencies: readonly string[];
  /** Order ids are `idBase + 10·i + (0..9)`. */
  idBase: number;
  /** Orders are placed across this span (ms), which ends about 6 h before the last event. */
  spanMs: number;
  /** `mixed`: epoch ms and ISO 8601 at various offsets, per version; `epoch`: as the sample payloads. */
  timestamps: 'mixed' | 'epoch';
}

interface CatalogEntry {
  name: string;
  min: number;
  max: number;
  packaged?: boolean;
  ageRestricted?: boolean;
  options?: Array<{ category: string; choices: Array<{ name: string; surcharge?: number }> }>;
}

const CATALOG: readonly CatalogEntry[] = [
  {
    name: 'Margherita pizza',
    min: 850,
    max: 1250,
    options: [
      { category: 'Size', choices: [{ name: 'Regular' }, { name: 'Large', surcharge: 300 }] },
      {
        category: 'Extra toppings',
        choices: [
          { name: 'Mushrooms', surcharge: 120 },
          { name: 'Olives', surcharge: 90 },
          { name: 'Basil' },
        ],
      },
    ],
  },
  {
    name: 'Chicken burger',
    min: 900,
    max: 1300,
    options: [
      {
        category: 'Extras',
        choices: [
          { name: 'Bacon', surcharge: 150 },
          { name: 'Cheese', surcharge: 80 },
        ],
      },
      { category: 'Sauce', choices: [{ name: 'BBQ' }, { name: 'Garlic mayo' }] },
    ],
  },
  {
    name: 'Pad thai',
    min: 1050,
    max: 1400,
    options: [
      { category: 'Protein', choices: [{ name: 'Tofu' }, { name: 'Prawn', surcharge: 200 }] },
      { category: 'Spice level', choices: [{ name: 'Mild' }, { name: 'Hot' }] },
    ],
  },
  { name: 'Caesar salad', min: 700, max: 950 },
  { name: 'Cola 330ml', min: 120, max: 180, packaged: true },
  { name: 'Sparkling water 500ml', min: 90, max: 150, packaged: true },
  { name: 'Lager 4x440ml', min: 450, max: 650, packaged: true, ageRestricted: true },
  { name: 'Red wine 750ml', min: 700, max: 1400, packaged: true, ageRestricted: true },
  { name: 'Sea salt crisps 150g', min: 150, max: 250, packaged: true },
  { name: 'Dark chocolate 100g', min: 120, max: 300, packaged: true },
  { name: 'Whole milk 1L', min: 95, max: 140, packaged: true },
  { name: 'Sourdough loaf', min: 280, max: 420 },
  { name: 'Bananas x5', min: 110, max: 170 },
  { name: 'Cheddar 200g', min: 250, max: 380, packaged: true },
  { name: 'Free-range eggs x6', min: 190, max: 290, packaged: true },
];

const ISO_OFFSETS: ReadonlyArray<TimestampStyle> = [
  { kind: 'iso', offsetMinutes: 0, zulu: true },
  { kind: 'iso', offsetMinutes: 0 },
  { kind: 'iso', offsetMinutes: 120 },
  { kind: 'iso', offsetMinutes: 60 },
  { kind: 'iso', offsetMinutes: -300 },
  { kind: 'iso', offsetMinutes: 330 },
  { kind: 'iso', offsetMinutes: -210 },
];

type Mutation = 'out-of-stock' | 'substitution' | 'adjustment' | 'noop';

/** One order's versions, oldest first. Consumes `rng` in a fixed order: same seed, same histories. */
function generateHistory(rng: Random, index: number, options: HistoryOptions): GeneratedVersion[] {
  const id = options.idBase + index * 10 + rng.int(0, 9);
  const vendorId = `vendor-${rng.int(1, options.vendors)}`;
  const currency = rng.pick(options.currencies);
  const delivery = rng.chance(0.6);
  const provider = delivery ? (rng.chance(0.6) ? 'courier_partner' : 'vendor') : undefined;
  const wholeSeconds = rng.chance(0.5);
  const at = (ms: number): number => (wholeSeconds ? Math.floor(ms / 1000) * 1000 : Math.floor(ms));
  const placedAt = at(-options.spanMs - 6 * HOUR + rng.next() * options.spanMs);

  let itemCounter = 0;
  const nextItemId = (): string => `${id}-${++itemCounter}`;
  const barcode = (): string => `50${String(rng.int(0, 99_999_999_999)).padStart(11, '0')}`;

  const items: ItemDraft[] = [];
  const productCount = rng.weighted([
    [1, 3],
    [2, 4],
    [3, 3],
    [4, 2],
    [5, 1],
  ] as const);
  for (let n = 0; n < productCount; n++) {
    const entry = rng.pick(CATALOG);
    let price = Math.round(rng.int(entry.min, entry.max) / 10) * 10;
    const item: ItemDraft = {
      id: nextItemId(),
      name: entry.name,
      type: 'product',
      price,
      quantityOrdered: rng.chance(0.3) ? rng.int(2, 4) : 1,
      quantityFulfilled: 0,
    };
    if (entry.ageRestricted) item.ageRestricted = true;
    if (entry.packaged) item.barcode = barcode();
    if (rng.chance(0.7)) item.vendorReference = `SKU-${rng.int(1000, 9999)}`;
    if (entry.options) {
      item.optionCategories = entry.options.map((category) => {
        const choice = rng.pick(category.choices);
        price += choice.surcharge ?? 0;
        return {
          name: category.category,
          selectedOptions: [
            choice.surcharge === undefined
              ? { name: choice.name }
              : { name: choice.name, optionPrice: choice.surcharge },
          ],
        };
      });
      item.price = price;
    }
    item.quantityFulfilled = item.quantityOrdered;
    items.push(item);
  }
  const productsSubtotal = items.reduce((sum, item) => sum + item.price * item.quantityOrdered, 0);
  // An offer makes every third unit of a line free; the line is then never mutated (the offer stays right).
  const offerLine = items.find((item) => item.quantityOrdered >= 3);
  if (offerLine && rng.chance(0.6)) {
    items.push({
      id: nextItemId(),
      name: `3 for 2: ${offerLine.name}`,
      type: 'offer',
      price: -offerLine.price,
      quantityOrdered: 1,
      quantityFulfilled: 1,
    });
  }
  if (rng.chance(0.1)) {
    const percent = rng.pick([10, 15, 20]);
    items.push({
      id: nextItemId(),
      name: `${percent}% off (vendor promotion)`,
      type: 'voucher',
      price: -Math.round((productsSubtotal * percent) / 100),
      quantityOrdered: 1,
      quantityFulfilled: 1,
    });
  }

  const paymentPlan = rng.weighted([
    ['online', 55],
    ['cash', 15],
    ['voucher+online', 15],
    ['voucher+cash', 15],
  ] as const);
  const voucherAmount = rng.pick([200, 300, 500, 1000]);
  const payments: OrderDraft['payments'] = [];
  if (paymentPlan.startsWith('voucher'))
    payments.push({ type: 'voucher', collectedBy: 'platform', amount: voucherAmount });
  payments.push(
    paymentPlan.endsWith('cash')
      ? { type: 'cash', collectedBy: 'vendor' }
      : { type: 'online', collectedBy: 'platform' },
  );

  const draft: OrderDraft = {
    id,
    version: 1,
    vendorId,
    currency,
    status: 'placed',
    type: delivery ? 'delivery' : 'collection',
    placedAt,
    serviceFee: rng.pick([49, 79, 99, 149]),
    items,
    payments,
  };
  if (delivery) {
    draft.deliveryFee = rng.pick([149, 199, 249, 299]);
    draft.deliveryProvider = provider;
  }

  const versions: GeneratedVersion[] = [];
  const pickStyle = (): TimestampStyle =>
    options.timestamps === 'epoch' || rng.chance(0.5) ? { kind: 'epoch' } : rng.pick(ISO_OFFSETS);
  const emit = (eventTs: number): void => {
    const priced = cloneDraft(draft);
    // A fixed voucher payment never exceeds what is left to pay (e.g. after items went out of stock).
    const total = draftTotal(priced);
    for (const payment of priced.payments) {
      if (payment.amount !== undefined && payment.amount >= total) payment.amount = Math.floor(total / 2);
    }
    versions.push({ order: materialize(priced), eventTs, style: pickStyle() });
  };
  const bump = (): void => {
    draft.version += rng.chance(0.05) ? 2 : 1;
  };
  let clock = placedAt;
  const advance = (minMinutes: number, maxMinutes: number): number => {
    clock = at(clock + rng.int(minMinutes * MINUTE, maxMinutes * MINUTE));
    return clock;
  };
  const eventAfter = (ts: number): number => ts + rng.int(0, 20_000);

  emit(eventAfter(placedAt));
  const lifecycle = rng.weighted([
    ['accepted', 58],
    ['cancelled', 12],
    ['rejected', 12],
    ['placed', 12],
    ['returned', 6],
  ] as const);

  if (lifecycle === 'placed') {
    if (rng.chance(0.15)) {
      bump();
      emit(eventAfter(advance(1, 20)));
    }
    return versions;
  }
  if (lifecycle === 'rejected') {
    bump();
    draft.status = 'rejected';
    draft.cancelledAt = advance(2, 15);
    emit(eventAfter(clock));
    return versions;
  }

  bump();
  draft.status = 'accepted';
  draft.acceptedAt = advance(1, 10);
  emit(eventAfter(clock));

  const changes = rng.weighted([
    [0, 4],
    [1, 3],
    [2, 2],
    [3, 1],
  ] as const);
  for (let n = 0; n < changes; n++) {
    const mutation = rng.weighted<Mutation>([
      ['out-of-stock', 3],
      ['substitution', 2],
      ['adjustment', 2],
      ['noop', 3],
    ]);
    const before = draft.items.map((item) => ({ ...item }));
    applyMutation(rng, draft, mutation, offerLine?.id, nextItemId);
    if (draftTotal(draft) <= 0) draft.items = before;
    bump();
    emit(eventAfter(advance(5, 40)));
  }

  const courier = draft.deliveryProvider === 'courier_partner';
  if (courier && (lifecycle === 'accepted' || lifecycle === 'returned') && rng.chance(0.8)) {
    bump();
    draft.dispatchedAt = advance(10, 30);
    emit(eventAfter(clock));
    if (lifecycle === 'returned') {
      bump();
      draft.returnedAt = advance(20, 60);
      draft.cancelledAt = advance(1, 5);
      draft.status = 'cancelled';
      emit(eventAfter(clock));
      return versions;
    }
    if (rng.chance(0.85)) {
      bump();
      draft.deliveredAt = advance(10, 40);
      emit(eventAfter(clock));
    }
  }
  if (lifecycle === 'cancelled') {
    bump();
    draft.status = 'cancelled';
    draft.cancelledAt = advance(5, 60);
    emit(eventAfter(clock));
  }
  return versions;
}

function applyMutation(
  rng: Random,
  draft: OrderDraft,
  mutation: Mutation,
  offerLineId: string | undefined,
  nextItemId: () => string,
): void {
  const untouched = draft.items.filter(
    (item) =>
      item.type === 'product' &&
      item.id !== offerLineId &&
      item.quantityOrdered > 0 &&
      item.quantityFulfilled === item.quantityOrdered &&
      item.substitutionDetails === undefined &&
      item.priceAdjustmentDetails === undefined,
  );
  if (mutation === 'out-of-stock') {
    const candidates = untouched.filter((item) => item.quantityOrdered >= 2);
    if (candidates.length === 0) return;
    const item = rng.pick(candidates);
    item.quantityFulfilled = rng.int(1, item.quantityOrdered - 1);
    return;
  }
  if (mutation === 'substitution') {
    if (untouched.length === 0) return;
    const original = rng.pick(untouched);
    const substitute: ItemDraft = {
      id: nextItemId(),
      name: `${original.name} (alternative)`,
      type: 'product',
      price: Math.max(10, Math.round((original.price * rng.int(80, 130)) / 1000) * 10),
      quantityOrdered: 0,
      quantityFulfilled: original.quantityOrdered,
      substitutionDetails: { substitutedFor: [original.id] },
    };
    if (original.barcode !== undefined)
      substitute.barcode = `50${String(rng.int(0, 99_999_999_999)).padStart(11, '0')}`;
    if (original.ageRestricted) substitute.ageRestricted = true;
    original.quantityFulfilled = 0;
    original.substitutionDetails = { substitutedBy: [substitute.id] };
    draft.items.push(substitute);
    // A dearer substitute is sometimes price-matched back to the original's price.
    if (substitute.price > original.price && rng.chance(0.5)) {
      const adjustment: ItemDraft = {
        id: nextItemId(),
        name: 'Price match: substitute at original price',
        type: 'adjustment',
        price: -(substitute.price - original.price) * substitute.quantityFulfilled,
        quantityOrdered: 0,
        quantityFulfilled: 1,
        priceAdjustmentDetails: { itemsAdjusted: [substitute.id] },
      };
      substitute.priceAdjustmentDetails = { relatedPriceAdjustment: adjustment.id };
      draft.items.push(adjustment);
    }
    return;
  }
  if (mutation === 'adjustment') {
    if (untouched.length === 0) return;
    const item = rng.pick(untouched);
    const adjustment: ItemDraft = {
      id: nextItemId(),
      name: rng.pick(['Damaged packaging refund', 'Price match', 'Missing component refund']),
      type: 'adjustment',
      price: -Math.max(10, Math.round((item.price * rng.pick([20, 30, 50])) / 1000) * 10),
      quantityOrdered: 0,
      quantityFulfilled: 1,
      priceAdjustmentDetails: { itemsAdjusted: [item.id] },
    };
    item.priceAdjustmentDetails = { relatedPriceAdjustment: adjustment.id };
    draft.items.push(adjustment);
  }
}

/** Every order's versions, oldest first, with times relative to 0 (the feed is shifted later). */
export function generateHistories(options: HistoryOptions): GeneratedVersion[][] {
  const rng = new Random(options.seed);
  const histories: GeneratedVersion[][] = [];
  for (let i = 0; i < options.orders; i++) histories.push(generateHistory(rng, i, options));
  return histories;
}

export interface StreamDefects {
  /** Fraction of entries served a second time, later in the stream. */
  duplicateVersions?: number;
  /** Fraction of multi-version orders with one lower version delayed past a higher one. */
  outOfOrderVersions?: number;
  seed: number;
}

/**
 * Flattens histories into one stream ordered by event time, applies defects, makes event times strictly
 * increasing, and shifts the whole stream so that its last entry is at or just before `endsAt`.
 * Defects only ever move an entry later, so every entry's event time stays ≥ the timestamps it carries.
 */
export function buildStream(
  histories: readonly GeneratedVersion[][],
  defects: StreamDefects,
  endsAt: number,
): GeneratedVersion[] {
  const rng = new Random(defects.seed ^ 0x5bd1e995);
  const entries = histories.map((history) => history.map((version) => ({ ...version })));
  const outOfOrder = defects.outOfOrderVersions ?? 0;
  if (outOfOrder > 0) {
    for (const history of entries) {
      if (history.length < 2 || !rng.chance(outOfOrder)) continue;
      const k = rng.int(0, history.length - 2);
      const lower = history[k];
      const higher = history[k + 1];
      if (lower && higher) lower.eventTs = higher.eventTs + rng.int(1_000, 30 * MINUTE);
    }
  }
  const stream = entries.flat();
  const duplicates = defects.duplicateVersions ?? 0;
  if (duplicates > 0) {
    const copies: GeneratedVersion[] = [];
    for (const entry of stream) {
      if (rng.chance(duplicates))
        copies.push({ ...entry, eventTs: entry.eventTs + rng.int(MINUTE, 6 * HOUR) });
    }
    stream.push(...copies);
  }
  stream.sort((a, b) => a.eventTs - b.eventTs);
  let previous = Number.NEGATIVE_INFINITY;
  for (const entry of stream) {
    if (entry.eventTs <= previous) entry.eventTs = previous + 1;
    previous = entry.eventTs;
  }
  const last = stream[stream.length - 1];
  // Whole seconds, so that orders generated on whole seconds stay on whole seconds.
  const shift = last ? Math.floor((endsAt - last.eventTs) / 1000) * 1000 : 0;
  return stream.map((entry) => ({
    ...entry,
    order: shiftOrder(entry.order, shift),
    eventTs: entry.eventTs + shift,
  }));
}

function shiftOrder(order: SimOrder, shift: number): SimOrder {
  const out = { ...order };
  for (const field of TIMESTAMP_FIELDS) if (out[field] !== undefined) out[field] += shift;
  return out;
}

/** Latest version per order and the sales it implies (max version wins; duplicates counted once). */
export function expectedStateOf(orders: Iterable<SimOrder>): ExpectedState {
  const latest = new Map<number, ExpectedOrder>();
  const distinct = new Set<string>();
  for (const order of orders) {
    distinct.add(`${order.id}:${order.version}`);
    const known = latest.get(order.id);
    if (!known || order.version > known.version) {
      latest.set(order.id, {
        id: order.id,
        version: order.version,
        status: order.status,
        vendorId: order.vendorId,
        total: { ...order.total },
      });
    }
  }
  return { orders: latest, sales: salesOf(latest.values()), distinctVersions: distinct.size };
}

/** Orders whose latest version is accepted, per (vendorId, currency), sorted by vendorId then currency. */
function salesOf(orders: Iterable<ExpectedOrder>): ExpectedSale[] {
  const byKey = new Map<string, ExpectedSale>();
  for (const order of orders) {
    if (order.status !== 'accepted') continue;
    const key = `${order.vendorId}\u0000${order.total.currency}`;
    const sale = byKey.get(key) ?? {
      vendorId: order.vendorId,
      currency: order.total.currency,
      count: 0,
      amount: 0,
    };
    sale.count += 1;
    sale.amount += order.total.amount;
    byKey.set(key, sale);
  }
  const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...byKey.values()].sort(
    (a, b) => compare(a.vendorId, b.vendorId) || compare(a.currency, b.currency),
  );
}

/** First index whose value is > `value` (or ≥ it, with `orEqual`); `values` ascending. */
function bound(values: ArrayLike<number>, value: number, orEqual = false): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = values[mid] ?? 0;
    if (at < value || (at === value && !orEqual)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface FeedFilter {
  vendorIds?: readonly string[];
  orderIds?: readonly number[];
  /** Epoch ms; only entries with an event time strictly after it. */
  fromTimestamp?: number;
  /** Hides entries with an event time after `now − minAgeMinutes`. */
  minAgeMinutes?: number;
}

export interface FeedPage {
  /** Stream positions of the entries served, ascending. */
  positions: number[];
  /** Position the scan started at (where a repeat of this page starts). */
  start: number;
  /** Position of the next entry to consider. */
  next: number;
  hasMore: boolean;
}

/** Vendors of a generated feed unless told otherwise: `vendor-1` … `vendor-5`. */
export const DEFAULT_VENDORS = 5;

/** The vendor ids a generated feed of `count` vendors uses. */
export function generatedVendorIds(count = DEFAULT_VENDORS): string[] {
  return Array.from({ length: count }, (_, index) => `vendor-${index + 1}`);
}

export type FeedOptions = NonNullable<SimulatorOptions['feed']>;

/** The generated feed, built once. Also used with `orders: 0` as the empty /v1 stream. */
export class GeneratedFeed {
  /** Stream key carried by cursors; a fingerprint of the options, so restarts with the same options agree. */
  readonly key: string;
  readonly length: number;
  private readonly eventTs: Float64Array;
  private readonly json: string[];
  private readonly vendorOf: string[];
  private readonly positionsByOrder = new Map<number, number[]>();
  private readonly latestJson = new Map<number, string>();
  private readonly expectedState: ExpectedState;
  private readonly stream: SimOrder[];
  private purged = 0;
  private shown = Number.POSITIVE_INFINITY;

  constructor(options: FeedOptions | undefined, endsAt: number) {
    const vendors = options?.vendors ?? DEFAULT_VENDORS;
    const currencies = options?.currencies?.length ? options.currencies : ['EUR'];
    const fingerprint = createHash('sha256')
      .update(
        JSON.stringify([
          options?.seed ?? 0,
          options?.orders ?? 0,
          vendors,
          currencies,
          options?.duplicateVersions ?? 0,
          options?.outOfOrderVersions ?? 0,
          // Only when set, so that the cursors of feeds without it keep their key.
          ...(options?.escapeHeavy ? [options.escapeHeavy, options.longStringBytes ?? 0] : []),
        ]),
      )
      .digest('hex')
      .slice(0, 12);
    this.key = `feed:${fingerprint}`;
    const histories =
      options && options.orders > 0
        ? generateHistories({
            seed: options.seed,
            orders: options.orders,
            vendors,
            currencies,
            idBase: 5_000_000_000,
            spanMs: 3 * 24 * HOUR,
            timestamps: 'mixed',
          })
        : [];
    const stream = buildStream(
      histories,
      {
        seed: options?.seed ?? 0,
        duplicateVersions: options?.duplicateVersions,
        outOfOrderVersions: options?.outOfOrderVersions,
      },
      endsAt,
    );
    // Dice of their own, so that a feed without escape-heavy strings is the feed it always was.
    const escaped = withEscapeHeavyNames(stream, options);
    this.length = stream.length;
    this.stream = stream.map((entry) => entry.order);
    this.eventTs = Float64Array.from(stream, (entry) => entry.eventTs);
    this.vendorOf = stream.map((entry) => entry.order.vendorId);
    const maxVersion = new Map<number, number>();
    for (const { order } of stream) {
      maxVersion.set(order.id, Math.max(order.version, maxVersion.get(order.id) ?? 0));
    }
    this.json = stream.map((entry, position) => {
      const latest = entry.order.version === maxVersion.get(entry.order.id);
      const wire = JSON.stringify(toWire(entry.order, latest, entry.style));
      const text = escaped.asciiOnly.has(entry.order.id) ? asciiOnly(wire) : wire;
      const positions = this.positionsByOrder.get(entry.order.id) ?? [];
      positions.push(position);
      this.positionsByOrder.set(entry.order.id, positions);
      if (latest) this.latestJson.set(entry.order.id, text);
      return text;
    });
    this.expectedState = expectedStateOf(stream.map((entry) => entry.order));
  }

  expected(): ExpectedState {
    const state = this.expectedState;
    return {
      orders: new Map([...state.orders].map(([id, order]) => [id, { ...order, total: { ...order.total } }])),
      sales: state.sales.map((sale) => ({ ...sale })),
      distinctVersions: state.distinctVersions,
    };
  }

  /** The end state and the versions of the entries at `positions` (all of them when undefined). */
  oracle(positions?: Iterable<number>): Oracle {
    const orders: SimOrder[] = [];
    for (const position of positions ?? this.stream.keys()) {
      const order = this.stream[position];
      if (order) orders.push(order);
    }
    const state = expectedStateOf(orders);
    return {
      ...state,
      versionKeys: new Set(orders.map((order) => `${order.id}:${order.version}`)),
      entries: orders.length,
    };
  }

  /** The JSON bytes of the entry at `position` (what a page spends on it). */
  entryBytes(position: number): number {
    return Buffer.byteLength(this.entryJson(position));
  }

  /** New versions arriving: only the first `entries` entries exist until more are shown (all by default). */
  showFirst(entries: number): void {
    this.shown = Math.max(0, Math.min(this.length, Math.floor(entries)));
  }

  /** Retention: entries before `fraction` of the stream are gone; cursors into them answer 404. */
  purgeBefore(fraction: number): void {
    const clamped = Math.min(1, Math.max(0, fraction));
    this.purged = Math.floor(clamped * this.length);
  }

  get firstRetained(): number {
    return this.purged;
  }

  isPurged(position: number): boolean {
    return position < this.purged;
  }

  /** JSON of the latest version of an order (latestVersion true), or undefined. */
  latestOrderJson(id: number): string | undefined {
    return this.latestJson.get(id);
  }

  entryJson(position: number): string {
    const text = this.json[position];
    if (text === undefined) throw new Error(`no stream entry at ${position}`);
    return text;
  }

  /** The page starting at `from` (clamped to the retained part and to `fromTimestamp`). */
  page(from: number, pageSize: number, filter: FeedFilter, now: number): FeedPage {
    let start = Math.max(from, this.purged);
    if (filter.fromTimestamp !== undefined)
      start = Math.max(start, bound(this.eventTs, filter.fromTimestamp));
    const end = Math.min(
      this.shown,
      filter.minAgeMinutes === undefined
        ? this.length
        : bound(this.eventTs, now - filter.minAgeMinutes * MINUTE),
    );
    if (start >= end) return { positions: [], start, next: Math.max(start, from), hasMore: false };

    const vendors = filter.vendorIds ? new Set(filter.vendorIds) : undefined;
    const matches = (position: number): boolean => !vendors || vendors.has(this.vendorOf[position] ?? '');
    // With orderIds, only the positions of those orders; else every position from `start`.
    const candidates = filter.orderIds
      ? [...new Set(filter.orderIds)]
          .flatMap((id) => this.positionsByOrder.get(id) ?? [])
          .sort((a, b) => a - b)
      : undefined;
    const positions: number[] = [];
    let hasMore = false;
    for (let i = candidates ? bound(candidates, start, true) : start; ; i++) {
      const position = candidates ? (candidates[i] ?? end) : i;
      if (position >= end) break;
      if (!matches(position)) continue;
      if (positions.length === pageSize) {
        hasMore = true;
        break;
      }
      positions.push(position);
    }
    const last = positions[positions.length - 1];
    const next = hasMore && last !== undefined ? last + 1 : end;
    return { positions, start, next, hasMore };
  }
}

/** A long item name full of what JSON must escape, with a 16-digit run first (options.escapeHeavy). */
export function escapeHeavyText(rng: Random, chars: number): string {
  const units = [
    '\\"',
    '"\\',
    '\n',
    '\t',
    '\r',
    '\u0001',
    '\u001f',
    'é',
    '😀',
    '中文',
    '</script>',
    '\u2028',
    "'",
    '\\u0041',
  ];
  // A run of quote-backslash pairs: what makes a naive string scanner backtrack on a cut body.
  const pairs = '"\\'.repeat(Math.max(0, Math.floor(chars / 4)));
  let text = `REF 4111111111111111 ${pairs}`;
  // Never cut: a cut could split an emoji's surrogate pair.
  while (text.length < chars) text += rng.pick(units);
  return text;
}

/** JSON text with every character beyond ASCII as a \\u escape: the same value, as some partners write it. */
export function asciiOnly(json: string): string {
  return json.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * options.escapeHeavy: that fraction of the orders get an escape-heavy first item name (the same on every
 * version, so money and state are unchanged), and half of those are written with ASCII-only JSON.
 */
function withEscapeHeavyNames(
  stream: GeneratedVersion[],
  options: FeedOptions | undefined,
): { asciiOnly: Set<number> } {
  const ascii = new Set<number>();
  const fraction = options?.escapeHeavy ?? 0;
  if (fraction <= 0) return { asciiOnly: ascii };
  const rng = new Random((options?.seed ?? 0) ^ 0x2c1b3c6d);
  const names = new Map<number, string>();
  const chars = options?.longStringBytes ?? 20_000;
  for (const entry of stream) {
    const { order } = entry;
    if (!names.has(order.id)) {
      const chosen = rng.chance(fraction);
      names.set(order.id, chosen ? escapeHeavyText(rng, rng.int(Math.ceil(chars / 4), chars)) : '');
      if (chosen && rng.chance(0.5)) ascii.add(order.id);
    }
    const name = names.get(order.id);
    if (!name) continue;
    entry.order = {
      ...order,
      items: order.items.map((item, index) => (index === 0 ? { ...item, name } : item)),
    };
  }
  return { asciiOnly: ascii };
}
