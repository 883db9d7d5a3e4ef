/**
 * Consistency rules of spec section 2, checked on an accepted (normalised) order.
 * Flow: index items by id -> money (rules 1, 2) -> substitutions (rule 3) -> price adjustments (rule 4).
 * Every violation is a Finding, never a rejection: the data is the partner's record of what happened,
 * and the ledger still needs it; findings make the inconsistency visible.
 *
 * Codes:
 * - `mixed-currency`: a money field's currency differs from `total.currency` (payments, fees, items).
 * - `payments-sum-mismatch`: sum of `customerPayments[].payment.amount` differs from `total.amount`
 *   (rule 1). Not checked when a payment's currency differs from the total's: that sum means nothing.
 * - `duplicate-item-id`: two items share an id, so references to it are ambiguous.
 * - `dangling-item-reference`: a substitution or adjustment detail names an item id not in the order.
 * - `substitution-quantity`: an original with `substitutedBy` has `quantityFulfilled` > 0, or a
 *   substitute (`substitutedFor`) has `quantityOrdered` != 0 or `quantityFulfilled` 0 (rule 3).
 * - `substitution-link-missing`: one side of a substitution does not reference the other back (rule 3).
 * - `adjustment-shape`: an `adjustment` item without quantityOrdered 0, quantityFulfilled 1, a negative
 *   price and a non-empty `itemsAdjusted` (rule 4).
 * - `adjustment-link-missing`: an adjustment and an adjusted item do not reference each other (rule 4).
 *
 * Rule 2 (vouchers) needs no check of its own: a voucher item's negative line total is already part of
 * `total`, and a platform-collected voucher payment is money received toward `total`, so it is one of
 * the payments rule 1 sums. Both are covered by rule 1; the spec gives no rule tying item lines to
 * `total`, so line totals are not summed.
 */
import { sumInt64 } from './int64.js';
import type { Finding, MonetaryAmount, Order, OrderItem } from './types.js';

function label(item: OrderItem, index: number): string {
  return `items[${index}] (id ${JSON.stringify(item.id)})`;
}

/** Rules 1 and 2: payments sum to the total, in the total's currency. */
function checkMoney(order: Order, findings: Finding[]): void {
  const currency = order.total.currency;
  const payments = order.customerPayments;
  const fields: [string, MonetaryAmount | undefined][] = [
    ['serviceFee', order.serviceFee],
    ['deliveryFee', order.deliveryFee],
    ...payments.map((p, i): [string, MonetaryAmount] => [`customerPayments[${i}].payment`, p.payment]),
    ...order.items.flatMap((item, i): [string, MonetaryAmount][] => [
      [`items[${i}].price`, item.price],
      [`items[${i}].total`, item.total],
    ]),
  ];
  const foreign = fields.flatMap(([path, money]) =>
    money !== undefined && money.currency !== currency ? [`${path} (${money.currency})`] : [],
  );
  if (foreign.length > 0) {
    findings.push({ code: 'mixed-currency', detail: `total is ${currency}; differs: ${foreign.join(', ')}` });
  }
  // Exact for int64 amounts: a bigint sum where numbers would round.
  const sum = sumInt64(payments.map((p) => p.payment.amount));
  const paymentsInOtherCurrency = payments.some((p) => p.payment.currency !== currency);
  if (!paymentsInOtherCurrency && BigInt(sum) !== BigInt(order.total.amount)) {
    findings.push({
      code: 'payments-sum-mismatch',
      detail: `customerPayments sum to ${sum}, total.amount is ${order.total.amount} (${currency})`,
    });
  }
}

// Rule 3 from each side of a substitution: the link back, and the quantities that show the swap.
const SUBSTITUTION_SIDES = [
  {
    side: 'substitutedBy',
    back: 'substitutedFor',
    quantityProblem: (item: OrderItem) =>
      item.quantityFulfilled !== 0 &&
      `is substituted but has quantityFulfilled ${item.quantityFulfilled}, expected 0`,
  },
  {
    side: 'substitutedFor',
    back: 'substitutedBy',
    quantityProblem: (item: OrderItem) =>
      (item.quantityOrdered !== 0 || item.quantityFulfilled <= 0) &&
      `is a substitute with quantityOrdered ${item.quantityOrdered} and quantityFulfilled ${item.quantityFulfilled}, expected 0 and above 0`,
  },
] as const;

/** Rule 3: originals and substitutes reference each other; quantities show the swap. */
function checkSubstitutions(order: Order, byId: ReadonlyMap<string, OrderItem>, findings: Finding[]): void {
  order.items.forEach((item, i) => {
    for (const { side, back, quantityProblem } of SUBSTITUTION_SIDES) {
      const ids = item.substitutionDetails?.[side];
      if (ids === undefined || ids.length === 0) continue;
      const problem = quantityProblem(item);
      if (problem) findings.push({ code: 'substitution-quantity', detail: `${label(item, i)} ${problem}` });
      for (const id of ids) {
        const other = byId.get(id);
        if (other === undefined) {
          findings.push({
            code: 'dangling-item-reference',
            detail: `${label(item, i)} substitutionDetails.${side} names unknown item ${JSON.stringify(id)}`,
          });
        } else if (!other.substitutionDetails?.[back]?.includes(item.id)) {
          findings.push({
            code: 'substitution-link-missing',
            detail: `${label(item, i)} is ${side} ${JSON.stringify(id)}, which does not list it in ${back}`,
          });
        }
      }
    }
  });
}

/** Rule 4: an adjustment line's shape, and the links between it and the items it adjusts. */
function checkAdjustments(order: Order, byId: ReadonlyMap<string, OrderItem>, findings: Finding[]): void {
  order.items.forEach((item, i) => {
    const itemsAdjusted = item.priceAdjustmentDetails?.itemsAdjusted;
    if (item.type === 'adjustment') {
      const problems: string[] = [];
      if (item.quantityOrdered !== 0) problems.push(`quantityOrdered ${item.quantityOrdered}, expected 0`);
      if (item.quantityFulfilled !== 1)
        problems.push(`quantityFulfilled ${item.quantityFulfilled}, expected 1`);
      if (item.price.amount >= 0) problems.push(`price.amount ${item.price.amount}, expected negative`);
      if (itemsAdjusted === undefined || itemsAdjusted.length === 0) problems.push('no itemsAdjusted');
      if (problems.length > 0) {
        findings.push({ code: 'adjustment-shape', detail: `${label(item, i)}: ${problems.join('; ')}` });
      }
    } else if (itemsAdjusted !== undefined && itemsAdjusted.length > 0) {
      findings.push({
        code: 'adjustment-shape',
        detail: `${label(item, i)} lists itemsAdjusted but is of type ${JSON.stringify(item.type)}, not adjustment`,
      });
    }
    for (const id of itemsAdjusted ?? []) {
      const adjusted = byId.get(id);
      if (adjusted === undefined) {
        findings.push({
          code: 'dangling-item-reference',
          detail: `${label(item, i)} priceAdjustmentDetails.itemsAdjusted names unknown item ${JSON.stringify(id)}`,
        });
      } else if (adjusted.priceAdjustmentDetails?.relatedPriceAdjustment !== item.id) {
        findings.push({
          code: 'adjustment-link-missing',
          detail: `${label(item, i)} adjusts ${JSON.stringify(id)}, whose relatedPriceAdjustment does not name it`,
        });
      }
    }
    const related = item.priceAdjustmentDetails?.relatedPriceAdjustment;
    if (related !== undefined) {
      const adjustment = byId.get(related);
      if (adjustment === undefined) {
        findings.push({
          code: 'dangling-item-reference',
          detail: `${label(item, i)} priceAdjustmentDetails.relatedPriceAdjustment names unknown item ${JSON.stringify(related)}`,
        });
      } else if (!adjustment.priceAdjustmentDetails?.itemsAdjusted?.includes(item.id)) {
        findings.push({
          code: 'adjustment-link-missing',
          detail: `${label(item, i)} names relatedPriceAdjustment ${JSON.stringify(related)}, which does not list it in itemsAdjusted`,
        });
      }
    }
  });
}

/** Checks the spec's consistency rules on a normalised order; an empty array when all hold. */
export function checkConsistency(order: Order): Finding[] {
  const findings: Finding[] = [];
  checkMoney(order, findings);
  const byId = new Map<string, OrderItem>();
  order.items.forEach((item, i) => {
    if (byId.has(item.id)) {
      findings.push({ code: 'duplicate-item-id', detail: `${label(item, i)} repeats an earlier item's id` });
    } else {
      byId.set(item.id, item);
    }
  });
  // Most orders have no links at all: skip rules 3 and 4 for them.
  const linked = order.items.some(
    (item) => item.substitutionDetails || item.priceAdjustmentDetails || item.type === 'adjustment',
  );
  if (linked) {
    checkSubstitutions(order, byId, findings);
    checkAdjustments(order, byId, findings);
  }
  return findings;
}
