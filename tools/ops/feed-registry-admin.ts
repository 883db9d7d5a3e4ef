// The operator's changes to the feed registry that no function makes (`ops feeds add|show|set|remove
// --delete-cursor`): here, not in functions/, so they do not ship in the Lambda (as operator-update.ts).
// Built on the functions' registry adapter; what they may and may not touch: infra/FLEET.md.
import { type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  DynamoFeedRegistry,
  FeedRegistryConflictError,
  stateOf,
} from '../../functions/core/adapters/dynamo-feed-registry.js';
import type { FeedConfig, FeedState } from '../../functions/core/fleet/feed-config.js';
import { isFeedId } from '../stack.js';

/** What `deleteCursor` removes: the feed's place in the stream, as the poller's cursor store keeps it. */
const CURSOR_ATTRIBUTES = [
  'pageId',
  'highWaterMark',
  'recentCursors',
  'pageSize',
  'paceDelayMs',
  'lastCaughtUpAt',
  'chainId',
  'chainStep',
  'authFailures',
  'authRetryNotBefore',
  'authFailedTokenVersion',
];

/** A feed's registry row as ops shows it: its configuration, state and what its runs left on the item. */
export interface FeedRecord {
  feedId: string;
  config: FeedConfig | undefined;
  configRevision: number;
  state: FeedState;
  item: Record<string, unknown>;
}

export class FeedRegistryAdmin {
  private readonly registry: DynamoFeedRegistry;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {
    this.registry = new DynamoFeedRegistry(client, tableName);
  }

  /**
   * Every feed's item, whole (`feeds list`, `status`): one consistent scan, page by page; the table's other
   * items (budgets, backfill checkpoints, the dispatch lock) are left out, their keys never being feed ids.
   */
  async list(): Promise<FeedRecord[]> {
    const records: FeedRecord[] = [];
    const pages = paginateScan({ client: this.client }, { TableName: this.tableName, ConsistentRead: true });
    for await (const page of pages) {
      for (const raw of page.Items ?? []) {
        // By the key first: another item may hold what unmarshall refuses (a backfill's int64 version).
        const feedId = raw.feedId?.S;
        if (feedId !== undefined && isFeedId(feedId)) records.push(recordOf(feedId, unmarshall(raw)));
      }
    }
    return records.sort((a, b) => (a.feedId < b.feedId ? -1 : a.feedId > b.feedId ? 1 : 0));
  }

  /** `feeds add`: a new row, or the configuration of a feed's cursor item that has none (its cursor kept). */
  async add(feedId: string, config: FeedConfig, now: number): Promise<void> {
    if (!(await this.registry.register(feedId, config, 'enabled', now))) {
      const found = await this.registry.item(feedId);
      throw new FeedRegistryConflictError(
        `feed "${feedId}" already exists (state ${String(found?.feedState)})`,
        found,
      );
    }
  }

  async get(feedId: string): Promise<FeedRecord | undefined> {
    const item = await this.registry.item(feedId);
    return item === undefined ? undefined : recordOf(feedId, item);
  }

  /**
   * `feeds set`: replaces the configuration (checked whole by the caller: changedFeedConfig) if nobody changed
   * it since `expectedRevision` was read; the cursor, the lease and the fencing revision are not touched, so a
   * run in progress commits as usual and takes the new configuration at its next start.
   */
  async setConfig(feedId: string, config: FeedConfig, expectedRevision: number, now: number): Promise<void> {
    const first = expectedRevision === 0;
    await this.registry.update(
      feedId,
      'SET #config = :config, configRevision = :next, configUpdatedAt = :now',
      `attribute_exists(#config) AND #state <> :removed AND ${first ? 'attribute_not_exists(configRevision)' : 'configRevision = :expected'}`,
      {
        ':config': config,
        ':next': expectedRevision + 1,
        ':now': new Date(now).toISOString(),
        ':removed': 'removed',
        ...(first ? {} : { ':expected': expectedRevision }),
      },
      `feed "${feedId}" was changed or removed since it was read, or does not exist`,
    );
  }

  /** pause, resume, remove (the tombstone: polling stops, cursor and data kept), with the operator's reason. */
  setState(feedId: string, to: FeedState, now: number, reason?: string): Promise<void> {
    return this.registry.setState(feedId, to, now, reason);
  }

  /**
   * `feeds remove --delete-cursor`: forgets a removed feed's place in the stream (added again, it reads from
   * the start) and keeps its tombstone, so the initial set never brings it back. Bumps the fencing revision:
   * a run still holding a stale lease can no longer commit. `read`: the revision the operator's plan was made
   * from (undefined: the item had none), which must be unchanged; `force`: even while a run holds the lease.
   */
  async deleteCursor(
    feedId: string,
    now: number,
    options: { read?: { revision: number | undefined }; force?: boolean } = {},
  ): Promise<void> {
    const conditions = ['#state = :removed'];
    const values: Record<string, unknown> = { ':removed': 'removed', ':zero': 0, ':one': 1 };
    if (!options.force) {
      conditions.push('(attribute_not_exists(leaseOwner) OR leaseExpiresAt < :now)');
      values[':now'] = now;
    }
    if (options.read !== undefined) {
      if (options.read.revision === undefined) conditions.push('attribute_not_exists(#revision)');
      else {
        conditions.push('#revision = :expected');
        values[':expected'] = options.read.revision;
      }
    }
    await this.registry.update(
      feedId,
      `SET #revision = if_not_exists(#revision, :zero) + :one REMOVE ${CURSOR_ATTRIBUTES.join(', ')}`,
      conditions.join(' AND '),
      values,
      `feed "${feedId}" must be removed, with no run in progress${
        options.read === undefined ? '' : ' and its cursor as it was read'
      }, before its cursor is deleted`,
    );
  }
}

function recordOf(feedId: string, item: Record<string, unknown>): FeedRecord {
  return {
    feedId,
    config: item.config as FeedConfig | undefined,
    configRevision: typeof item.configRevision === 'number' ? item.configRevision : 0,
    state: stateOf(item.feedState),
    item,
  };
}
