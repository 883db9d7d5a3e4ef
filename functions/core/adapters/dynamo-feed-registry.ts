// The feed registry: each feed's configuration and state on its item in the cursor table, beside the cursor
// and the lease (infra/FLEET.md, "The registry"). Every write here is an UpdateItem of the registry's own
// attributes; none touches the cursor, the lease or the fencing revision, so an operator's change never
// conflicts with a run's fenced commits. What the functions call is here (the dispatcher's scan, seeding and
// lock; a feed's state); the operator's other changes are tools/ops/feed-registry-admin.ts. The dispatcher's
// lock is an item of the same table (`fleet#dispatch`; feed ids never hold `#`).
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { FeedRow, InFlightBatch } from '../fleet/dispatch.js';
import type { FeedConfig, FeedState, InitialFeed } from '../fleet/feed-config.js';

/** The scan's projection: what the dispatcher decides with (FeedRow), never the cursor itself. */
const ROW_ATTRIBUTES = [
  'feedId',
  'feedState',
  'stateReason',
  'leaseOwner',
  'leaseExpiresAt',
  'lastDispatchId',
  'lastDispatchedAt',
  'lastRunAt',
  'lastRunOutcome',
  'lastCaughtUpAt',
  'createdAt',
  'authRetryNotBefore',
  'authFailedTokenVersion',
];
const DISPATCH_LOCK_KEY = 'fleet#dispatch';
/** The batches whose invocations ended: an item of its own, so a poller's end write stays one WCU. */
const ENDED_KEY = 'fleet#ended';
/** The lock item stays under DynamoDB's 400 KB item limit: past this, older batches keep no feed ids. */
const MAX_IN_FLIGHT_BYTES = 300_000;

export class FeedRegistryConflictError extends Error {
  override readonly name = 'FeedRegistryConflictError';
  readonly code = 'ERR_FEED_REGISTRY_CONFLICT';
  constructor(
    message: string,
    /** The item as it was when the write was refused (absent: no such item). */
    readonly found: Record<string, unknown> | undefined,
  ) {
    super(message);
  }
}

export interface DispatchLock {
  /** Batches sent by earlier dispatches, still on their way. */
  inFlight: InFlightBatch[];
  /** Batches whose invocations have said they ended since the last dispatch read them. */
  ended: string[];
}

/** How a feed may move between states (ops pause, resume, remove; the poller's stop). */
const MOVES: Record<FeedState, readonly FeedState[]> = {
  enabled: ['paused', 'stopped', 'removed'],
  paused: ['enabled', 'removed'],
  stopped: ['enabled', 'paused', 'removed'],
  removed: ['enabled'],
};

export class DynamoFeedRegistry {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  /** Every feed's row (strongly consistent: a lease just released is seen free), page by page. */
  async scan(): Promise<FeedRow[]> {
    const names: Record<string, string> = { '#config': 'config', '#schedule': 'scheduleMinutes' };
    for (const [index, name] of ROW_ATTRIBUTES.entries()) names[`#a${index}`] = name;
    names['#token'] = 'tokenParameterName';
    const projection = [
      ...ROW_ATTRIBUTES.map((_, index) => `#a${index}`),
      '#config.#schedule',
      '#config.#token',
    ].join(', ');
    const rows: FeedRow[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          ConsistentRead: true,
          ProjectionExpression: projection,
          ExpressionAttributeNames: names,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const raw of page.Items ?? []) {
        const item = unmarshall(raw);
        if (typeof item.feedId === 'string' && !item.feedId.includes('#')) rows.push(rowOf(item));
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return rows;
  }

  /**
   * Creates the rows of the initial set that are missing, a feed's existing cursor item included (the
   * migration: its cursor stays where it is); never overwrites a row. Returns the feed ids it wrote.
   */
  async seedMissing(
    initial: readonly InitialFeed[],
    rows: readonly FeedRow[],
    now: number,
  ): Promise<string[]> {
    const registered = new Set(rows.filter((row) => row.registered).map((row) => row.feedId));
    const seeded: string[] = [];
    for (const feed of initial.filter(({ feedId }) => !registered.has(feedId))) {
      if (await this.register(feed.feedId, feed.config, feed.state, now)) seeded.push(feed.feedId);
    }
    return seeded;
  }

  /** Moves a feed to `to` (with the reason for `stopped`), from a state that allows it (MOVES). */
  async setState(feedId: string, to: FeedState, now: number, reason?: string): Promise<void> {
    const from = (Object.keys(MOVES) as FeedState[]).filter((state) => MOVES[state].includes(to));
    const values: Record<string, unknown> = { ':to': to, ':now': new Date(now).toISOString() };
    for (const [index, state] of from.entries()) values[`:from${index}`] = state;
    if (reason !== undefined) values[':reason'] = reason;
    await this.update(
      feedId,
      reason === undefined
        ? 'SET #state = :to, stateChangedAt = :now REMOVE stateReason'
        : 'SET #state = :to, stateChangedAt = :now, stateReason = :reason',
      `attribute_exists(#config) AND #state IN (${from.map((_, index) => `:from${index}`).join(', ')})`,
      values,
      `feed "${feedId}" cannot become ${to} from its state, or does not exist`,
    );
  }

  /**
   * Takes the dispatch lock for `ttlMs` unless it is held, or a scan that started after `requestedAt` has
   * already seen what the request asks about. Held: the request is noted, and the holder runs once more.
   */
  async lockDispatch(
    owner: string,
    now: number,
    ttlMs: number,
    requestedAt: number,
  ): Promise<DispatchLock | 'held' | 'redundant'> {
    try {
      const output = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: marshall({ feedId: DISPATCH_LOCK_KEY }),
          UpdateExpression: 'SET lockOwner = :owner, lockExpiresAt = :expires, lastScanAt = :now',
          ConditionExpression:
            '(attribute_not_exists(lockOwner) OR lockExpiresAt < :now) AND ' +
            '(attribute_not_exists(lastScanAt) OR lastScanAt <= :requested)',
          ExpressionAttributeValues: marshall({
            ':owner': owner,
            ':expires': now + ttlMs,
            ':now': now,
            ':requested': requestedAt,
          }),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const ended = (await this.item(ENDED_KEY))?.ended as Set<string> | undefined;
      return {
        inFlight: inFlightOf(output.Attributes && unmarshall(output.Attributes).inFlight),
        ended: [...(ended ?? [])],
      };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const lock = error.Item ? unmarshall(error.Item) : {};
      if (typeof lock.lastScanAt === 'number' && lock.lastScanAt > requestedAt) return 'redundant';
      await this.client
        .send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: marshall({ feedId: DISPATCH_LOCK_KEY }),
            UpdateExpression: 'SET rerunRequestedAt = :requested',
            ConditionExpression: 'attribute_not_exists(rerunRequestedAt) OR rerunRequestedAt < :requested',
            ExpressionAttributeValues: marshall({ ':requested': requestedAt }),
          }),
        )
        .catch((conditional: unknown) => {
          if (!(conditional instanceof ConditionalCheckFailedException)) throw conditional;
        });
      return 'held';
    }
  }

  /**
   * Releases the lock with the batches on their way, then says on the ended item how many due feeds were left
   * waiting (a poller's end write reads it back: it asks for a dispatch when any wait) and consumes the ended
   * batches it read. Returns whether a request came in while it was held, after its scan began: then the
   * dispatcher runs once more.
   */
  async unlockDispatch(
    owner: string,
    inFlight: readonly InFlightBatch[],
    waiting: number,
    ended: readonly string[] = [],
  ): Promise<boolean> {
    const output = await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: marshall({ feedId: DISPATCH_LOCK_KEY }),
        UpdateExpression: 'SET inFlight = :inFlight REMOVE lockOwner, lockExpiresAt',
        ConditionExpression: 'lockOwner = :owner',
        ExpressionAttributeValues: marshall({ ':owner': owner, ':inFlight': boundedInFlight(inFlight) }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    // After the batches on their way were written without them (an id left over matches no batch later).
    await this.updateItem(
      ENDED_KEY,
      ended.length > 0 ? 'SET waiting = :waiting DELETE ended :ended' : 'SET waiting = :waiting',
      { ':waiting': waiting, ...(ended.length > 0 ? { ':ended': new Set(ended) } : {}) },
    );
    const lock = output.Attributes ? unmarshall(output.Attributes) : {};
    // A request from the instant the scan began is answered by it (the poller asks after its last write).
    return typeof lock.rerunRequestedAt === 'number' && lock.rerunRequestedAt > lock.lastScanAt;
  }

  /**
   * A poller invocation's last write: its batch ended (the dispatch counts it running until then). Returns the
   * due feeds the last dispatch left waiting, read in the same write: no read after it, so an invocation's
   * last act after this is its dispatch request, and the batch a dispatch starts in its slot never overlaps it.
   */
  async endBatch(batchId: string): Promise<number> {
    const output = await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: marshall({ feedId: ENDED_KEY }),
        UpdateExpression: 'ADD ended :batch',
        ExpressionAttributeValues: marshall({ ':batch': new Set([batchId]) }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    const waiting = output.Attributes ? unmarshall(output.Attributes).waiting : undefined;
    return typeof waiting === 'number' ? waiting : 0;
  }

  private async updateItem(feedId: string, expression: string, values: Record<string, unknown>) {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: marshall({ feedId }),
        UpdateExpression: expression,
        ExpressionAttributeValues: marshall(values),
      }),
    );
  }

  /** Writes a row when the item has no configuration yet; false when it has one (nothing written). */
  async register(feedId: string, config: FeedConfig, state: FeedState, now: number): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: marshall({ feedId }),
          UpdateExpression:
            'SET #config = :config, #state = :state, configRevision = :one, stateChangedAt = :nowIso, ' +
            'createdAt = if_not_exists(createdAt, :nowIso)',
          ConditionExpression: 'attribute_not_exists(#config)',
          ExpressionAttributeNames: { '#config': 'config', '#state': 'feedState' },
          ExpressionAttributeValues: marshall(
            { ':config': config, ':state': state, ':one': 1, ':nowIso': new Date(now).toISOString() },
            { removeUndefinedValues: true },
          ),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** The item as stored (strongly consistent), or undefined. */
  async item(feedId: string): Promise<Record<string, unknown> | undefined> {
    const output = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: marshall({ feedId }), ConsistentRead: true }),
    );
    return output.Item && unmarshall(output.Item);
  }

  /** A conditional UpdateItem of a feed's item; a failed condition is a FeedRegistryConflictError. */
  async update(
    feedId: string,
    expression: string,
    condition: string,
    values: Record<string, unknown>,
    conflict: string,
  ): Promise<void> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: marshall({ feedId }),
          UpdateExpression: expression,
          ConditionExpression: condition,
          ExpressionAttributeNames: Object.fromEntries(
            [
              ['#config', 'config'],
              ['#state', 'feedState'],
              ['#revision', 'revision'],
            ].filter(([name]) => `${expression} ${condition}`.includes(name as string)),
          ),
          ExpressionAttributeValues: marshall(values, { removeUndefinedValues: true }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      throw new FeedRegistryConflictError(conflict, error.Item && unmarshall(error.Item));
    }
  }
}

export function stateOf(value: unknown): FeedState {
  return value === 'paused' || value === 'stopped' || value === 'removed' ? value : 'enabled';
}

const msOf = (value: unknown) => (typeof value === 'string' ? Date.parse(value) : undefined);
const numberOf = (value: unknown) => (typeof value === 'number' ? value : undefined);
const textOf = (value: unknown) => (typeof value === 'string' ? value : undefined);

/** A scanned item as the dispatcher reads it; times stored as ISO text come back as epoch ms. */
function rowOf(item: Record<string, unknown>): FeedRow {
  const config = item.config as Partial<FeedConfig> | undefined;
  const fields: Partial<FeedRow> = {
    stateReason: textOf(item.stateReason),
    tokenParameterName: textOf(config?.tokenParameterName),
    leaseOwner: textOf(item.leaseOwner),
    leaseExpiresAt: numberOf(item.leaseExpiresAt),
    lastDispatchId: textOf(item.lastDispatchId),
    lastDispatchedAt: numberOf(item.lastDispatchedAt),
    lastRunAt: msOf(item.lastRunAt),
    lastRunOutcome: textOf(item.lastRunOutcome),
    lastCaughtUpAt: msOf(item.lastCaughtUpAt),
    createdAt: msOf(item.createdAt),
    authRetryNotBefore: numberOf(item.authRetryNotBefore),
    authFailedTokenVersion: numberOf(item.authFailedTokenVersion),
  };
  const row: FeedRow = {
    feedId: item.feedId as string,
    registered: config !== undefined,
    state: stateOf(item.feedState),
    scheduleMinutes: numberOf(config?.scheduleMinutes) ?? 1,
  };
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && !Number.isNaN(value)) Object.assign(row, { [key]: value });
  }
  return row;
}

function inFlightOf(value: unknown): InFlightBatch[] {
  if (!Array.isArray(value)) return [];
  return value.map((entry: { b: string; t: number; f?: string }) => ({
    batchId: entry.b,
    dispatchedAt: entry.t,
    feedIds: entry.f ? entry.f.split(' ') : [],
  }));
}

/** The batches as stored (feed ids joined by spaces); the oldest lose their ids past MAX_IN_FLIGHT_BYTES. */
function boundedInFlight(batches: readonly InFlightBatch[]) {
  let bytes = 0;
  return [...batches]
    .sort((a, b) => b.dispatchedAt - a.dispatchedAt)
    .map(({ batchId, dispatchedAt, feedIds }) => {
      const ids = feedIds.join(' ');
      bytes += ids.length + batchId.length + 16;
      return bytes <= MAX_IN_FLIGHT_BYTES
        ? { b: batchId, t: dispatchedAt, f: ids }
        : { b: batchId, t: dispatchedAt };
    });
}
