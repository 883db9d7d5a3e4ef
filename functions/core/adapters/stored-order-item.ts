// The orders table item of one order version, and its size by DynamoDB's rules, built in one place so the
// poller can tell at ingestion whether the consumer will be able to store it. DynamoDB refuses items over
// 400 KB; an order of several hundred items can be larger than that while still fitting in an SQS message
// (1 MiB). Such an item keeps every other attribute as is and stores its `items` list gzip-compressed
// (`itemsGzip`, binary, with `itemsEncoding` "gzip+json"): order lines compress about tenfold. An item still
// too large even then is quarantined by the poller with the reason, never published.
import { gzipSync } from 'node:zlib';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { type SaleEntry, saleKeyOf } from '../apply/sale.js';
import { DYNAMO_MAX_PARTITION_KEY_BYTES } from '../aws-limits.js';
import { isInt64 } from '../model/int64.js';
import type { Order } from '../model/types.js';
import { itemSize } from './dynamo-item-size.js';
import { ORDERS_TABLE_SCHEMA } from './table-schemas.js';

/**
 * What the history entry adds to the orders item at most (fetchedAt, storedAt, feedId, expiresAt,
 * arrivedAfterVersion: about 210 bytes), so an item that fits the orders table fits the history table too.
 */
export const HISTORY_ATTRIBUTES_MAX_BYTES = 256;
/** Compress the items list above this size, leaving room below the limit. */
const COMPRESS_ITEMS_ABOVE_BYTES = 350 * 1024;

export function storedOrderItem(
  order: Order,
  sale: SaleEntry | undefined,
  // For operators to query: the codes of the version's findings (empty: none), and the `source.correlationId`
  // of the run that produced it (absent in older messages).
  annotations: { findingCodes: string[]; correlationId?: string } | undefined,
): { item: Record<string, AttributeValue>; sizeBytes: number; itemsCompressed: boolean } {
  const findingCodes = annotations?.findingCodes ?? [];
  const attributes = {
    orderId: order.id,
    ...order,
    ...(sale ? { saleKey: sale.saleKey, saleAmount: sale.amount } : {}),
    // A string set, so "orders with finding X" is a filter on contains(findingCodes, :x).
    ...(findingCodes.length > 0 ? { findingCodes: new Set(findingCodes) } : {}),
    // Which run produced this version: from a row to the poller's (or reconcile's) logs.
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
 * Why an order version's item could not be written for a key value over DynamoDB's limit, or undefined.
 * DynamoDB refuses the whole write when a key of the table or of any index is too long (moto does not). The one
 * string key built from partner data is the sales index's partition key, `<vendorId>#<currency>` (every other
 * key, in both tables, is an int64 number). Checked on every version, sale or not: any version of the order
 * may be the accepted one, and its versions share one fate instead of some stored and some not.
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
