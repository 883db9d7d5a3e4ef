// A feed's cursor and lease, one item: the one place that knows its attribute names (the ops CLI uses these).
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { LeaseLostError } from '../ingest/errors.js';
import type {
  AuthFailure,
  ChainLink,
  CursorCommit,
  CursorState,
  CursorStore,
  Lease,
} from '../ingest/ports.js';

const handOverOwner = (link: ChainLink) => `continuation:${link.chainId}:${link.step}`;
const FENCED = 'leaseOwner = :owner AND #revision = :revision';

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
  ) {}

  async acquire(
    feedId: string,
    owner: string,
    nowMs: number,
    expiresAt: number,
    chain?: ChainLink,
  ): Promise<Lease | undefined> {
    const set =
      'SET leaseOwner = :owner, leaseExpiresAt = :expires, #revision = if_not_exists(#revision, :zero) + :one, createdAt = if_not_exists(createdAt, :nowIso)';
    try {
      const output = await this.update(
        feedId,
        // A scheduled run ends whatever chain it finds (its hand-over lapsed: the continuation was lost);
        // a continuation takes only the lease handed over to its own step (or that step's lapsed lease).
        chain ? set : `${set} REMOVE chainId, chainStep`,
        chain
          ? 'chainId = :chainId AND chainStep = :step AND (leaseOwner = :handOver OR leaseExpiresAt < :now)'
          : 'attribute_not_exists(leaseOwner) OR leaseExpiresAt < :now',
        {
          ':owner': owner,
          ':expires': expiresAt,
          ':zero': 0,
          ':one': 1,
          ':now': nowMs,
          ':nowIso': new Date(nowMs).toISOString(),
          ...(chain
            ? { ':chainId': chain.chainId, ':step': chain.step, ':handOver': handOverOwner(chain) }
            : {}),
        },
      );
      return { feedId, owner, state: toState(output.Attributes) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The owner is unique per invocation: finding it on the item means our own write landed and only its
      // answer was lost (the SDK's retry then failed the condition). The lease is ours.
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

  async release(
    lease: Lease,
    lastRun?: { outcome: string; at: number },
    handOver?: ChainLink & { expiresAt: number },
  ): Promise<void> {
    // The last run's outcome rides on the release: no extra write, and only the lease holder records it.
    const { expression, values } = updateOf(
      {
        lastRunOutcome: lastRun?.outcome,
        lastRunAt: lastRun && new Date(lastRun.at).toISOString(),
        leaseOwner: handOver && handOverOwner(handOver),
        leaseExpiresAt: handOver?.expiresAt,
        chainId: handOver?.chainId,
        chainStep: handOver?.step,
      },
      handOver ? [] : ['leaseOwner', 'leaseExpiresAt', 'chainId', 'chainStep'],
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
    return this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: marshall({ feedId }),
        UpdateExpression: expression,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#revision': 'revision' },
        ExpressionAttributeValues: marshall(values),
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
}

const TEXT_ATTRIBUTES =
  'pageId highWaterMark lastCaughtUpAt createdAt leaseOwner lastRunOutcome lastRunAt'.split(' ');
const NUMBER_ATTRIBUTES =
  'revision leaseExpiresAt authFailures authRetryNotBefore authFailedTokenVersion paceDelayMs pageSize'.split(
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
