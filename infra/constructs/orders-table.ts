// Stateful: the orders table, one item per order (latest applied version), which also carries the sales
// ledger: an accepted order's item has `saleKey` (`<vendorId>#<currency>`) and `saleAmount`, and the
// sparse `salesByVendor` index holds exactly those items, so summing a vendor's sales is one Query.
import type { RemovalPolicy } from 'aws-cdk-lib';
import { ProjectionType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { ORDERS_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import { statefulTableProps, tableKey } from './table-defaults.js';

// The key names come from the schema the consumer's adapter and the integration tests also use.
const { partitionKey, salesIndex } = ORDERS_TABLE_SCHEMA;
export const SALES_BY_VENDOR_INDEX = salesIndex.name;

export interface OrdersTableProps {
  readonly removalPolicy: RemovalPolicy;
}

export class OrdersTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string, props: OrdersTableProps) {
    super(scope, id);
    this.table = new Table(this, 'Table', {
      partitionKey: tableKey(partitionKey),
      ...statefulTableProps(props.removalPolicy),
    });
    this.table.addGlobalSecondaryIndex({
      indexName: SALES_BY_VENDOR_INDEX,
      partitionKey: tableKey(salesIndex.partitionKey),
      sortKey: tableKey(salesIndex.sortKey),
      projectionType: ProjectionType.INCLUDE,
      nonKeyAttributes: [...salesIndex.nonKeyAttributes],
    });
  }

  /**
   * What the consumer needs to apply order versions under a version guard: one conditional PutItem per
   * version, returning the old item (functions/core/contract/consumer-kit.ts). No reads, no Query/Scan, no index
   * access (DynamoDB maintains the index), no deletes: orders are never removed.
   */
  grantApplyVersions(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['dynamodb:PutItem'],
      resourceArns: [this.table.tableArn],
    });
  }
}
