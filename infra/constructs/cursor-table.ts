// Stateful: the cursor table, one item per feed (`feedId`) holding the partner cursor, the poller's
// lease and its fencing revision. Losing it would replay the whole feed, hence PITR and retention.
import type { RemovalPolicy } from 'aws-cdk-lib';
import { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { CURSOR_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import { statefulTableProps, tableKey } from './table-defaults.js';

export interface CursorTableProps {
  readonly removalPolicy: RemovalPolicy;
}

export class CursorTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string, props: CursorTableProps) {
    super(scope, id);
    this.table = new Table(this, 'Table', {
      partitionKey: tableKey(CURSOR_TABLE_SCHEMA.partitionKey),
      ...statefulTableProps(props.removalPolicy),
    });
  }

  /**
   * Take and renew the lease, commit under the fencing revision: every call of the poller's cursor store
   * (functions/core/adapters/dynamo-cursor-store.ts) is a conditional UpdateItem returning the item, which
   * also reads the cursor, so it needs no GetItem or PutItem.
   */
  grantLeaseAndCommit(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['dynamodb:UpdateItem'],
      resourceArns: [this.table.tableArn],
    });
  }
}
