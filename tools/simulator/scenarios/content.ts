// Scenarios about what an order carries: options, offers, substitutions, adjustments, vouchers,
// payments, delivery variants and vendor locations.

import { materialize } from '../model.js';
import { ago, latestAtServeTime, present, product, type ScenarioDefinition, versions } from './build.js';

const itemsAndOptionsVersions = versions(
  {
    id: 3_011_000_001,
    version: 1,
    vendorId: 'vendor-1',
    currency: 'EUR',
    status: 'placed',
    type: 'delivery',
    placedAt: ago(40),
    deliveryFee: 199,
    serviceFee: 99,
    deliveryProvider: 'vendor',
    items: [
      // Composite item: customised, surcharge options, no barcode. 1100 base + 150 + 80 in options.
      product('3011000001-1', 'Build-your-own burger', 1330, 1, {
        vendorReference: 'BURGER-BYO',
        optionCategories: [
          {
            name: 'Extras',
            selectedOptions: [
              { name: 'Bacon', optionPrice: 150 },
              { name: 'Extra cheese', optionPrice: 80 },
            ],
          },
          { name: 'Sauce', selectedOptions: [{ name: 'Chipotle mayo' }] },
        ],
      }),
      product('3011000001-2', 'Cola 330ml can', 150, 3, {
        barcode: '5000112637922',
        vendorReference: 'COLA-330',
      }),
      {
        id: '3011000001-3',
        name: '3 for 2 on cans',
        type: 'offer',
        price: -150,
        quantityOrdered: 1,
        quantityFulfilled: 1,
      },
      product('3011000001-4', 'Craft IPA 500ml', 420, 2, {
        barcode: '5060045590019',
        vendorReference: 'IPA-500',
        ageRestricted: true,
      }),
      product('3011000001-5', 'Salted caramel brownie', 350, 2, { vendorReference: 'BROWNIE' }),
    ],
    payments: [{ type: 'online', collectedBy: 'platform' }],
  },
  // v2: accepted; one brownie is out of stock.
  (d) => {
    d.status = 'accepted';
    d.acceptedAt = ago(37);
    const brownie = d.items[4];
    if (brownie) brownie.quantityFulfilled = 1;
  },
);

export const itemsAndOptions: ScenarioDefinition = {
  id: 'test-items-and-options',
  summary: 'options with a surcharge, an offer, barcodes; v2 has an item out of stock (lower total)',
  polls: latestAtServeTime([itemsAndOptionsVersions]),
};

const substitutionVersions = versions(
  {
    id: 3_012_000_001,
    version: 1,
    vendorId: 'vendor-1',
    currency: 'EUR',
    status: 'placed',
    type: 'delivery',
    placedAt: ago(70),
    deliveryFee: 299,
    serviceFee: 149,
    deliveryProvider: 'courier_partner',
    items: [
      product('3012000001-1', 'Whole milk 2L', 185, 2, { barcode: '5000128104517' }),
      product('3012000001-2', 'Sourdough loaf', 320, 1),
      product('3012000001-3', 'Royal Gala apples x6', 240, 1, { barcode: '5000169005231' }),
      product('3012000001-4', 'Pink Lady apples x4', 275, 1, { barcode: '5000169108123' }),
      product('3012000001-5', 'Bananas x5', 135, 1),
    ],
    payments: [{ type: 'online', collectedBy: 'platform' }],
  },
  // v2: accepted; milk substituted one-to-one, both apple packs substituted by one mixed bag (many-to-one).
  (d) => {
    d.status = 'accepted';
    d.acceptedAt = ago(65);
    const [milk, , gala, pinkLady] = d.items;
    if (!milk || !gala || !pinkLady) throw new Error('scenario data');
    milk.quantityFulfilled = 0;
    milk.substitutionDetails = { substitutedBy: ['3012000001-6'] };
    gala.quantityFulfilled = 0;
    gala.substitutionDetails = { substitutedBy: ['3012000001-7'] };
    pinkLady.quantityFulfilled = 0;
    pinkLady.substitutionDetails = { substitutedBy: ['3012000001-7'] };
    d.items.push(
      product('3012000001-6', 'Semi-skimmed milk 2L', 175, 0, {
        barcode: '5000128104524',
        quantityFulfilled: 2,
        substitutionDetails: { substitutedFor: ['3012000001-1'] },
      }),
      product('3012000001-7', 'Mixed apples x10', 450, 0, {
        barcode: '5000169112045',
        quantityFulfilled: 1,
        substitutionDetails: { substitutedFor: ['3012000001-3', '3012000001-4'] },
      }),
    );
  },
);

export const substitutions: ScenarioDefinition = {
  id: 'test-substitutions',
  summary: 'v1 placed; v2 has out-of-stock originals substituted (one-to-one and many-to-one), cross-linked',
  polls: latestAtServeTime([substitutionVersions]),
};

const priceAdjustmentVersions = versions(
  {
    id: 3_013_000_001,
    version: 1,
    vendorId: 'vendor-1',
    currency: 'EUR',
    status: 'placed',
    type: 'collection',
    placedAt: ago(50),
    serviceFee: 49,
    items: [
      product('3013000001-1', 'Cheddar 200g', 350, 1, { barcode: '5000295142893' }),
      product('3013000001-2', 'Sea salt crackers', 180, 1, { barcode: '5000168183275' }),
      product('3013000001-3', 'Red grapes 500g', 300, 1),
    ],
    payments: [{ type: 'online', collectedBy: 'platform' }],
  },
  // v2: accepted; the cheddar is out of stock, substituted by a dearer one and price-matched back.
  (d) => {
    d.status = 'accepted';
    d.acceptedAt = ago(46);
    const cheddar = d.items[0];
    if (!cheddar) throw new Error('scenario data');
    cheddar.quantityFulfilled = 0;
    cheddar.substitutionDetails = { substitutedBy: ['3013000001-4'] };
    d.items.push(
      product('3013000001-4', 'Cheddar 400g', 590, 0, {
        barcode: '5000295142909',
        quantityFulfilled: 1,
        substitutionDetails: { substitutedFor: ['3013000001-1'] },
        priceAdjustmentDetails: { relatedPriceAdjustment: '3013000001-5' },
      }),
      {
        id: '3013000001-5',
        name: 'Price match: substitute at original price',
        type: 'adjustment',
        price: -240,
        quantityOrdered: 0,
        quantityFulfilled: 1,
        priceAdjustmentDetails: { itemsAdjusted: ['3013000001-4'] },
      },
    );
  },
);

export const priceAdjustments: ScenarioDefinition = {
  id: 'test-price-adjustments',
  summary: 'v1 vanilla; v2 substitutes a dearer item plus a linked negative adjustment (same total)',
  polls: latestAtServeTime([priceAdjustmentVersions]),
};

export const vouchers: ScenarioDefinition = {
  id: 'test-vouchers',
  summary: 'vendor-funded 15% voucher item, platform voucher payment plus vendor cash',
  polls: latestAtServeTime([
    [
      materialize({
        id: 3_014_000_001,
        version: 1,
        vendorId: 'vendor-1',
        currency: 'EUR',
        status: 'accepted',
        type: 'collection',
        placedAt: ago(35),
        acceptedAt: ago(33),
        serviceFee: 99,
        items: [
          product('3014000001-1', 'Margherita pizza', 1100, 2),
          product('3014000001-2', 'Garlic bread', 450, 1),
          product('3014000001-3', 'Tiramisu', 500, 1),
          {
            id: '3014000001-4',
            name: '15% off (vendor promotion)',
            type: 'voucher',
            price: -473,
            quantityOrdered: 1,
            quantityFulfilled: 1,
          },
        ],
        payments: [
          { type: 'voucher', collectedBy: 'platform', amount: 500 },
          { type: 'cash', collectedBy: 'vendor' },
        ],
      }),
    ],
  ]),
};

export const payments: ScenarioDefinition = {
  id: 'test-payments',
  summary: 'two orders: vendor cash + platform voucher; online via platform + platform voucher',
  polls: latestAtServeTime([
    [
      materialize({
        id: 3_015_000_001,
        version: 1,
        vendorId: 'vendor-1',
        currency: 'EUR',
        status: 'accepted',
        type: 'delivery',
        placedAt: ago(55),
        acceptedAt: ago(52),
        deliveryFee: 199,
        serviceFee: 79,
        deliveryProvider: 'vendor',
        items: [product('3015000001-1', 'Chicken burger', 1150, 2), product('3015000001-2', 'Fries', 350, 2)],
        payments: [
          { type: 'voucher', collectedBy: 'platform', amount: 1000 },
          { type: 'cash', collectedBy: 'vendor' },
        ],
      }),
      materialize({
        id: 3_015_000_002,
        version: 1,
        vendorId: 'vendor-1',
        currency: 'EUR',
        status: 'accepted',
        type: 'delivery',
        placedAt: ago(48),
        acceptedAt: ago(46),
        deliveryFee: 249,
        serviceFee: 99,
        deliveryProvider: 'courier_partner',
        items: [
          product('3015000002-1', 'Sushi platter', 2450, 1),
          product('3015000002-2', 'Miso soup', 300, 2),
        ],
        payments: [
          { type: 'online', collectedBy: 'platform' },
          { type: 'voucher', collectedBy: 'platform', amount: 500 },
        ],
      }),
    ],
  ]),
};

const courierVersions = versions(
  {
    id: 3_016_000_002,
    version: 1,
    vendorId: 'vendor-1',
    currency: 'EUR',
    status: 'accepted',
    type: 'delivery',
    placedAt: ago(80),
    acceptedAt: ago(78),
    dispatchedAt: ago(60),
    deliveryFee: 249,
    serviceFee: 99,
    deliveryProvider: 'courier_partner',
    items: [
      product('3016000002-1', 'Chicken burger', 1150, 1),
      product('3016000002-2', 'Cola 330ml', 150, 1),
    ],
    payments: [{ type: 'online', collectedBy: 'platform' }],
  },
  // v2: delivered.
  (d) => {
    d.deliveredAt = ago(40);
  },
);

export const delivery: ScenarioDefinition = {
  id: 'test-delivery',
  summary: 'a collection order, a courier_partner delivery (dispatched then delivered), a vendor delivery',
  polls: latestAtServeTime([
    [
      materialize({
        id: 3_016_000_001,
        version: 1,
        vendorId: 'vendor-1',
        currency: 'EUR',
        status: 'accepted',
        type: 'collection',
        placedAt: ago(85),
        acceptedAt: ago(84),
        serviceFee: 49,
        items: [product('3016000001-1', 'Caesar salad', 850, 1)],
        payments: [{ type: 'online', collectedBy: 'platform' }],
      }),
      ...present(...courierVersions),
      materialize({
        id: 3_016_000_003,
        version: 1,
        vendorId: 'vendor-1',
        currency: 'EUR',
        status: 'accepted',
        type: 'delivery',
        placedAt: ago(30),
        acceptedAt: ago(28),
        deliveryFee: 199,
        serviceFee: 79,
        deliveryProvider: 'vendor',
        items: [product('3016000003-1', 'Margherita pizza', 1100, 1)],
        payments: [{ type: 'cash', collectedBy: 'vendor' }],
      }),
    ],
  ]),
};

export const multiLocation: ScenarioDefinition = {
  id: 'test-multi-location',
  summary: 'two orders from two vendor locations (vendor-1, vendor-2)',
  polls: latestAtServeTime([
    [
      materialize({
        id: 3_017_000_001,
        version: 1,
        vendorId: 'vendor-1',
        currency: 'EUR',
        status: 'accepted',
        type: 'collection',
        placedAt: ago(25),
        acceptedAt: ago(24),
        serviceFee: 49,
        items: [product('3017000001-1', 'Pad thai', 1290, 1)],
        payments: [{ type: 'online', collectedBy: 'platform' }],
      }),
      materialize({
        id: 3_017_000_002,
        version: 1,
        vendorId: 'vendor-2',
        currency: 'EUR',
        status: 'accepted',
        type: 'collection',
        placedAt: ago(20),
        acceptedAt: ago(19),
        serviceFee: 49,
        items: [product('3017000002-1', 'Chicken burger', 1150, 2)],
        payments: [{ type: 'online', collectedBy: 'platform' }],
      }),
    ],
  ]),
};
