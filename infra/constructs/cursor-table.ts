// Stateful: the cursor table, one item per feed (`feedId`) holding the partner cursor, the poller's lease and
// its fencing revision, and the feed's registry row (configuration and state); beside them the token budgets
// (`budget#…`) and the dispatch lock (`fleet#dispatch`). Losing it would replay every feed, hence PITR and
// retention. The registry needs no index and no TTL: its properties are as they always were, so a deployed
// table is not replaced or changed by the fleet's arrival.
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
   * The poller: read its batch's rows at once (BatchGetItem) and the dispatch lock's waiting count (GetItem);
   * take the lease, record an idle poll, commit under the fencing revision, stop a feed, pace a token's budget:
   * each a conditional UpdateItem (functions/core/adapters/dynamo-cursor-store.ts, dynamo-feed-registry.ts,
   * dynamo-request-budget.ts). No PutItem, no Scan.
   */
  grantPoll(grantee: IGrantable): Grant {
    return this.grant(grantee, ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem']);
  }

  /**
   * The dispatcher: scan every row (Scan), seed the initial set's missing rows and take and release the
   * dispatch lock (conditional UpdateItem), read an item (GetItem; dynamo-feed-registry.ts).
   */
  grantDispatch(grantee: IGrantable): Grant {
    return this.grant(grantee, ['dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem']);
  }

  private grant(grantee: IGrantable, actions: string[]): Grant {
    return Grant.addToPrincipal({ grantee, actions, resourceArns: [this.table.tableArn] });
  }
}
