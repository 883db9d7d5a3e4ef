// Stateful: the order history, one item per (orderId, version): every version the partner served, kept once
// (the consumer's conditional put), superseded and out-of-order versions included. Items expire through
// DynamoDB TTL on `expiresAt` when `historyRetentionDays` > 0. Point-in-time recovery (as every stateful
// table) is what DynamoDB's export to S3 reads (infra/README.md).
import type { RemovalPolicy } from 'aws-cdk-lib';
import { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { HISTORY_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import { statefulTableProps, tableKey } from './table-defaults.js';

const { partitionKey, sortKey, timeToLiveAttribute } = HISTORY_TABLE_SCHEMA;

export interface HistoryTableProps {
  readonly removalPolicy: RemovalPolicy;
  /** 0: kept forever (no TTL). */
  readonly retentionDays: number;
}

export class HistoryTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string, props: HistoryTableProps) {
    super(scope, id);
    this.table = new Table(this, 'Table', {
      partitionKey: tableKey(partitionKey),
      sortKey: tableKey(sortKey),
      ...(props.retentionDays > 0 ? { timeToLiveAttribute } : {}),
      ...statefulTableProps(props.removalPolicy),
    });
  }

  /** The consumer's one conditional PutItem per version (attribute_not_exists): no reads, no deletes. */
  grantRecordVersions(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['dynamodb:PutItem'],
      resourceArns: [this.table.tableArn],
    });
  }
}
