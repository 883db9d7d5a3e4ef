// Leases left behind by local processes that no longer exist.
//
// The poller's lease outlives its invocation by LEASE_GRACE_SECONDS (default 60), so on AWS a crashed run
// blocks the feed for the function timeout plus a minute: then the lease lapses and the next run
// takes over, fenced by the revision so the crashed run could never commit. A local process killed
// with SIGKILL mid-run leaves the same lease, and its restart would sit out those minutes. Local
// invocation ids name the host and pid that ran them, so a restart can see that the holder is gone
// and release the lease at once; what it does is exactly what the lease's expiry would have done
// (remove owner and expiry, conditional on both being unchanged), just earlier.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { invocationOf } from '../../functions/core/fleet/dispatch.js';
import { processMayBeAlive } from './deploy-lock.js';

const PREFIX = 'local';

/** An awsRequestId (the poller's lease owner) that says which local process ran the invocation. */
export function localInvocationId(): string {
  return `${PREFIX}:${hostname()}:${process.pid}:${randomUUID()}`;
}

export function parseLocalInvocationId(id: string): { host: string; pid: number } | undefined {
  const match = /^local:(.+):(\d+):[0-9a-f-]{36}$/.exec(id);
  if (!match?.[1] || !match[2]) return undefined;
  return { host: match[1], pid: Number(match[2]) };
}

/**
 * Releases the feed's lease if its owner was a local process that is gone: another process, or this one
 * (its caller runs one invocation per feed at a time, none now). Returns the dead holder's pid.
 */
export async function releaseDeadLease(
  dynamo: DynamoDBClient,
  cursorTable: string,
  feedId: string,
): Promise<number | undefined> {
  const { Item } = await dynamo.send(
    new GetItemCommand({ TableName: cursorTable, Key: marshall({ feedId }), ConsistentRead: true }),
  );
  if (!Item) return undefined;
  const item = unmarshall(Item);
  if (typeof item.leaseOwner !== 'string') return undefined;
  // The owner is `<run id>#<feed id>`; the run id names the process.
  const holder = parseLocalInvocationId(invocationOf(item.leaseOwner));
  if (!holder) return undefined;
  const ours = holder.host === hostname() && holder.pid === process.pid;
  if (!ours && processMayBeAlive(holder.host, holder.pid)) return undefined;
  try {
    await dynamo.send(
      new UpdateItemCommand({
        TableName: cursorTable,
        Key: marshall({ feedId }),
        UpdateExpression: 'REMOVE leaseOwner, leaseExpiresAt',
        ConditionExpression: 'leaseOwner = :owner AND #revision = :revision',
        ExpressionAttributeNames: { '#revision': 'revision' },
        ExpressionAttributeValues: marshall({ ':owner': item.leaseOwner, ':revision': item.revision }),
      }),
    );
    return holder.pid;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}
