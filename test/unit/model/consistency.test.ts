import { describe, expect, it } from 'vitest';
import { checkConsistency } from '../../../functions/core/model/consistency.js';
import type { Finding, Order, OrderItem } from '../../../functions/core/model/types.js';
import {
  priceAdjustmentOrder,
  type RawOrder,
  sampleOrder,
  substitutionOrder,
  toOrder,
  voucherOrder,
} from '../../fixtures/orders.js';

function item(order: Order, id: string): OrderItem {
  const found = order.items.find((candidate) => candidate.id === id);
  if (found === undefined) throw new Error(`no item ${id}`);
  return found;
}

/** The exact findings, or their codes and a fragment of each finding's detail. */
type Expected = Finding[] | { codes: string[]; details: string[] };
const finding = (code: string, detail: string): Finding => ({ code, detail });

describe('checkConsistency', () => {
  // The five spec fixtures (rules 1 to 4 kept) are read without a finding in golden-messages.test.ts.
  it.each<[string, () => RawOrder, (order: Order) => void, Expected]>([
    [
      'rule 1: payments that do not sum to total',
      sampleOrder,
      (o) => {
        o.total.amount = 3198;
      },
      [finding('payments-sum-mismatch', 'customerPayments sum to 3098, total.amount is 3198 (EUR)')],
    ],
    [
      'rule 1: a payment in another currency as mixed-currency, not as a sum mismatch',
      sampleOrder,
      (o) => {
        o.customerPayments.push({
          type: 'cash',
          collectedBy: 'vendor',
          payment: { amount: 100, currency: 'GBP' },
        });
      },
      [finding('mixed-currency', 'total is EUR; differs: customerPayments[1].payment (GBP)')],
    ],
    [
      'rule 1: an item priced in another currency',
      sampleOrder,
      (o) => {
        item(o, 'item-2').price.currency = 'USD';
      },
      [finding('mixed-currency', 'total is EUR; differs: items[1].price (USD)')],
    ],
    [
      'rule 2: a voucher payment missing from the payments',
      voucherOrder,
      (o) => {
        o.customerPayments = o.customerPayments.filter((payment) => payment.type !== 'voucher');
      },
      { codes: ['payments-sum-mismatch'], details: [''] },
    ],
    [
      'rule 3: a substituted original that was still fulfilled',
      substitutionOrder,
      (o) => {
        item(o, 'milk').quantityFulfilled = 1;
      },
      [
        finding(
          'substitution-quantity',
          'items[1] (id "milk") is substituted but has quantityFulfilled 1, expected 0',
        ),
      ],
    ],
    [
      'rule 3: a substitute that was ordered or not fulfilled',
      substitutionOrder,
      (o) => {
        item(o, 'milk-sub').quantityOrdered = 1;
        item(o, 'cheese-sub').quantityFulfilled = 0;
      },
      { codes: ['substitution-quantity', 'substitution-quantity'], details: ['"milk-sub"', '"cheese-sub"'] },
    ],
    [
      'rule 3: a many-to-one substitute that does not reference one of its originals back',
      substitutionOrder,
      (o) => {
        item(o, 'cheese-sub').substitutionDetails = { substitutedFor: ['cheddar'] };
      },
      [
        finding(
          'substitution-link-missing',
          'items[4] (id "gouda") is substitutedBy "cheese-sub", which does not list it in substitutedFor',
        ),
      ],
    ],
    [
      'rule 3: a substitute whose original does not name it',
      substitutionOrder,
      (o) => {
        delete item(o, 'milk').substitutionDetails;
        item(o, 'milk').quantityFulfilled = 0;
      },
      {
        codes: ['substitution-link-missing'],
        details: ['items[2] (id "milk-sub") is substitutedFor "milk"'],
      },
    ],
    [
      'rule 3: a reference to an item id that is not in the order',
      substitutionOrder,
      (o) => {
        item(o, 'milk').substitutionDetails = { substitutedBy: ['milk-sub', 'oat-milk'] };
      },
      [
        finding(
          'dangling-item-reference',
          'items[1] (id "milk") substitutionDetails.substitutedBy names unknown item "oat-milk"',
        ),
      ],
    ],
    [
      'rule 4: an adjustment line of the wrong shape',
      priceAdjustmentOrder,
      (o) => {
        item(o, 'adj-1').quantityOrdered = 1;
        item(o, 'adj-1').price.amount = 100;
      },
      [
        finding(
          'adjustment-shape',
          'items[3] (id "adj-1"): quantityOrdered 1, expected 0; price.amount 100, expected negative',
        ),
      ],
    ],
    [
      'rule 4: an adjustment that lists no adjusted items',
      priceAdjustmentOrder,
      (o) => {
        item(o, 'adj-1').priceAdjustmentDetails = {};
      },
      {
        codes: ['adjustment-link-missing', 'adjustment-shape'],
        details: ['items[2] (id "juice-sub") names relatedPriceAdjustment "adj-1"', 'no itemsAdjusted'],
      },
    ],
    [
      'rule 4: an adjusted item that does not reference its adjustment',
      priceAdjustmentOrder,
      (o) => {
        delete item(o, 'juice-sub').priceAdjustmentDetails;
      },
      [
        finding(
          'adjustment-link-missing',
          'items[3] (id "adj-1") adjusts "juice-sub", whose relatedPriceAdjustment does not name it',
        ),
      ],
    ],
    [
      'rule 4: an adjustment naming an item that is not in the order',
      priceAdjustmentOrder,
      (o) => {
        item(o, 'adj-1').priceAdjustmentDetails = { itemsAdjusted: ['juice-sub', 'ghost'] };
      },
      { codes: ['dangling-item-reference'], details: ['"ghost"'] },
    ],
  ])('reports %s', (_label, fixture, change, expected) => {
    const order = toOrder(fixture());
    change(order);

    const findings = checkConsistency(order);

    if (Array.isArray(expected)) {
      expect(findings).toEqual(expected);
      return;
    }
    expect(findings.map((f) => f.code)).toEqual(expected.codes);
    expected.details.forEach((detail, index) => {
      expect(findings[index]?.detail).toContain(detail);
    });
  });

  it('reports two items sharing an id', () => {
    const order = toOrder(substitutionOrder());
    item(order, 'bread').id = 'milk';

    expect(checkConsistency(order).map((f) => f.code)).toContain('duplicate-item-id');
  });
});
