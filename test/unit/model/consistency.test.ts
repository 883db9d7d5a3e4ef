import { describe, expect, it } from 'vitest';
import { checkConsistency } from '../../../functions/core/model/consistency.js';
import type { Finding, Order, OrderItem } from '../../../functions/core/model/types.js';
import {
  collectionOrder,
  priceAdjustmentOrder,
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

function codes(findings: Finding[]): string[] {
  return findings.map((finding) => finding.code);
}

describe('checkConsistency', () => {
  describe('rule 1: payments sum to total', () => {
    it.each([
      ['a delivery order paid online', sampleOrder],
      ['a collection order paid cash', collectionOrder],
    ])('finds nothing on %s', (_label, fixture) => {
      // Prepare
      const order = toOrder(fixture());

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([]);
    });

    it('reports payments that do not sum to total', () => {
      // Prepare
      const order = toOrder(sampleOrder());
      order.total.amount = 3198;

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        { code: 'payments-sum-mismatch', detail: 'customerPayments sum to 3098, total.amount is 3198 (EUR)' },
      ]);
    });

    it('reports a payment in another currency as mixed-currency, not as a sum mismatch', () => {
      // Prepare
      const order = toOrder(sampleOrder());
      order.customerPayments.push({
        type: 'cash',
        collectedBy: 'vendor',
        payment: { amount: 100, currency: 'GBP' },
      });

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        { code: 'mixed-currency', detail: 'total is EUR; differs: customerPayments[1].payment (GBP)' },
      ]);
    });

    it('reports an item priced in another currency', () => {
      // Prepare
      const order = toOrder(sampleOrder());
      item(order, 'item-2').price.currency = 'USD';

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        { code: 'mixed-currency', detail: 'total is EUR; differs: items[1].price (USD)' },
      ]);
    });
  });

  describe('rule 2: vouchers', () => {
    it('counts a platform voucher payment toward total without subtracting it again', () => {
      // Prepare
      const order = toOrder(voucherOrder());

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([]);
    });

    it('reports a mismatch when the voucher payment is missing from the payments', () => {
      // Prepare
      const order = toOrder(voucherOrder());
      order.customerPayments = order.customerPayments.filter((payment) => payment.type !== 'voucher');

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(codes(findings)).toEqual(['payments-sum-mismatch']);
    });
  });

  describe('rule 3: substitutions', () => {
    it('finds nothing on one-to-one and many-to-one substitutions linked both ways', () => {
      // Prepare
      const order = toOrder(substitutionOrder());

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([]);
    });

    it('reports a substituted original that was still fulfilled', () => {
      // Prepare
      const order = toOrder(substitutionOrder());
      item(order, 'milk').quantityFulfilled = 1;

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        {
          code: 'substitution-quantity',
          detail: 'items[1] (id "milk") is substituted but has quantityFulfilled 1, expected 0',
        },
      ]);
    });

    it('reports a substitute that was ordered or not fulfilled', () => {
      // Prepare
      const order = toOrder(substitutionOrder());
      item(order, 'milk-sub').quantityOrdered = 1;
      item(order, 'cheese-sub').quantityFulfilled = 0;

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(codes(findings)).toEqual(['substitution-quantity', 'substitution-quantity']);
      expect(findings[0]?.detail).toContain('"milk-sub"');
      expect(findings[1]?.detail).toContain('"cheese-sub"');
    });

    it('reports a many-to-one substitute that does not reference one of its originals back', () => {
      // Prepare
      const order = toOrder(substitutionOrder());
      item(order, 'cheese-sub').substitutionDetails = { substitutedFor: ['cheddar'] };

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        {
          code: 'substitution-link-missing',
          detail:
            'items[4] (id "gouda") is substitutedBy "cheese-sub", which does not list it in substitutedFor',
        },
      ]);
    });

    it('reports a substitute whose original does not name it', () => {
      // Prepare
      const order = toOrder(substitutionOrder());
      delete item(order, 'milk').substitutionDetails;
      item(order, 'milk').quantityFulfilled = 0;

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(codes(findings)).toEqual(['substitution-link-missing']);
      expect(findings[0]?.detail).toContain('items[2] (id "milk-sub") is substitutedFor "milk"');
    });

    it('reports a reference to an item id that is not in the order', () => {
      // Prepare
      const order = toOrder(substitutionOrder());
      item(order, 'milk').substitutionDetails = { substitutedBy: ['milk-sub', 'oat-milk'] };

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        {
          code: 'dangling-item-reference',
          detail: 'items[1] (id "milk") substitutionDetails.substitutedBy names unknown item "oat-milk"',
        },
      ]);
    });

    it('reports two items sharing an id', () => {
      // Prepare
      const order = toOrder(substitutionOrder());
      item(order, 'bread').id = 'milk';

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(codes(findings)).toContain('duplicate-item-id');
    });
  });

  describe('rule 4: price adjustments', () => {
    it('finds nothing on an adjustment restoring the original price, linked both ways', () => {
      // Prepare
      const order = toOrder(priceAdjustmentOrder());

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([]);
    });

    it('reports an adjustment line of the wrong shape', () => {
      // Prepare
      const order = toOrder(priceAdjustmentOrder());
      const adjustment = item(order, 'adj-1');
      adjustment.quantityOrdered = 1;
      adjustment.price.amount = 100;

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        {
          code: 'adjustment-shape',
          detail: 'items[3] (id "adj-1"): quantityOrdered 1, expected 0; price.amount 100, expected negative',
        },
      ]);
    });

    it('reports an adjustment that lists no adjusted items', () => {
      // Prepare
      const order = toOrder(priceAdjustmentOrder());
      item(order, 'adj-1').priceAdjustmentDetails = {};

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(codes(findings)).toEqual(['adjustment-link-missing', 'adjustment-shape']);
      expect(findings[0]?.detail).toContain('items[2] (id "juice-sub") names relatedPriceAdjustment "adj-1"');
      expect(findings[1]?.detail).toContain('no itemsAdjusted');
    });

    it('reports an adjusted item that does not reference its adjustment', () => {
      // Prepare
      const order = toOrder(priceAdjustmentOrder());
      delete item(order, 'juice-sub').priceAdjustmentDetails;

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(findings).toEqual([
        {
          code: 'adjustment-link-missing',
          detail: 'items[3] (id "adj-1") adjusts "juice-sub", whose relatedPriceAdjustment does not name it',
        },
      ]);
    });

    it('reports an adjustment naming an item that is not in the order', () => {
      // Prepare
      const order = toOrder(priceAdjustmentOrder());
      item(order, 'adj-1').priceAdjustmentDetails = { itemsAdjusted: ['juice-sub', 'ghost'] };

      // Act
      const findings = checkConsistency(order);

      // Assess
      expect(codes(findings)).toEqual(['dangling-item-reference']);
      expect(findings[0]?.detail).toContain('"ghost"');
    });
  });
});
