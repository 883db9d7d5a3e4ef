// Use case: apply one order version to the orders table and its sales ledger.
//   1. validate the message against the contract
//   2. derive the version's sale entry (a sale iff status is accepted)
//   3. one conditional put: order + sale entry, only if newer than what is stored
//   4. report applied (with the ledger change) or stale (an equal or lower version: a counted no-op)

import type { OrderVersionMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import { parseOrderVersionMessage } from './order-version-message.js';
import type { OrderStore } from './ports.js';
import { type SalesChange, saleOf, salesChange } from './sale.js';

export type ApplyResult =
  | { outcome: 'applied'; orderId: Int64; version: Int64; salesChange: SalesChange }
  | { outcome: 'stale'; orderId: Int64; version: Int64; storedVersion: Int64 };

export async function applyOrderVersion(store: OrderStore, body: string): Promise<ApplyResult> {
  return applyValidatedOrderVersion(store, parseOrderVersionMessage(body));
}

/** Steps 2–4, for a message already validated (see plan-batch.ts). */
export async function applyValidatedOrderVersion(
  store: OrderStore,
  message: OrderVersionMessage,
): Promise<ApplyResult> {
  const { order } = message;
  const sale = saleOf(order);
  const findingCodes = [...new Set(message.source.findings.map((finding) => finding.code))];
  const { correlationId } = message.source;
  const result = await store.putIfNewer(order, sale, {
    findingCodes,
    ...(correlationId === undefined ? {} : { correlationId }),
  });
  if (!result.applied) {
    return {
      outcome: 'stale',
      orderId: order.id,
      version: order.version,
      storedVersion: result.storedVersion,
    };
  }
  return {
    outcome: 'applied',
    orderId: order.id,
    version: order.version,
    salesChange: salesChange(result.previousSale, sale),
  };
}
