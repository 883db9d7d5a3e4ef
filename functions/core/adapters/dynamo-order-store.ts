// The orders table: one item per order (partition key `orderId`), holding its latest applied version
// and, while that version is accepted, its sales-ledger entry (`saleKey`, `saleAmount`, indexed by the
// sparse `salesByVendor` GSI). One conditional PutItem writes both, so the ledger is exact under
// duplicates, reordering and concurrent consumers without transactions or a hot aggregate item.

import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { OrderStore, PutResult, StoredAnnotations } from '../apply/ports.js';
import type { SaleEntry } from '../apply/sale.js';
import { isInt64 } from '../model/int64.js';
import type { Order } from '../model/types.js';
import { unmarshallExact } from './exact-item.js';
import { storedOrderItem } from './stored-order-item.js';
import { ORDERS_TABLE_SCHEMA } from './table-schemas.js';

export const SALES_INDEX_NAME = ORDERS_TABLE_SCHEMA.salesIndex.name;

export class DynamoOrderStore implements OrderStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async putIfNewer(
    order: Order,
    sale: SaleEntry | undefined,
    annotations?: StoredAnnotations,
  ): Promise<PutResult> {
    const { item } = storedOrderItem(order, sale, annotations);
    try {
      const output = await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(orderId) OR #version < :version',
          ExpressionAttributeNames: { '#version': 'version' },
          ExpressionAttributeValues: marshall({ ':version': order.version }),
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const previous = output.Attributes ? unmarshallExact(output.Attributes) : undefined;
      return {
        applied: true,
        previousVersion: isInt64(previous?.version) ? previous.version : undefined,
        previousSale: previous ? saleFromItem(previous) : undefined,
      };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const stored = error.Item ? unmarshallExact(error.Item) : {};
        return {
          applied: false,
          storedVersion: isInt64(stored.version) ? stored.version : order.version,
        };
      }
      throw error;
    }
  }
}

function saleFromItem(item: Record<string, unknown>): SaleEntry | undefined {
  if (typeof item.saleKey !== 'string' || !isInt64(item.saleAmount)) return undefined;
  const vendorId = typeof item.vendorId === 'string' ? item.vendorId : '';
  return {
    saleKey: item.saleKey,
    vendorId,
    currency: item.saleKey.slice(vendorId.length + 1),
    amount: item.saleAmount,
  };
}
