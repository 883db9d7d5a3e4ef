// `ops feeds add|list|show|set|pause|resume|remove`: the fleet's feeds managed at runtime, as rows of the
// registry (each feed's item in the cursor table: its `config`, state, and beside them its cursor and lease;
// infra/FLEET.md, "The registry"). Every change goes through FeedRegistryAdmin (feed-registry-admin.ts),
// which writes only the registry's own attributes, conditionally: nothing here touches a cursor, a lease or
// the fencing revision, except `remove --delete-cursor`, which deletes the cursor of a removed feed with the
// plan-then-`--yes` of the cursor commands. Flow per command: read the row → plan (what changes, or why not)
// → write (unless --dry-run) → after `add` and `resume`, ask the dispatcher for a dispatch at once.
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { DescribeParametersCommand } from '@aws-sdk/client-ssm';
import { FeedRegistryConflictError } from '../../functions/core/adapters/dynamo-feed-registry.js';
import type { DispatchRequest } from '../../functions/core/fleet/dispatch.js';
import {
  changedFeedConfig,
  type FeedConfig,
  FeedConfigError,
  type FeedConfigKey,
  type FeedState,
} from '../../functions/core/fleet/feed-config.js';
import type { AwsAt } from '../aws.js';
import { CommandError, messageOf } from '../cli-args.js';
import { FEED_CONFIG_FLAGS, type FeedsCommand } from './args.js';
import { cursorItemOf, liveLease } from './cursor.js';
import { type FeedRecord, FeedRegistryAdmin } from './feed-registry-admin.js';
import { formatDuration, renderTable, shortenCursor } from './format.js';
import {
  type FeedStatus,
  lastRunOf,
  readFeedStatus,
  readFeedStatuses,
  renderFeedDetail,
  stalestOf,
  stateOf,
} from './status.js';
import type { OpsTarget } from './target.js';

/** What a feeds command prints: JSON with --json, else the text; `planned`: a plan shown, nothing written. */
export interface FeedsOutput {
  json: unknown;
  text: string;
}

export interface FeedsContext {
  aws: Pick<AwsAt, 'dynamo' | 'lambda' | 'ssm'>;
  target: OpsTarget;
  now: () => number;
}

type StateCommand = Extract<FeedsCommand, { command: 'feeds pause' | 'feeds resume' | 'feeds remove' }>;

const STATE_OF_COMMAND = {
  'feeds pause': 'paused',
  'feeds resume': 'enabled',
  'feeds remove': 'removed',
} as const satisfies Record<string, FeedState>;

export async function runFeedsCommand(parsed: FeedsCommand, context: FeedsContext): Promise<FeedsOutput> {
  const admin = new FeedRegistryAdmin(context.aws.dynamo, context.target.cursorTable);
  switch (parsed.command) {
    case 'feeds list':
      return list(context, parsed.stalest);
    case 'feeds show': {
      const feed = await readFeedStatus(context.aws, context.target, parsed.feedId, context.now());
      if (feed === undefined) throw unknownFeed(parsed.feedId);
      return { json: feed, text: renderFeedDetail(feed) };
    }
    case 'feeds add':
      return add(admin, context, parsed.feedId, parsed.config, parsed.dryRun);
    case 'feeds set':
      return set(admin, context, parsed.feedId, parsed.changes, parsed.dryRun);
    default:
      return changeState(admin, context, parsed);
  }
}

async function list(context: FeedsContext, stalest: number | undefined): Promise<FeedsOutput> {
  const all = await readFeedStatuses(context.aws, context.target, context.now());
  const feeds = stalest === undefined ? all : stalestOf(all, stalest);
  return { json: feeds, text: renderFeedList(feeds, stalest === undefined ? undefined : all.length) };
}

/** One row per feed; `of`: how many there are in all, when these are the stalest of them. */
export function renderFeedList(feeds: readonly FeedStatus[], of?: number): string {
  if (feeds.length === 0) {
    return of === undefined
      ? 'No feed yet: npm run ops -- feeds add ID --token-parameter NAME'
      : 'No feed is polled.';
  }
  const rows = feeds.map((feed) => {
    const vendors = feed.config?.vendorIds;
    return [
      feed.feedId,
      stateOf(feed),
      feed.config?.tokenParameterName ?? '-',
      vendors === undefined
        ? feed.config === undefined
          ? '-'
          : 'all'
        : vendors.length <= 3
          ? vendors.join(',')
          : `${vendors.slice(0, 3).join(',')} +${vendors.length - 3}`,
      feed.config === undefined ? '-' : `${feed.config.scheduleMinutes}m`,
      feed.lagSeconds === undefined ? '-' : formatDuration(feed.lagSeconds * 1000),
      lastRunOf(feed.cursor),
      feed.state === 'enabled' ? '' : (feed.stateReason ?? ''),
    ];
  });
  const table = renderTable(
    ['FEED', 'STATE', 'TOKEN PARAMETER', 'VENDOR IDS', 'SCHEDULE', 'LAG', 'LAST RUN', 'REASON'],
    rows,
  );
  return of === undefined
    ? table
    : `The ${feeds.length} stalest of ${of} feed(s), most behind first:\n${table}`;
}

async function add(
  admin: FeedRegistryAdmin,
  context: FeedsContext,
  feedId: string,
  config: FeedConfig,
  dryRun: boolean,
): Promise<FeedsOutput> {
  const found = await admin.get(feedId);
  if (found?.config !== undefined) throw exists(feedId, found);
  const unchecked = await checkTokenParameter(context, config.tokenParameterName);
  // A cursor item without a row (a feed from before the fleet) becomes the row, its cursor kept.
  const adopts = found !== undefined;
  const plan = [
    `add feed ${feedId}${adopts ? ' onto its existing cursor item (the cursor is kept: it goes on from where it is)' : ''}:`,
    ...configLines(config),
    '  state               enabled',
    ...unchecked,
  ];
  if (dryRun) return dryRunOutput({ feedId, action: 'add', config, state: 'enabled', adopts }, plan);
  try {
    await admin.add(feedId, config, context.now());
  } catch (error) {
    if (error instanceof FeedRegistryConflictError) throw exists(feedId, await admin.get(feedId));
    throw error;
  }
  const dispatch = await askForDispatch(context, `ops feeds add ${feedId}`);
  return {
    json: { feedId, action: 'add', applied: true, config, state: 'enabled', adopts, dispatch: dispatch.kind },
    text: [...plan, '', `Done: feed ${feedId} is enabled. ${dispatch.text}`].join('\n'),
  };
}

async function set(
  admin: FeedRegistryAdmin,
  context: FeedsContext,
  feedId: string,
  changes: Partial<Record<FeedConfigKey, unknown>>,
  dryRun: boolean,
): Promise<FeedsOutput> {
  const record = await registered(admin, feedId);
  if (record.state === 'removed') {
    throw new CommandError(`feed "${feedId}" is removed: resume it first (feeds resume ${feedId})`);
  }
  let config: FeedConfig;
  try {
    config = changedFeedConfig(record.config, changes);
  } catch (error) {
    if (error instanceof FeedConfigError) throw new CommandError(`feed "${feedId}": ${error.message}`);
    throw error;
  }
  const changed = configDifferences(record.config, config);
  const unchecked =
    config.tokenParameterName === record.config.tokenParameterName
      ? []
      : await checkTokenParameter(context, config.tokenParameterName);
  if (changed.length === 0) {
    return {
      json: { feedId, action: 'set', applied: false, why: 'no change', config },
      text: `Nothing to do: feed ${feedId}'s configuration is already so.`,
    };
  }
  const plan = [
    `set feed ${feedId} (configuration revision ${record.configRevision} → ${record.configRevision + 1}):`,
    ...changed.map((line) => `  ${line}`),
    ...unchecked,
  ];
  if (dryRun) return dryRunOutput({ feedId, action: 'set', changes: changed, config }, plan);
  try {
    await admin.setConfig(feedId, config, record.configRevision, context.now());
  } catch (error) {
    if (error instanceof FeedRegistryConflictError) {
      throw new CommandError(
        `feed "${feedId}" was changed (or removed) after it was read: nothing was written; run the command again`,
      );
    }
    throw error;
  }
  return {
    json: { feedId, action: 'set', applied: true, changes: changed, config },
    text: [
      ...plan,
      '',
      "Done: it applies from the feed's next run (a run in progress keeps the configuration it started with; " +
        'the cursor stays where it is).',
    ].join('\n'),
  };
}

async function changeState(
  admin: FeedRegistryAdmin,
  context: FeedsContext,
  parsed: StateCommand,
): Promise<FeedsOutput> {
  const { feedId, reason } = parsed;
  const to = STATE_OF_COMMAND[parsed.command];
  const action = parsed.command.slice('feeds '.length);
  const record = await registered(admin, feedId);
  // A removed feed comes back only through resume (the registry's moves; a pause would leave it removed).
  if (to === 'paused' && record.state === 'removed') {
    throw new CommandError(`feed "${feedId}" is removed: resume it first (feeds resume ${feedId})`);
  }
  const move =
    record.state === to ? undefined : `state ${record.state} → ${to}${reason ? ` (${reason})` : ''}`;
  if (parsed.deleteCursor) return removeWithCursor(admin, context, parsed, record, move);
  if (move === undefined) {
    return {
      json: { feedId, action, applied: false, why: `already ${to}`, state: to },
      text: `Nothing to do: feed ${feedId} is already ${to}.`,
    };
  }
  const effect = {
    paused: 'no dispatch polls it (a run in progress ends as usual); the cursor stays, for feeds resume',
    enabled: 'polled again from its cursor',
    removed:
      'no dispatch polls it (a run in progress ends as usual); the cursor and the data stay (feeds resume ' +
      'brings it back where it stopped)',
  }[to];
  const plan = [`${action} feed ${feedId}: ${move}: ${effect}`];
  if (parsed.dryRun) return dryRunOutput({ feedId, action, from: record.state, to, reason }, plan);
  await moveState(admin, context, feedId, to, reason);
  const dispatch = to === 'enabled' ? await askForDispatch(context, `ops feeds resume ${feedId}`) : undefined;
  return {
    json: { feedId, action, applied: true, from: record.state, to, reason, dispatch: dispatch?.kind },
    text: [...plan, '', `Done.${dispatch ? ` ${dispatch.text}` : ''}`].join('\n'),
  };
}

/**
 * `remove --delete-cursor`: the feed removed (if it is not yet) and its place in the stream forgotten, which
 * cannot be undone: a plan without --yes, as the cursor commands do; refused while a run holds the lease,
 * unless --force; the delete requires the revision the plan was made from.
 */
async function removeWithCursor(
  admin: FeedRegistryAdmin,
  context: FeedsContext,
  parsed: StateCommand,
  record: FeedRecord & { config: FeedConfig },
  move: string | undefined,
): Promise<FeedsOutput> {
  const { feedId, reason, shared } = parsed;
  const cursor = cursorItemOf(feedId, record.item);
  if (!shared.force && liveLease(cursor, context.now())) {
    throw new CommandError(
      `feed ${feedId} is leased by ${cursor.leaseOwner} until ${new Date(cursor.leaseExpiresAt ?? 0).toISOString()}: ` +
        'a poller run is in progress. Run again after it ends, or pass --force (the run then fails its next ' +
        'commit, and its lease expires).',
    );
  }
  const held = cursor.pageId !== undefined || cursor.highWaterMark !== undefined;
  const changes = [
    ...(move === undefined ? [] : [`${move}: polling stops`]),
    held
      ? `cursor ${shortenCursor(cursor.pageId)}${cursor.highWaterMark === undefined ? '' : ` (high-water mark ${cursor.highWaterMark})`} → deleted: added again, the feed reads the stream from the start`
      : 'no cursor held: its run state (backoff, pace, last caught up) is cleared',
    `revision ${cursor.revision ?? '(none)'} → ${(cursor.revision ?? 0) + 1}: a running invocation cannot commit over it`,
    'the row stays, removed: the initial set never brings the feed back',
  ];
  const plan = [`remove feed ${feedId} and delete its cursor:`, ...changes.map((line) => `  ${line}`)];
  const json = { feedId, action: 'remove', deleteCursor: true, changes };
  if (!shared.yes || parsed.dryRun) {
    return {
      json: { ...json, applied: false },
      text: `${plan.join('\n')}\n\nNothing changed: add --yes to do it.`,
    };
  }
  if (move !== undefined) await moveState(admin, context, feedId, 'removed', reason);
  try {
    await admin.deleteCursor(feedId, context.now(), {
      read: { revision: cursor.revision },
      force: shared.force,
    });
  } catch (error) {
    if (error instanceof FeedRegistryConflictError) {
      throw new CommandError(
        `feed ${feedId}'s cursor changed after it was read (a poller run committed or took the lease)` +
          `${move === undefined ? '' : '; the feed is removed'}: the cursor was not deleted; run the command again`,
      );
    }
    throw error;
  }
  return { json: { ...json, applied: true }, text: `${plan.join('\n')}\n\nDone.` };
}

async function moveState(
  admin: FeedRegistryAdmin,
  context: FeedsContext,
  feedId: string,
  to: FeedState,
  reason: string | undefined,
): Promise<void> {
  try {
    await admin.setState(feedId, to, context.now(), reason);
  } catch (error) {
    if (!(error instanceof FeedRegistryConflictError)) throw error;
    const now = error.found?.feedState ?? 'gone';
    throw new CommandError(
      `feed "${feedId}" changed after it was read (it is now ${String(now)}): nothing was written; run the command again`,
    );
  }
}

/** The feed's row; a CommandError for an unknown feed or a cursor item without a registry row. */
async function registered(
  admin: FeedRegistryAdmin,
  feedId: string,
): Promise<FeedRecord & { config: FeedConfig }> {
  const record = await admin.get(feedId);
  if (record === undefined) throw unknownFeed(feedId);
  if (record.config === undefined) {
    throw new CommandError(
      `feed "${feedId}" has a cursor item but no registry row yet (a feed from before the fleet): ` +
        `feeds add ${feedId} --token-parameter NAME makes its row, keeping its cursor`,
    );
  }
  return record as FeedRecord & { config: FeedConfig };
}

const unknownFeed = (feedId: string) =>
  new CommandError(`unknown feed "${feedId}" (feeds list shows every feed; feeds add makes one)`);

function exists(feedId: string, found: FeedRecord | undefined): CommandError {
  return new CommandError(
    `feed "${feedId}" already exists (state ${found?.state ?? 'unknown'}): change it with feeds set ${feedId}` +
      `${found?.state === 'removed' ? `, or bring it back with feeds resume ${feedId}` : ''}`,
  );
}

/**
 * The token parameter a feed is to read must exist as a SecureString (the poller reads it with decryption): a
 * name mistyped would otherwise fail every run of the feed from its first. Its metadata only, never its value.
 * Returns the plan's note when it could not be checked (an operator without ssm:DescribeParameters).
 */
async function checkTokenParameter(context: FeedsContext, name: string): Promise<string[]> {
  let found: { Type?: string } | undefined;
  try {
    const { Parameters } = await context.aws.ssm.send(
      new DescribeParametersCommand({
        ParameterFilters: [{ Key: 'Name', Option: 'Equals', Values: [name] }],
      }),
    );
    found = Parameters?.[0];
  } catch (error) {
    return [`  (the token parameter ${name} could not be checked: ${messageOf(error)})`];
  }
  if (found === undefined) {
    throw new CommandError(
      `--token-parameter: no SSM parameter named "${name}" in this account and region; store the token first ` +
        `(aws ssm put-parameter --name ${name} --type SecureString --value …)`,
    );
  }
  if (found.Type !== 'SecureString') {
    throw new CommandError(
      `--token-parameter: "${name}" is a ${found.Type} parameter; the token must be a SecureString ` +
        `(aws ssm put-parameter --name ${name} --type SecureString --overwrite --value …)`,
    );
  }
  return [];
}

function dryRunOutput(json: Record<string, unknown>, plan: string[]): FeedsOutput {
  return {
    json: { ...json, applied: false, dryRun: true },
    text: `${plan.join('\n')}\n\nDry run: nothing written.`,
  };
}

const shown = (value: unknown) => (Array.isArray(value) ? value.join(',') : String(value));

/** The configuration, one key a line, in the flags' order (the row's key names). */
function configLines(config: FeedConfig): string[] {
  return (Object.keys(FEED_CONFIG_FLAGS) as FeedConfigKey[])
    .filter((key) => config[key] !== undefined)
    .map((key) => `  ${key.padEnd(18)}  ${shown(config[key])}`);
}

/** `key: old → new` for every key whose value differs ("(unset)" for a key without one). */
function configDifferences(before: FeedConfig, after: FeedConfig): string[] {
  return (Object.keys(FEED_CONFIG_FLAGS) as FeedConfigKey[]).flatMap((key) => {
    const [was, is] = [before[key], after[key]];
    if (JSON.stringify(was) === JSON.stringify(is)) return [];
    return [
      `${key}: ${was === undefined ? '(unset)' : shown(was)} → ${is === undefined ? '(unset)' : shown(is)}`,
    ];
  });
}

/**
 * The event that asks the dispatcher for a dispatch now (a scan that starts after `requestedAt` sees the row):
 * the dispatcher's own type (dispatchRequestOf), as a poller sends it.
 */
export function dispatchRequestEvent(requestedAt: number, requestedBy: string): DispatchRequest {
  return { dispatchRequest: { requestedAt, by: requestedBy } };
}

export interface DispatchAsked {
  /** requested: the dispatcher was invoked; next-tick: it polls the feed at its next minute; per-feed-stack: never. */
  kind: 'requested' | 'next-tick' | 'per-feed-stack' | 'failed';
  text: string;
}

/**
 * After a feed becomes due (added, resumed): one asynchronous invocation of the dispatcher (InvocationType
 * Event: queued by Lambda, nothing waited for), so its first poll follows within seconds instead of at the
 * next minute's tick. A failure to ask changes nothing but the wait.
 */
export async function askForDispatch(context: FeedsContext, requestedBy: string): Promise<DispatchAsked> {
  const { target } = context;
  if (target.dispatcher === undefined) {
    return Object.keys(target.pollers).length > 0
      ? {
          kind: 'per-feed-stack',
          text:
            `Stack ${target.stackName} polls the feeds it was deployed with (a poller per feed: ` +
            `${Object.keys(target.pollers).join(', ')}): this row is polled once the stack runs the fleet's ` +
            'dispatcher (deploy this version).',
        }
      : {
          kind: 'next-tick',
          text: 'The dispatcher polls it at its next tick (within a minute; the stack names no dispatcher to ask: no output DispatcherFunctionName).',
        };
  }
  try {
    await context.aws.lambda.send(
      new InvokeCommand({
        FunctionName: target.dispatcher,
        InvocationType: 'Event',
        Payload: Buffer.from(JSON.stringify(dispatchRequestEvent(context.now(), requestedBy))),
      }),
    );
    return {
      kind: 'requested',
      text: `Asked the dispatcher (${target.dispatcher}) for a dispatch: its poll follows within seconds.`,
    };
  } catch (error) {
    return {
      kind: 'failed',
      text: `Could not ask the dispatcher for a dispatch (${messageOf(error)}): it polls the feed at its next tick (within a minute).`,
    };
  }
}
