// The consistency rules of spec section 2, each violation a finding (functions/README.md, "Validation policy":
// the codes, and why rule 2 has no check). No rule ties item lines to `total`, so line totals are not summed.
import { sumInt64 } from './int64.js';
import type { Finding, MonetaryAmount, Order, OrderItem } from './types.js';

function label(item: OrderItem, index: number): string {
  return `items[${index}] (id ${JSON.stringify(item.id)})`;
}

/** Rule 1: payments sum to the total (unless a payment is in another currency: that sum means nothing). */
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
  if (foreign.length > 0)
    findings.push({ code: 'mixed-currency', detail: `total is ${currency}; differs: ${foreign.join(', ')}` });
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

/** Rule 4: an adjustment line's shape, and the links both ways between it and the items it adjusts. */
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
      if (problems.length > 0)
        findings.push({ code: 'adjustment-shape', detail: `${label(item, i)}: ${problems.join('; ')}` });
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
