// A feed's cursor and lease, one item (its registry row too: dynamo-feed-registry.ts): the one place that
// knows the cursor's attribute names (the ops CLI uses these). Every write is a conditional UpdateItem fenced
// on the revision (bumped by every write): a run's idle record and its lease on the revision it read, its
// commits on its lease and the revision of its last write.
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { LeaseLostError } from '../ingest/errors.js';
import type {
  AuthFailure,
  CursorCommit,
  CursorState,
  CursorStore,
  DispatchMark,
  FeedItem,
  LastRun,
  Lease,
  RunRecord,
} from '../ingest/ports.js';
import { stateOf } from './dynamo-feed-registry.js';

const FENCED = 'leaseOwner = :owner AND #revision = :revision';
/** The item still at the revision a run read (0: never written by a run, no revision yet), with no live lease. */
const unmovedAndFree = (revision: number) =>
  `${revision === 0 ? 'attribute_not_exists(#revision)' : '#revision = :revision'} AND ` +
  '(attribute_not_exists(leaseOwner) OR leaseExpiresAt < :now)';
/** BatchGetItem takes at most 100 keys a call. */
const READ_KEYS_PER_CALL = 100;
/** Attempts at the keys DynamoDB leaves unprocessed (throttling), with a short backoff between them. */
const READ_ATTEMPTS = 5;
const AUTH_ATTRIBUTES = ['authFailures', 'authRetryNotBefore', 'authFailedTokenVersion'];

/** `SET` of `assignments` and each defined `set` value (as `:<name>` in `values`), then `REMOVE` of `remove`. */
export function updateOf(
  set: Record<string, unknown>,
  remove: string[],
  values: Record<string, unknown>,
  assignments: string[] = [],
) {
  for (const [name, value] of Object.entries(set)) {
    if (value === undefined) continue;
    assignments.push(`${name} = :${name}`);
    values[`:${name}`] = value;
  }
  const clauses = [
    assignments.length > 0 ? `SET ${assignments.join(', ')}` : '',
    remove.length > 0 ? `REMOVE ${remove.join(', ')}` : '',
  ];
  return { expression: clauses.filter(Boolean).join(' '), values };
}

export class DynamoCursorStore implements CursorStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly sleep: (ms: number) => Promise<void> = (ms) =>
      new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  async read(feedIds: readonly string[]): Promise<Map<string, FeedItem>> {
    const items = new Map<string, FeedItem>();
    const unique = [...new Set(feedIds)];
    for (let start = 0; start < unique.length; start += READ_KEYS_PER_CALL) {
      let keys: Array<Record<string, AttributeValue>> | undefined = unique
        .slice(start, start + READ_KEYS_PER_CALL)
        .map((feedId) => marshall({ feedId }));
      for (let attempt = 1; keys && keys.length > 0; attempt += 1) {
        if (attempt > READ_ATTEMPTS)
          throw new Error(
            `cursor table ${this.tableName}: ${keys.length} items unread after ${READ_ATTEMPTS} attempts`,
          );
        if (attempt > 1) await this.sleep(50 * 2 ** attempt);
        const output: BatchGetItemCommandOutput = await this.client.send(
          new BatchGetItemCommand({
            RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } },
          }),
        );
        for (const raw of output.Responses?.[this.tableName] ?? []) {
          const item = feedItemOf(raw);
          items.set(item.feedId, item);
        }
        keys = output.UnprocessedKeys?.[this.tableName]?.Keys;
      }
    }
    return items;
  }

  async record(feedId: string, revision: number, run: RunRecord): Promise<boolean> {
    const at = new Date(run.at).toISOString();
    const { caughtUp, authFailure } = run;
    const remove = [
      ...(run.stopReason === undefined ? ['stopReason'] : []),
      // An idle poll is a page like any other: the end of the stream (no cursor memory, no part handed off),
      // and a successful answer, which ends a 401 backoff.
      ...(caughtUp ? ['recentCursors', 'partialPage', ...AUTH_ATTRIBUTES] : []),
      ...(caughtUp && caughtUp.pageSize === undefined ? ['pageSize'] : []),
      ...(authFailure && authFailure.tokenVersion === undefined ? ['authFailedTokenVersion'] : []),
    ];
    const { expression, values } = updateOf(
      {
        lastRunOutcome: run.outcome,
        lastRunAt: at,
        ...dispatchAttributes(run.dispatch),
        stopReason: run.stopReason,
        ...caughtUp,
        authFailures: authFailure?.failures,
        authRetryNotBefore: authFailure?.retryNotBefore,
        authFailedTokenVersion: authFailure?.tokenVersion,
      },
      remove,
      { ':revision': revision, ':zero': 0, ':one': 1, ':now': run.at, ':nowIso': at },
      ['#revision = if_not_exists(#revision, :zero) + :one', 'createdAt = if_not_exists(createdAt, :nowIso)'],
    );
    try {
      await this.update(feedId, expression, unmovedAndFree(revision), values);
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Our own write with its answer lost (the SDK's retry then failed the condition): the next revision,
      // with this record's time and outcome.
      const item = error.Item && unmarshall(error.Item);
      return item?.revision === revision + 1 && item.lastRunAt === at && item.lastRunOutcome === run.outcome;
    }
  }

  async acquire(
    feedId: string,
    owner: string,
    revision: number,
    nowMs: number,
    expiresAt: number,
    dispatch?: DispatchMark,
  ): Promise<Lease | undefined> {
    const nowIso = new Date(nowMs).toISOString();
    const { expression, values } = updateOf(
      { leaseOwner: owner, leaseExpiresAt: expiresAt, ...dispatchAttributes(dispatch) },
      [],
      { ':revision': revision, ':zero': 0, ':one': 1, ':now': nowMs, ':nowIso': nowIso },
      ['#revision = if_not_exists(#revision, :zero) + :one', 'createdAt = if_not_exists(createdAt, :nowIso)'],
    );
    try {
      const output = await this.update(feedId, expression, unmovedAndFree(revision), values);
      return { feedId, owner, state: toState(output.Attributes) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The owner is unique per invocation and feed: finding it on the item means our own write landed and
      // only its answer was lost (the SDK's retry then failed the condition). The lease is ours.
      if (error.Item && unmarshall(error.Item).leaseOwner === owner)
        return { feedId, owner, state: toState(error.Item) };
      return undefined;
    }
  }

  async commit(lease: Lease, commit: CursorCommit): Promise<Lease> {
    const { pageId, highWaterMark, lastCaughtUpAt, paceDelayMs, pageSize, recentCursors, partialPage } =
      commit;
    const remove = [
      ...(pageId === undefined ? ['pageId'] : []),
      ...(pageSize === undefined ? ['pageSize'] : []),
      ...(recentCursors === undefined ? ['recentCursors'] : []),
      ...(partialPage === undefined ? ['partialPage'] : []),
      ...(commit.clearAuthFailures ? ['authFailures', 'authRetryNotBefore', 'authFailedTokenVersion'] : []),
    ];
    // One string: a list would cost 4 bytes more per entry in the item.
    const set = {
      pageId,
      highWaterMark,
      lastCaughtUpAt,
      paceDelayMs,
      pageSize,
      recentCursors: recentCursors?.join(' '),
      partialPage: partialPage && `${partialPage.records} ${partialPage.digest}`,
    };
    return this.fencedUpdate(lease, set, remove, (item) => item.pageId === pageId);
  }

  async recordAuthFailure(lease: Lease, { failures, retryNotBefore, tokenVersion }: AuthFailure) {
    return this.fencedUpdate(
      lease,
      { authFailures: failures, authRetryNotBefore: retryNotBefore, authFailedTokenVersion: tokenVersion },
      tokenVersion === undefined ? ['authFailedTokenVersion'] : [],
      (item) => item.authRetryNotBefore === retryNotBefore,
    );
  }

  async release(lease: Lease, lastRun: LastRun): Promise<void> {
    // How the run ended rides on the release: no extra write, and only the lease holder records it.
    const { expression, values } = updateOf(
      {
        lastRunOutcome: lastRun.outcome,
        lastRunAt: new Date(lastRun.at).toISOString(),
        stopReason: lastRun.stopReason,
      },
      ['leaseOwner', 'leaseExpiresAt', ...(lastRun.stopReason === undefined ? ['stopReason'] : [])],
      { ':owner': lease.owner, ':revision': lease.state.revision },
    );
    try {
      await this.update(lease.feedId, expression, FENCED, values);
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async fencedUpdate(
    lease: Lease,
    set: Record<string, unknown>,
    remove: string[],
    /** Whether an item shows what this write sets (to recognise it after a lost answer). */
    showsThisWrite: (item: Record<string, unknown>) => boolean,
  ): Promise<Lease> {
    const fence = { ':one': 1, ':owner': lease.owner, ':revision': lease.state.revision };
    const { expression, values } = updateOf(set, remove, fence, ['#revision = #revision + :one']);
    try {
      const output = await this.update(lease.feedId, expression, FENCED, values);
      return { ...lease, state: toState(output.Attributes) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The update may have landed with its answer lost (the SDK's retry then failed the condition). Every write
      // bumps the revision by one, so our owner at exactly the next revision with this write's values is our
      // own write. Anything else is a lost lease.
      const item = error.Item && unmarshall(error.Item);
      if (
        item?.leaseOwner === lease.owner &&
        item.revision === lease.state.revision + 1 &&
        showsThisWrite(item)
      ) {
        return { ...lease, state: toState(error.Item) };
      }
      throw new LeaseLostError(lease.feedId, { cause: error });
    }
  }

  private update(feedId: string, expression: string, condition: string, values: Record<string, unknown>) {
    // DynamoDB refuses a value the expressions do not use (the revision of an item never written, say).
    const text = `${expression} ${condition}`;
    const used = Object.fromEntries(
      Object.entries(values).filter(([name]) => new RegExp(`${name}(?!\\w)`).test(text)),
    );
    return this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: marshall({ feedId }),
        UpdateExpression: expression,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#revision': 'revision' },
        ExpressionAttributeValues: marshall(used),
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  }
}

/** The cursor item's attributes as stored (absent or mistyped: undefined). */
export interface CursorItemAttributes extends Partial<CursorState> {
  leaseOwner?: string;
  leaseExpiresAt?: number;
  lastRunOutcome?: string;
  lastRunAt?: string;
  /** A documented stop's reason, from the last run that ended in one (removed by the next that did not). */
  stopReason?: string;
  lastDispatchId?: string;
  lastDispatchedAt?: number;
}

const TEXT_ATTRIBUTES =
  'pageId highWaterMark lastCaughtUpAt createdAt leaseOwner lastRunOutcome lastRunAt stopReason lastDispatchId'.split(
    ' ',
  );
const NUMBER_ATTRIBUTES =
  'revision leaseExpiresAt authFailures authRetryNotBefore authFailedTokenVersion paceDelayMs pageSize lastDispatchedAt'.split(
    ' ',
  );

export function cursorAttributesOf(item: Record<string, unknown> | undefined): CursorItemAttributes {
  const attributes: Record<string, unknown> = {};
  for (const key of TEXT_ATTRIBUTES) if (typeof item?.[key] === 'string') attributes[key] = item[key];
  for (const key of NUMBER_ATTRIBUTES) if (typeof item?.[key] === 'number') attributes[key] = item[key];
  const recent = item?.recentCursors;
  if (typeof recent === 'string') attributes.recentCursors = recent.split(' ').filter(Boolean);
  const [records, digest] = typeof item?.partialPage === 'string' ? item.partialPage.split(' ') : [];
  if (digest !== undefined) attributes.partialPage = { records: Number(records), digest };
  return attributes;
}

/** The dispatch that started a run, as the dispatcher reads it back (FeedRow). */
function dispatchAttributes(dispatch: DispatchMark | undefined) {
  return { lastDispatchId: dispatch?.batchId, lastDispatchedAt: dispatch?.dispatchedAt };
}

function feedItemOf(raw: Record<string, AttributeValue>): FeedItem {
  const item = unmarshall(raw);
  const attributes = cursorAttributesOf(item);
  return {
    feedId: String(item.feedId),
    state: toState(raw),
    ...(attributes.leaseOwner === undefined ? {} : { leaseOwner: attributes.leaseOwner }),
    ...(attributes.leaseExpiresAt === undefined ? {} : { leaseExpiresAt: attributes.leaseExpiresAt }),
    ...(item.config === undefined ? {} : { config: item.config }),
    feedState: stateOf(item.feedState),
  };
}

function toState(raw: Record<string, AttributeValue> | undefined): CursorState {
  const item = cursorAttributesOf(raw && unmarshall(raw));
  return {
    pageId: item.pageId,
    revision: item.revision ?? 0,
    highWaterMark: item.highWaterMark,
    lastCaughtUpAt: item.lastCaughtUpAt,
    createdAt: item.createdAt ?? new Date(0).toISOString(),
    authFailures: item.authFailures ?? 0,
    authRetryNotBefore: item.authRetryNotBefore,
    authFailedTokenVersion: item.authFailedTokenVersion,
    paceDelayMs: item.paceDelayMs,
    pageSize: item.pageSize,
    recentCursors: item.recentCursors,
    partialPage: item.partialPage,
  };
}
