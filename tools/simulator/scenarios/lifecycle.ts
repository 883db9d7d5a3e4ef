// Scenarios about order versions and state transitions over several polls.

import type { OrderDraft } from '../model.js';
import { ago, latestAtServeTime, present, product, type ScenarioDefinition, versions } from './build.js';

const collection = (id: number, minutesAgo: number, overrides: Partial<OrderDraft> = {}): OrderDraft => ({
  id,
  version: 1,
  vendorId: 'vendor-1',
  currency: 'EUR',
  status: 'placed',
  type: 'collection',
  placedAt: ago(minutesAgo),
  serviceFee: 99,
  items: [
    product(`${id}-1`, 'Margherita pizza', 1090, 1),
    product(`${id}-2`, 'Cola 330ml', 150, 2, { barcode: '5000112637922' }),
  ],
  payments: [{ type: 'online', collectedBy: 'platform' }],
  ...overrides,
});

const [lifecyclePlaced, lifecycleAccepted, lifecycleCancelled] = versions(
  collection(3_008_000_001, 45),
  (d) => {
    d.status = 'accepted';
    d.acceptedAt = ago(42);
  },
  (d) => {
    d.status = 'cancelled';
    d.cancelledAt = ago(10);
  },
);
const rejected = versions(collection(3_008_000_002, 30), (d) => {
  d.status = 'rejected';
  d.cancelledAt = ago(20);
});
const accepted = versions(collection(3_008_000_003, 25, { vendorId: 'vendor-2' }), (d) => {
  d.status = 'accepted';
  d.acceptedAt = ago(22);
});
const placedOnly = versions(collection(3_008_000_004, 8));

export const orderLifecycle: ScenarioDefinition = {
  id: 'test-order-lifecycle',
  summary:
    '3 polls: one order placed → accepted → cancelled; poll 3 adds a rejected, an accepted, a placed order',
  polls: latestAtServeTime([
    present(lifecyclePlaced),
    present(lifecycleAccepted),
    present(lifecycleCancelled, ...rejected, ...accepted, ...placedOnly),
  ]),
};

const versioningOrders = versions(
  {
    id: 3_009_000_001,
    version: 1,
    vendorId: 'vendor-1',
    currency: 'EUR',
    status: 'placed',
    type: 'delivery',
    placedAt: ago(90),
    deliveryFee: 249,
    serviceFee: 99,
    deliveryProvider: 'courier_partner',
    items: [
      product('3009000001-1', 'Pad thai', 1490, 1, {
        vendorReference: 'PT-01',
        optionCategories: [
          { name: 'Protein', selectedOptions: [{ name: 'Prawn', optionPrice: 200 }] },
          { name: 'Spice level', selectedOptions: [{ name: 'Hot' }] },
        ],
      }),
      product('3009000001-2', 'Vegetable spring rolls', 450, 2, { vendorReference: 'SR-02' }),
      product('3009000001-3', 'Sparkling water 500ml', 120, 3, { barcode: '5010028000842' }),
    ],
    payments: [{ type: 'online', collectedBy: 'platform' }],
  },
  // v2: accepted, one sparkling water out of stock (lower total).
  (d) => {
    d.status = 'accepted';
    d.acceptedAt = ago(85);
    const water = d.items[2];
    if (water) water.quantityFulfilled = 2;
  },
  // v3: dispatched, a price-match adjustment on the pad thai (lower total).
  (d) => {
    d.dispatchedAt = ago(60);
    const padThai = d.items[0];
    if (padThai) padThai.priceAdjustmentDetails = { relatedPriceAdjustment: '3009000001-4' };
    d.items.push({
      id: '3009000001-4',
      name: 'Price match',
      type: 'adjustment',
      price: -150,
      quantityOrdered: 0,
      quantityFulfilled: 1,
      priceAdjustmentDetails: { itemsAdjusted: ['3009000001-1'] },
    });
  },
  // v4: delivered, a refund for damaged spring rolls (lower total).
  (d) => {
    d.deliveredAt = ago(35);
    const rolls = d.items[1];
    if (rolls) rolls.priceAdjustmentDetails = { relatedPriceAdjustment: '3009000001-5' };
    d.items.push({
      id: '3009000001-5',
      name: 'Damaged packaging refund',
      type: 'adjustment',
      price: -200,
      quantityOrdered: 0,
      quantityFulfilled: 1,
      priceAdjustmentDetails: { itemsAdjusted: ['3009000001-2'] },
    });
  },
);
const [v1, v2, v3, v4] = versioningOrders;

export const versioning: ScenarioDefinition = {
  id: 'test-versioning',
  summary:
    '3 polls of one order: v1 placed | v2 accepted (latestVersion false) + v3 | v4 delivered; money changes',
  polls: latestAtServeTime([present(v1), present(v2, v3), present(v4)]),
};

const [outOfOrderV1, outOfOrderV2] = versions(collection(3_010_000_001, 20), (d) => {
  d.status = 'accepted';
  d.acceptedAt = ago(18);
});

export const outOfOrderVersions: ScenarioDefinition = {
  id: 'test-out-of-order-versions',
  summary: 'accepted v2 is served before placed v1; keep the higher version',
  polls: latestAtServeTime([present(outOfOrderV2, outOfOrderV1)]),
};
