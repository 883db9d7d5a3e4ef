// reset-cursor, replay and clear-auth-backoff: an operator's change to a feed's cursor item
// (functions/core/adapters/dynamo-cursor-store.ts, operator-update.ts). Flow: read the item (consistent) → plan (pure: what
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
import {
  type CursorItemAttributes,
  cursorAttributesOf,
} from '../../functions/core/adapters/dynamo-cursor-store.js';
import type { AwsAt } from '../aws.js';
import { CommandError } from '../cli-args.js';
import { shortenCursor } from './format.js';
import { type OperatorChange, operatorUpdate } from './operator-update.js';

/** The cursor item as the ops commands see it (its attributes are the cursor adapter's). */
export interface CursorItem extends CursorItemAttributes {
  feedId: string;
  /** False when the feed has no item yet (its poller never ran). */
  exists: boolean;
  authFailures: number;
}

export function cursorItemOf(feedId: string, raw: Record<string, unknown> | undefined): CursorItem {
  const attributes = cursorAttributesOf(raw);
  return { ...attributes, feedId, exists: raw !== undefined, authFailures: attributes.authFailures ?? 0 };
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
  /** The conditional update (the adapter's operatorUpdate), and one line per change for the operator. */
  | (OperatorChange & { kind: 'update'; changes: string[]; revisionAfter: number });

export function planCursorChange(
  item: CursorItem,
  action: CursorAction,
  options: { nowMs: number; force: boolean },
): CursorPlan {
  const { feedId } = item;
  const set: OperatorChange['set'] = {};
  const remove: OperatorChange['remove'] = [];
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
  try {
    const output = await aws.dynamo.send(new UpdateItemCommand(operatorUpdate(table, plan, nowMs)));
    return cursorItemOf(plan.feedId, output.Attributes ? unmarshall(output.Attributes) : undefined);
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      throw new CommandError(
        `feed ${plan.feedId}'s cursor item changed after it was read (a poller run committed or took the ` +
          'lease): nothing was changed; run the command again',
        { cause: error },
      );
    }
    throw error;
  }
}
