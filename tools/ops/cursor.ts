// reset-cursor, replay and clear-auth-backoff: an operator's change to a feed's cursor item
// (functions/core/adapters/dynamo-cursor-store.ts). Flow: read the item (consistent) → plan (pure: what
// changes, or why not) → with --yes, one conditional UpdateItem that bumps the fencing `revision`.
//
// Why the revision: the poller commits only if the revision it read is unchanged, so a run in progress
// fails its next commit (LeaseLostError) instead of overwriting the operator's cursor. The update is
// itself conditional on the revision this command read, so a commit landing between read and write is
// never overwritten either. While a live lease is held the change is refused unless --force: without it
// the operator could not tell whether the running invocation had committed a page after the plan was
// shown; with it, that run is fenced out and its lease simply expires.
import { ConditionalCheckFailedException, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { AwsAt } from '../aws.js';
import { OpsError } from './errors.js';
import { shortenCursor } from './format.js';

/** The cursor item's attributes as stored (only what the ops commands read). */
export interface CursorItem {
  feedId: string;
  /** False when the feed has no item yet (its poller never ran). */
  exists: boolean;
  /** Undefined when the item has no revision attribute. */
  revision: number | undefined;
  pageId: string | undefined;
  highWaterMark: string | undefined;
  lastCaughtUpAt: string | undefined;
  createdAt: string | undefined;
  leaseOwner: string | undefined;
  leaseExpiresAt: number | undefined;
  authFailures: number;
  authRetryNotBefore: number | undefined;
  /** The token parameter version the partner refused: the backoff holds only while SSM keeps it. */
  authFailedTokenVersion: number | undefined;
  paceDelayMs: number | undefined;
  /** How the last run that released the lease ended, and when (UTC ISO). */
  lastRunOutcome: string | undefined;
  lastRunAt: string | undefined;
}

export function cursorItemOf(feedId: string, raw: Record<string, unknown> | undefined): CursorItem {
  const item = raw ?? {};
  const text = (key: string) => (typeof item[key] === 'string' ? (item[key] as string) : undefined);
  const count = (key: string) => (typeof item[key] === 'number' ? (item[key] as number) : undefined);
  return {
    feedId,
    exists: raw !== undefined,
    revision: count('revision'),
    pageId: text('pageId'),
    highWaterMark: text('highWaterMark'),
    lastCaughtUpAt: text('lastCaughtUpAt'),
    createdAt: text('createdAt'),
    leaseOwner: text('leaseOwner'),
    leaseExpiresAt: count('leaseExpiresAt'),
    authFailures: count('authFailures') ?? 0,
    authRetryNotBefore: count('authRetryNotBefore'),
    authFailedTokenVersion: count('authFailedTokenVersion'),
    paceDelayMs: count('paceDelayMs'),
    lastRunOutcome: text('lastRunOutcome'),
    lastRunAt: text('lastRunAt'),
  };
}

export async function readCursorItem(aws: AwsAt, table: string, feedId: string): Promise<CursorItem> {
  const output = await aws.dynamo.send(
    new GetItemCommand({ TableName: table, Key: marshall({ feedId }), ConsistentRead: true }),
  );
  return cursorItemOf(feedId, output.Item ? unmarshall(output.Item) : undefined);
}

/** A live lease: a poller run of this feed is (or may still be) in progress. */
export function liveLease(item: CursorItem, nowMs: number): boolean {
  return item.leaseOwner !== undefined && item.leaseExpiresAt !== undefined && item.leaseExpiresAt >= nowMs;
}

export type CursorAction =
  | { kind: 'reset-cursor' }
  | { kind: 'replay'; fromPage: string }
  | { kind: 'clear-auth-backoff' };

export type CursorPlan =
  /** Nothing to change: `why` says so. */
  | { kind: 'no-op'; feedId: string; why: string }
  | { kind: 'refused'; feedId: string; why: string }
  | {
      kind: 'update';
      feedId: string;
      /** One line per changed attribute, for the operator. */
      changes: string[];
      /** What the conditional update sets and removes. */
      set: Record<string, string | number>;
      remove: string[];
      /** The revision read (undefined: no revision attribute); the update requires it unchanged. */
      expectRevision: number | undefined;
      itemExists: boolean;
      /** Whether the update requires no live lease (false with --force). */
      requireNoLease: boolean;
      revisionAfter: number;
    };

export function planCursorChange(
  item: CursorItem,
  action: CursorAction,
  options: { nowMs: number; force: boolean },
): CursorPlan {
  const { feedId } = item;
  const set: Record<string, string | number> = {};
  const remove: string[] = [];
  const changes: string[] = [];
  switch (action.kind) {
    case 'reset-cursor':
      if (item.pageId !== undefined) {
        remove.push('pageId');
        changes.push(`cursor ${shortenCursor(item.pageId)} → (start): the next run replays the whole stream`);
      }
      if (item.highWaterMark !== undefined) {
        remove.push('highWaterMark');
        changes.push(`highWaterMark ${item.highWaterMark} → (none)`);
      }
      if (changes.length === 0) {
        return { kind: 'no-op', feedId, why: `feed ${feedId} already starts from the start of the stream` };
      }
      break;
    case 'replay':
      if (item.pageId === action.fromPage) {
        return { kind: 'no-op', feedId, why: `feed ${feedId}'s cursor is already ${action.fromPage}` };
      }
      set.pageId = action.fromPage;
      changes.push(
        `cursor ${shortenCursor(item.pageId)} → ${action.fromPage}: the next run replays from that page`,
      );
      break;
    case 'clear-auth-backoff':
      if (item.authFailures === 0 && item.authRetryNotBefore === undefined) {
        return { kind: 'no-op', feedId, why: `feed ${feedId} has no auth backoff` };
      }
      remove.push('authFailures', 'authRetryNotBefore');
      if (item.authFailedTokenVersion !== undefined) remove.push('authFailedTokenVersion');
      changes.push(
        `auth backoff cleared (${item.authFailures} failed run(s)${
          item.authRetryNotBefore === undefined
            ? ''
            : `, no call before ${new Date(item.authRetryNotBefore).toISOString()}`
        }): the next run calls the partner at once`,
      );
      break;
  }
  if (!item.exists && action.kind !== 'replay') {
    return { kind: 'no-op', feedId, why: `feed ${feedId} has no cursor item yet` };
  }
  if (!options.force && liveLease(item, options.nowMs)) {
    return {
      kind: 'refused',
      feedId,
      why:
        `feed ${feedId} is leased by ${item.leaseOwner} until ${new Date(item.leaseExpiresAt ?? 0).toISOString()}: ` +
        'a poller run is in progress. Run again after it ends, or pass --force (the run then fails its next ' +
        'commit, and its lease expires).',
    };
  }
  const revisionAfter = (item.revision ?? 0) + 1;
  changes.push(
    `revision ${item.revision ?? '(none)'} → ${revisionAfter}: a running invocation cannot commit over it`,
  );
  return {
    kind: 'update',
    feedId,
    changes,
    set,
    remove,
    expectRevision: item.revision,
    itemExists: item.exists,
    requireNoLease: !options.force,
    revisionAfter,
  };
}

/** Carries out an `update` plan with one conditional UpdateItem; returns the item as written. */
export async function applyCursorPlan(
  aws: AwsAt,
  table: string,
  plan: Extract<CursorPlan, { kind: 'update' }>,
  nowMs: number,
): Promise<CursorItem> {
  const names: Record<string, string> = { '#revision': 'revision' };
  const values: Record<string, unknown> = { ':one': 1, ':zero': 0 };
  const setParts = ['#revision = if_not_exists(#revision, :zero) + :one'];
  for (const [attribute, value] of Object.entries(plan.set)) {
    names[`#${attribute}`] = attribute;
    values[`:${attribute}`] = value;
    setParts.push(`#${attribute} = :${attribute}`);
  }
  if (!plan.itemExists) {
    // The poller's acquire keeps these when it creates the lease on an item that already exists.
    values[':nowIso'] = new Date(nowMs).toISOString();
    setParts.push('createdAt = if_not_exists(createdAt, :nowIso)');
  }
  const removeParts = plan.remove.map((attribute) => {
    names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  });
  const conditions: string[] = [];
  if (!plan.itemExists) conditions.push('attribute_not_exists(feedId)');
  else if (plan.expectRevision === undefined) conditions.push('attribute_not_exists(#revision)');
  else {
    conditions.push('#revision = :expected');
    values[':expected'] = plan.expectRevision;
  }
  if (plan.requireNoLease) {
    conditions.push('(attribute_not_exists(leaseOwner) OR leaseExpiresAt < :now)');
    values[':now'] = nowMs;
  }
  try {
    const output = await aws.dynamo.send(
      new UpdateItemCommand({
        TableName: table,
        Key: marshall({ feedId: plan.feedId }),
        UpdateExpression: `SET ${setParts.join(', ')}${removeParts.length > 0 ? ` REMOVE ${removeParts.join(', ')}` : ''}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: marshall(values),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return cursorItemOf(plan.feedId, output.Attributes ? unmarshall(output.Attributes) : undefined);
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      throw new OpsError(
        `feed ${plan.feedId}'s cursor item changed after it was read (a poller run committed or took the ` +
          'lease): nothing was changed; run the command again',
        { cause: error },
      );
    }
    throw error;
  }
}
