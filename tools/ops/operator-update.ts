// The ops CLI's change to a feed's cursor item (reset-cursor, replay, clear-auth-backoff): one conditional
// UpdateItem. Here, not in functions/: only the operator's commands use it, so it does not ship in the Lambda.
import type { UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { updateOf } from '../../functions/core/adapters/dynamo-cursor-store.js';

/** An operator's change to a feed's cursor item (the ops CLI's reset-cursor, replay, clear-auth-backoff). */
export interface OperatorChange {
  feedId: string;
  set: { pageId?: string };
  remove: Array<
    'pageId' | 'highWaterMark' | 'authFailures' | 'authRetryNotBefore' | 'authFailedTokenVersion'
  >;
  /** The revision read (undefined: the item has none); the update requires it unchanged. */
  expectRevision: number | undefined;
  itemExists: boolean;
  /** Whether the update requires no live lease (false: forced). */
  requireNoLease: boolean;
}

/**
 * The conditional UpdateItem of an operator's change. It bumps the fencing revision, so a run in progress
 * fails its next commit (LeaseLostError) instead of overwriting the change, and it requires the revision
 * read, so a commit landing between the operator's read and write is never overwritten either.
 */
export function operatorUpdate(
  tableName: string,
  change: OperatorChange,
  nowMs: number,
): UpdateItemCommandInput {
  const values: Record<string, unknown> = { ':one': 1, ':zero': 0 };
  const assignments = ['#revision = if_not_exists(#revision, :zero) + :one'];
  if (!change.itemExists) {
    // The poller's acquire keeps these when it creates the lease on an item that already exists.
    values[':nowIso'] = new Date(nowMs).toISOString();
    assignments.push('createdAt = if_not_exists(createdAt, :nowIso)');
  }
  const { expression } = updateOf(change.set, change.remove, values, assignments);
  const conditions: string[] = [];
  if (!change.itemExists) conditions.push('attribute_not_exists(feedId)');
  else if (change.expectRevision === undefined) conditions.push('attribute_not_exists(#revision)');
  else {
    conditions.push('#revision = :expected');
    values[':expected'] = change.expectRevision;
  }
  if (change.requireNoLease) {
    conditions.push('(attribute_not_exists(leaseOwner) OR leaseExpiresAt < :now)');
    values[':now'] = nowMs;
  }
  return {
    TableName: tableName,
    Key: marshall({ feedId: change.feedId }),
    UpdateExpression: expression,
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: { '#revision': 'revision' },
    ExpressionAttributeValues: marshall(values),
    ReturnValues: 'ALL_NEW',
  };
}
