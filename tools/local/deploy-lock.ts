// A lock in the emulator itself that lets one local-mode process deploy the stack while the others
// wait. Two `cdk bootstrap`/`cdk deploy` runs at once collide in moto (BucketAlreadyExists, then a
// failing stack update), so only the lock holder deploys; the rest wait and reuse the stack.
//
// The lock is an item in a small DynamoDB table outside the stack (created on first use), taken with a
// conditional write: free, expired, or held by a process of this machine that no longer exists (a
// process killed mid-deploy must not block its own restart). moto_serialized.py makes that write atomic.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  ResourceInUseException,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';

export const LOCK_TABLE_NAME = 'order-feed-ingester-local-locks';
/** A deploy takes 20–40 s here; a holder silent for this long is presumed gone. */
const LOCK_TTL_MS = 10 * 60_000;

export interface LockHolder {
  owner: string;
  host: string;
  pid: number;
  expiresAt: number;
}

export interface HeldLock {
  release(): Promise<void>;
}

/** True when the process may still be running (a process of another machine always counts as alive). */
export function processMayBeAlive(host: string, pid: number): boolean {
  if (host !== hostname()) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Waits until this process holds `name`; `onWait` is called once per holder it waits for.
 * Resolves with a handle whose `release()` frees the lock if still held.
 */
export async function acquireLock(
  dynamo: DynamoDBClient,
  name: string,
  options: { onWait?: (holder: LockHolder) => void; pollMs?: number; timeoutMs?: number } = {},
): Promise<HeldLock> {
  await ensureLockTable(dynamo);
  const me: LockHolder = { owner: randomUUID(), host: hostname(), pid: process.pid, expiresAt: 0 };
  const deadline = Date.now() + (options.timeoutMs ?? LOCK_TTL_MS);
  let announced: string | undefined;
  for (;;) {
    const current = await readHolder(dynamo, name);
    const stale =
      current === undefined ||
      current.expiresAt < Date.now() ||
      !processMayBeAlive(current.host, current.pid);
    if (stale && (await tryTake(dynamo, name, me, current?.owner))) {
      return {
        release: () => releaseLock(dynamo, name, me.owner),
      };
    }
    if (current && !stale && announced !== current.owner) {
      announced = current.owner;
      options.onWait?.(current);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for the local lock "${name}"`);
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1000));
  }
}

async function ensureLockTable(dynamo: DynamoDBClient): Promise<void> {
  try {
    await dynamo.send(
      new CreateTableCommand({
        TableName: LOCK_TABLE_NAME,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'lockId', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'lockId', KeyType: 'HASH' }],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
}

async function readHolder(dynamo: DynamoDBClient, name: string): Promise<LockHolder | undefined> {
  const { Item } = await dynamo.send(
    new GetItemCommand({ TableName: LOCK_TABLE_NAME, Key: marshall({ lockId: name }), ConsistentRead: true }),
  );
  if (!Item) return undefined;
  const item = unmarshall(Item);
  return {
    owner: String(item.owner),
    host: String(item.host),
    pid: Number(item.pid),
    expiresAt: Number(item.expiresAt),
  };
}

/** Takes the lock if it is still free, or still held by the stale owner we saw (compare-and-swap). */
async function tryTake(
  dynamo: DynamoDBClient,
  name: string,
  me: LockHolder,
  staleOwner: string | undefined,
): Promise<boolean> {
  try {
    await dynamo.send(
      new PutItemCommand({
        TableName: LOCK_TABLE_NAME,
        Item: marshall({ lockId: name, ...me, expiresAt: Date.now() + LOCK_TTL_MS }),
        ConditionExpression:
          staleOwner === undefined
            ? 'attribute_not_exists(lockId)'
            : 'attribute_not_exists(lockId) OR #owner = :stale',
        ...(staleOwner === undefined
          ? {}
          : {
              ExpressionAttributeNames: { '#owner': 'owner' },
              ExpressionAttributeValues: marshall({ ':stale': staleOwner }),
            }),
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

async function releaseLock(dynamo: DynamoDBClient, name: string, owner: string): Promise<void> {
  try {
    await dynamo.send(
      new DeleteItemCommand({
        TableName: LOCK_TABLE_NAME,
        Key: marshall({ lockId: name }),
        ConditionExpression: '#owner = :me',
        ExpressionAttributeNames: { '#owner': 'owner' },
        ExpressionAttributeValues: marshall({ ':me': owner }),
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}
