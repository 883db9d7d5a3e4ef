// The orders table item of a version and its size, in one place, so the poller can tell at ingestion whether
// the consumer will be able to store it (functions/README.md, "Sizes").
import { gzipSync } from 'node:zlib';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { type SaleEntry, saleKeyOf } from '../apply/sale.js';
import { DYNAMO_MAX_PARTITION_KEY_BYTES } from '../aws-limits.js';
import { isInt64 } from '../model/int64.js';
import type { Order } from '../model/types.js';
import { itemSize } from './dynamo-item-size.js';
import { ORDERS_TABLE_SCHEMA } from './table-schemas.js';

/** What the history entry adds at most (about 210 bytes): an item that fits the orders table fits history. */
export const HISTORY_ATTRIBUTES_MAX_BYTES = 256;
/** Compress the items list above this size, leaving room below the limit. */
const COMPRESS_ITEMS_ABOVE_BYTES = 350 * 1024;

export function storedOrderItem(
  order: Order,
  sale: SaleEntry | undefined,
  annotations: { findingCodes: string[]; correlationId?: string } | undefined,
): { item: Record<string, AttributeValue>; sizeBytes: number; itemsCompressed: boolean } {
  const findingCodes = annotations?.findingCodes ?? [];
  const attributes = {
    orderId: order.id,
    ...order,
    ...(sale ? { saleKey: sale.saleKey, saleAmount: sale.amount } : {}),
    // A string set, so "orders with finding X" is a filter on contains(findingCodes, :x).
    ...(findingCodes.length > 0 ? { findingCodes: new Set(findingCodes) } : {}),
    ...(annotations?.correlationId ? { correlationId: annotations.correlationId } : {}),
  };
  const plain = marshall(attributes, { removeUndefinedValues: true });
  const plainSize = itemSize(plain);
  if (plainSize <= COMPRESS_ITEMS_ABOVE_BYTES)
    return { item: plain, sizeBytes: plainSize, itemsCompressed: false };
  const { items, ...rest } = attributes;
  const compressed = marshall(
    { ...rest, itemsGzip: gzipSync(JSON.stringify(items)), itemsEncoding: 'gzip+json' },
    { removeUndefinedValues: true },
  );
  return { item: compressed, sizeBytes: itemSize(compressed), itemsCompressed: true };
}

/**
 * Why a version's item could not be written for a key over DynamoDB's limit (moto enforces none), or undefined.
 * Checked on every version, sale or not: any version may be the accepted one, and all share one fate.
 */
export function keyLimitProblem(order: Pick<Order, 'vendorId' | 'total'>): string | undefined {
  const { name, partitionKey } = ORDERS_TABLE_SCHEMA.salesIndex;
  const bytes = Buffer.byteLength(saleKeyOf(order.vendorId, order.total.currency), 'utf8');
  if (bytes <= DYNAMO_MAX_PARTITION_KEY_BYTES) return undefined;
  return `vendorId too long: the ${name} index key ${partitionKey.name} would be ${bytes} bytes, over DynamoDB's partition key limit of ${DYNAMO_MAX_PARTITION_KEY_BYTES} bytes`;
}

/** The sales-ledger entry an item (unmarshalled) holds, if its version was a sale. */
export function saleOfStoredItem(item: Record<string, unknown>): SaleEntry | undefined {
  if (typeof item.saleKey !== 'string' || !isInt64(item.saleAmount)) return undefined;
  const vendorId = typeof item.vendorId === 'string' ? item.vendorId : '';
  return {
    saleKey: item.saleKey,
    vendorId,
    currency: item.saleKey.slice(vendorId.length + 1),
    amount: item.saleAmount,
  };
}
