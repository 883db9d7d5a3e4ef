// Cursor and lease for one feed, in one DynamoDB item (partition key `feedId`). Every write is
// conditional on the caller still owning the lease AND on the revision it last read (a fencing token),
// so an invocation that lost its lease, or overlaps another, can never move the cursor backwards.
// The one place that knows the item's attribute names: the ops CLI (tools/ops/cursor.ts) reads the item
// with cursorAttributesOf and changes it with operatorUpdate.
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { LeaseLostError } from '../ingest/errors.js';
import type { CursorCommit, CursorState, CursorStore, LastRun, Lease } from '../ingest/ports.js';

export class DynamoCursorStore implements CursorStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async acquire(feedId: string, owner: string, nowMs: number, leaseMs: number): Promise<Lease | undefined> {
    try {
      const output = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: marshall({ feedId }),
          UpdateExpression:
            'SET leaseOwner = :owner, leaseExpiresAt = :expires, #revision = if_not_exists(#revision, :zero) + :one, createdAt = if_not_exists(createdAt, :nowIso)',
          ConditionExpression: 'attribute_not_exists(leaseOwner) OR leaseExpiresAt < :now',
          ExpressionAttributeNames: { '#revision': 'revision' },
          ExpressionAttributeValues: marshall({
            ':owner': owner,
            ':expires': nowMs + leaseMs,
            ':zero': 0,
            ':one': 1,
            ':now': nowMs,
            ':nowIso': new Date(nowMs).toISOString(),
          }),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { feedId, owner, state: toState(output.Attributes) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The owner is unique per invocation: finding it on the item means our own write landed and only its
      // answer was lost (the SDK's retry then failed the condition). The lease is ours.
      if (error.Item && unmarshall(error.Item).leaseOwner === owner) {
        return { feedId, owner, state: toState(error.Item) };
      }
      return undefined;
    }
  }

  async commit(lease: Lease, commit: CursorCommit, nowMs: number, leaseMs: number): Promise<Lease> {
    const set = ['#revision = #revision + :one', 'leaseExpiresAt = :expires'];
    const remove = commit.pageId === undefined ? ['pageId'] : [];
    const values: Record<string, unknown> = { ':one': 1, ':expires': nowMs + leaseMs };
    const { pageId, highWaterMark, lastCaughtUpAt, paceDelayMs } = commit;
    for (const [name, value] of Object.entries({ pageId, highWaterMark, lastCaughtUpAt, paceDelayMs })) {
      if (value === undefined) continue;
      set.push(`${name} = :${name}`);
      values[`:${name}`] = value;
    }
    if (commit.clearAuthFailures) remove.push('authFailures', 'authRetryNotBefore');
    return this.fencedUpdate(
      lease,
      set,
      remove,
      values,
      (item) => item.pageId === commit.pageId && item.leaseExpiresAt === nowMs + leaseMs,
    );
  }

  async recordAuthFailure(lease: Lease, retryNotBefore: number): Promise<Lease> {
    return this.fencedUpdate(
      lease,
      [
        '#revision = #revision + :one',
        'authFailures = if_not_exists(authFailures, :zero) + :one',
        'authRetryNotBefore = :notBefore',
      ],
      [],
      { ':one': 1, ':zero': 0, ':notBefore': retryNotBefore },
      (item) => item.authRetryNotBefore === retryNotBefore,
    );
  }

  async release(lease: Lease, lastRun?: LastRun): Promise<void> {
    // The last run's outcome rides on the release: no extra write, and only the lease holder records it.
    const record = lastRun ? ' SET lastRunOutcome = :outcome, lastRunAt = :at' : '';
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: marshall({ feedId: lease.feedId }),
          UpdateExpression: `REMOVE leaseOwner, leaseExpiresAt${record}`,
          ConditionExpression: 'leaseOwner = :owner AND #revision = :revision',
          ExpressionAttributeNames: { '#revision': 'revision' },
          ExpressionAttributeValues: marshall({
            ':owner': lease.owner,
            ':revision': lease.state.revision,
            ...(lastRun ? { ':outcome': lastRun.outcome, ':at': new Date(lastRun.at).toISOString() } : {}),
          }),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async fencedUpdate(
    lease: Lease,
    set: string[],
    remove: string[],
    values: Record<string, unknown>,
    /** Whether an item shows exactly what this write sets (to recognise it after a lost answer). */
    showsThisWrite: (item: Record<string, unknown>) => boolean,
  ): Promise<Lease> {
    const input: UpdateItemCommandInput = {
      TableName: this.tableName,
      Key: marshall({ feedId: lease.feedId }),
      UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`,
      ConditionExpression: 'leaseOwner = :owner AND #revision = :revision',
      ExpressionAttributeNames: { '#revision': 'revision' },
      ExpressionAttributeValues: marshall({
        ...values,
        ':owner': lease.owner,
        ':revision': lease.state.revision,
      }),
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
    try {
      const output = await this.client.send(new UpdateItemCommand(input));
      return { ...lease, state: toState(output.Attributes) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (error.Item) {
        const item = unmarshall(error.Item);
        if (isOwnWrite(item, lease) && showsThisWrite(item)) return { ...lease, state: toState(error.Item) };
      }
      throw new LeaseLostError(lease.feedId, { cause: error });
    }
  }
}

/**
 * An ambiguous write: the update landed, its answer was lost, and the SDK's retry failed the condition
 * because the revision had already moved. Only the lease holder can write and every write bumps the
 * revision by one, so our owner at exactly the next revision, with the values this write set, is our own
 * write: go on with it. Anything else (another holder, a stale revision) is a lost lease.
 */
function isOwnWrite(item: Record<string, unknown>, lease: Lease): boolean {
  return item.leaseOwner === lease.owner && item.revision === lease.state.revision + 1;
}

/** The cursor item's attributes as stored (absent or mistyped: undefined); the ops CLI reads them too. */
export interface CursorItemAttributes {
  revision?: number;
  pageId?: string;
  highWaterMark?: string;
  lastCaughtUpAt?: string;
  createdAt?: string;
  leaseOwner?: string;
  leaseExpiresAt?: number;
  authFailures?: number;
  authRetryNotBefore?: number;
  paceDelayMs?: number;
  /** How the last run that released the lease ended, and when (UTC ISO). */
  lastRunOutcome?: string;
  lastRunAt?: string;
}

const TEXT_ATTRIBUTES = [
  'pageId',
  'highWaterMark',
  'lastCaughtUpAt',
  'createdAt',
  'leaseOwner',
  'lastRunOutcome',
  'lastRunAt',
] as const;
const NUMBER_ATTRIBUTES = [
  'revision',
  'leaseExpiresAt',
  'authFailures',
  'authRetryNotBefore',
  'paceDelayMs',
] as const;

/** Reads an unmarshalled cursor item (undefined: no item). */
export function cursorAttributesOf(item: Record<string, unknown> | undefined): CursorItemAttributes {
  const attributes: Record<string, unknown> = {};
  for (const key of TEXT_ATTRIBUTES) if (typeof item?.[key] === 'string') attributes[key] = item[key];
  for (const key of NUMBER_ATTRIBUTES) if (typeof item?.[key] === 'number') attributes[key] = item[key];
  return attributes;
}

/** The cursor state an item holds (defaults for what a new item lacks). */
function toState(attributes: UpdateItemCommandInput['ExpressionAttributeValues']): CursorState {
  const item = cursorAttributesOf(attributes && unmarshall(attributes));
  return {
    pageId: item.pageId,
    revision: item.revision ?? 0,
    highWaterMark: item.highWaterMark,
    lastCaughtUpAt: item.lastCaughtUpAt,
    createdAt: item.createdAt ?? new Date(0).toISOString(),
    authFailures: item.authFailures ?? 0,
    authRetryNotBefore: item.authRetryNotBefore,
    ...(item.paceDelayMs === undefined ? {} : { paceDelayMs: item.paceDelayMs }),
  };
}

/** An operator's change to a feed's cursor item (the ops CLI's reset-cursor, replay, clear-auth-backoff). */
export interface OperatorChange {
  feedId: string;
  set: { pageId?: string };
  remove: Array<'pageId' | 'highWaterMark' | 'authFailures' | 'authRetryNotBefore'>;
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
  const names: Record<string, string> = { '#revision': 'revision' };
  const values: Record<string, unknown> = { ':one': 1, ':zero': 0 };
  const set = ['#revision = if_not_exists(#revision, :zero) + :one'];
  for (const [attribute, value] of Object.entries(change.set)) {
    names[`#${attribute}`] = attribute;
    values[`:${attribute}`] = value;
    set.push(`#${attribute} = :${attribute}`);
  }
  if (!change.itemExists) {
    // The poller's acquire keeps these when it creates the lease on an item that already exists.
    values[':nowIso'] = new Date(nowMs).toISOString();
    set.push('createdAt = if_not_exists(createdAt, :nowIso)');
  }
  const remove = change.remove.map((attribute) => {
    names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  });
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
    UpdateExpression: `SET ${set.join(', ')}${remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''}`,
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: marshall(values),
    ReturnValues: 'ALL_NEW',
  };
}
