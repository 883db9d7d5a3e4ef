// status: one look at a deployed stack. Its feeds: without --feed, every feed counted by state and the
// stalest few in a table (thousands of feeds stay one screen: `feeds list` has them all); with --feed, that
// feed in detail (configuration, state and stop reason, lag, last run, cursor, lease, auth backoff) and its
// token's budget. Then per queue (orders, each subscriber, each dead-letter queue) depth and age of the oldest
// message; the number of quarantined records; the sales ledger's totals. Flow: gather (AWS reads) →
// StatusReport → renderStatus (pure) or JSON. A feed is its item in the cursor table: the registry's row
// (configuration, state) beside what its runs keep (cursor, lease, last run: cursor.ts).
//
// The last run's outcome is what the poller recorded on the cursor item when it gave its lease up
// (`lastRunOutcome`, `lastRunAt`); a run that crashed or never released leaves the previous one there.

import type { FleetGauges } from '../../functions/core/fleet/dispatch.js';
import type { FeedConfig, FeedState } from '../../functions/core/fleet/feed-config.js';
import type { AwsAt } from '../aws.js';
import { CommandError } from '../cli-args.js';
import { quarantinedKeys, queueDepth } from '../local/data.js';
import { readSalesLedger, type SalesTotal } from '../store/sales-ledger.js';
import { type BudgetStatus, readBudgets, renderBudgets } from './budget.js';
import { type CursorItem, cursorItemOf, liveLease } from './cursor.js';
import { type FeedRecord, FeedRegistryAdmin } from './feed-registry-admin.js';
import { formatDuration, queueNameOf, renderTable, shortenCursor } from './format.js';
import { type OldestAgeSource, oldestAgeSourceFor } from './queue-age.js';
import type { OpsTarget } from './target.js';

/** How many of the stalest feeds `status` shows without --feed. */
export const STATUS_STALEST = 5;

export interface FeedStatus {
  feedId: string;
  /** Its own poller function, on a stack of a poller per feed; undefined on a fleet's stack. */
  poller: string | undefined;
  /** False: no registry row (a cursor item from before the fleet, or a per-feed poller that never ran). */
  registered: boolean;
  state: FeedState;
  /** Why it is paused, stopped or removed, as the operator or the poller gave it. */
  stateReason: string | undefined;
  stateChangedAt: string | undefined;
  config: FeedConfig | undefined;
  configRevision: number;
  cursor: CursorItem;
  leaseLive: boolean;
  /** Seconds since lastCaughtUpAt (else since the item was created); undefined without either. */
  lagSeconds: number | undefined;
  /** A 401 backoff in force: no partner call before this time. */
  authBackoffUntil: string | undefined;
}

/** Every feed by state, as the dispatcher's gauges count them; `unregistered`: items without a registry row. */
export type FleetCounts = Pick<
  FleetGauges,
  'feeds' | 'enabled' | 'paused' | 'stopped' | 'removed' | 'unregistered'
>;

export interface QueueStatus {
  name: string;
  role: 'queue' | 'dead-letter';
  url: string;
  visible: number;
  inFlight: number;
  delayed: number;
  /** Seconds, from CloudWatch's ApproximateAgeOfOldestMessage; undefined with `ageNote` saying why. */
  oldestAgeSeconds: number | undefined;
  ageNote: string | undefined;
}

export interface StatusReport {
  stackName: string;
  at: string;
  /** Every feed counted by state; absent with --feed. */
  fleet?: FleetCounts;
  /** With --feed that feed; else the stalest STATUS_STALEST of the feeds polled, most behind first. */
  feeds: FeedStatus[];
  queues: QueueStatus[];
  quarantined: number;
  ledger: SalesTotal[];
  /** The request budget of each token the feeds read (with --feed: that feed's token's). */
  budgets: BudgetStatus[];
}

export async function gatherStatus(
  aws: AwsAt,
  target: OpsTarget,
  feed: string | undefined,
  nowMs: number,
  ageSource: OldestAgeSource = oldestAgeSourceFor(aws),
): Promise<StatusReport> {
  const feedsPart = async () => {
    if (feed === undefined) {
      const all = await readFeedStatuses(aws, target, nowMs);
      return { fleet: countByState(all), feeds: stalestOf(all, STATUS_STALEST) };
    }
    const one = await readFeedStatus(aws, target, feed, nowMs);
    if (one === undefined) throw new CommandError(`unknown feed "${feed}" (feeds list shows every feed)`);
    return { feeds: [one] };
  };
  const queueRefs = target.queues.flatMap((queue) => [
    { name: queue.name, role: 'queue' as const, url: queue.url },
    ...(queue.deadLetterUrl
      ? [{ name: queue.name, role: 'dead-letter' as const, url: queue.deadLetterUrl }]
      : []),
  ]);
  const queues = Promise.all(
    queueRefs.map(async (ref): Promise<QueueStatus> => {
      const depth = await queueDepth(aws, ref.url);
      const age = await ageSource.oldestAgeSeconds(queueNameOf(ref.url), nowMs);
      return {
        ...ref,
        visible: depth.visible,
        inFlight: depth.inFlight,
        delayed: depth.delayed,
        oldestAgeSeconds: age.seconds,
        ageNote: age.note,
      };
    }),
  );
  const [feeds, queueStatuses, quarantined, ledger, budgets] = await Promise.all([
    feedsPart(),
    queues,
    quarantinedKeys(aws, target.quarantineBucket).then((keys) => keys.length),
    readSalesLedger(aws.dynamo, target.ordersTable),
    readBudgets(aws, target.cursorTable, nowMs),
  ]);
  // One feed: its token's budget (a feed without a row names no token: every budget).
  const token = feed === undefined ? undefined : feeds.feeds[0]?.config?.tokenParameterName;
  return {
    stackName: target.stackName,
    at: new Date(nowMs).toISOString(),
    ...feeds,
    queues: queueStatuses,
    quarantined,
    ledger,
    budgets: token === undefined ? budgets : budgets.filter((budget) => budget.tokenParameter === token),
  };
}

/**
 * Every feed: each item of the cursor table whose key is a feed id (one scan), and on a stack of a poller
 * per feed, those of its pollers that have no item yet.
 */
export async function readFeedStatuses(
  aws: Pick<AwsAt, 'dynamo'>,
  target: OpsTarget,
  nowMs: number,
): Promise<FeedStatus[]> {
  const records = await new FeedRegistryAdmin(aws.dynamo, target.cursorTable).list();
  const statuses = records.map((record) => statusOfRecord(record, target, nowMs));
  const found = new Set(records.map((record) => record.feedId));
  for (const [feedId, poller] of Object.entries(target.pollers)) {
    if (!found.has(feedId)) statuses.push(feedStatusOf(cursorItemOf(feedId, undefined), poller, nowMs));
  }
  return statuses.sort((a, b) => (a.feedId < b.feedId ? -1 : a.feedId > b.feedId ? 1 : 0));
}

/** One feed, or undefined when it has no item and no poller of its own. */
export async function readFeedStatus(
  aws: Pick<AwsAt, 'dynamo'>,
  target: OpsTarget,
  feedId: string,
  nowMs: number,
): Promise<FeedStatus | undefined> {
  const record = await new FeedRegistryAdmin(aws.dynamo, target.cursorTable).get(feedId);
  if (record !== undefined) return statusOfRecord(record, target, nowMs);
  const poller = target.pollers[feedId];
  return poller === undefined ? undefined : feedStatusOf(cursorItemOf(feedId, undefined), poller, nowMs);
}

function statusOfRecord(record: FeedRecord, target: OpsTarget, nowMs: number): FeedStatus {
  const cursor = cursorItemOf(record.feedId, record.item);
  return feedStatusOf(cursor, target.pollers[record.feedId], nowMs, record);
}

export function feedStatusOf(
  cursor: CursorItem,
  poller: string | undefined,
  nowMs: number,
  record?: Pick<FeedRecord, 'config' | 'configRevision' | 'state' | 'item'>,
): FeedStatus {
  const since = cursor.lastCaughtUpAt ?? cursor.createdAt;
  const sinceMs = since === undefined ? Number.NaN : Date.parse(since);
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return {
    feedId: cursor.feedId,
    poller,
    registered: record?.config !== undefined,
    state: record?.state ?? 'enabled',
    stateReason: text(record?.item.stateReason),
    stateChangedAt: text(record?.item.stateChangedAt),
    config: record?.config,
    configRevision: record?.configRevision ?? 0,
    cursor,
    leaseLive: liveLease(cursor, nowMs),
    lagSeconds: Number.isNaN(sinceMs) ? undefined : Math.max(0, Math.floor((nowMs - sinceMs) / 1000)),
    authBackoffUntil:
      cursor.authRetryNotBefore !== undefined && cursor.authRetryNotBefore > nowMs
        ? new Date(cursor.authRetryNotBefore).toISOString()
        : undefined,
  };
}

export function countByState(feeds: readonly FeedStatus[]): FleetCounts {
  const count = (state: FeedState) => feeds.filter((feed) => feed.registered && feed.state === state).length;
  return {
    feeds: feeds.length,
    enabled: count('enabled'),
    paused: count('paused'),
    stopped: count('stopped'),
    removed: count('removed'),
    unregistered: feeds.filter((feed) => !feed.registered).length,
  };
}

/**
 * The `n` feeds furthest behind, most behind first: of those that should be polled (enabled, or stopped by a
 * failure), not those an operator paused or removed. A feed never caught up and never created (a per-feed
 * poller that never ran) counts as furthest behind.
 */
export function stalestOf(feeds: readonly FeedStatus[], n: number): FeedStatus[] {
  const lag = (feed: FeedStatus) => feed.lagSeconds ?? Number.POSITIVE_INFINITY;
  return feeds
    .filter((feed) => feed.state === 'enabled' || feed.state === 'stopped')
    .sort((a, b) => lag(b) - lag(a) || (a.feedId < b.feedId ? -1 : 1))
    .slice(0, n);
}

export function renderStatus(report: StatusReport): string {
  const nowMs = Date.parse(report.at);
  const feedRows = report.feeds.map((feed) => {
    const { cursor } = feed;
    return [
      feed.feedId,
      stateOf(feed),
      feed.lagSeconds === undefined ? '-' : formatDuration(feed.lagSeconds * 1000),
      lastRunOf(cursor),
      cursor.exists ? shortenCursor(cursor.pageId) : '(no item)',
      cursor.revision === undefined ? '-' : String(cursor.revision),
      cursor.lastCaughtUpAt ?? 'never',
      backoffOf(feed),
      leaseOf(feed),
    ];
  });
  const queueRows = report.queues.map((queue) => [
    queue.role === 'queue' ? queue.name : `${queue.name} (DLQ)`,
    String(queue.visible),
    String(queue.inFlight),
    String(queue.delayed),
    queue.oldestAgeSeconds === undefined
      ? `n/a (${queue.ageNote ?? 'no data'})`
      : formatDuration(queue.oldestAgeSeconds * 1000),
  ]);
  const ledgerRows = report.ledger.map((total) => [
    total.vendorId,
    total.currency,
    String(total.count),
    String(total.amount),
  ]);
  const { fleet } = report;
  const feedsPart =
    fleet === undefined
      ? [...report.feeds.map((feed) => renderFeedDetail(feed)), '']
      : fleet.feeds === 0
        ? ['No feed found (no registry row, no cursor item, no poller output).', '']
        : [
            `Feeds: ${fleet.feeds} (enabled ${fleet.enabled}, paused ${fleet.paused}, stopped ${fleet.stopped}, ` +
              `removed ${fleet.removed}${fleet.unregistered > 0 ? `; ${fleet.unregistered} without a registry row` : ''})`,
            ...(report.feeds.length === 0
              ? []
              : [
                  `The ${report.feeds.length === 1 ? 'stalest' : `${report.feeds.length} stalest`} of those polled` +
                    (fleet.feeds > report.feeds.length
                      ? ' (all: npm run ops -- feeds list; one: status --feed ID):'
                      : ':'),
                  renderTable(
                    [
                      'FEED',
                      'STATE',
                      'LAG',
                      'LAST RUN',
                      'CURSOR',
                      'REVISION',
                      'LAST CAUGHT UP',
                      'AUTH BACKOFF',
                      'LEASE',
                    ],
                    feedRows,
                  ),
                ]),
            '',
          ];
  return [
    `Stack ${report.stackName} at ${report.at}`,
    '',
    ...feedsPart,
    renderTable(['QUEUE', 'VISIBLE', 'IN FLIGHT', 'DELAYED', 'OLDEST'], queueRows),
    '',
    `Quarantined records: ${report.quarantined}`,
    '',
    ...(report.budgets.length === 0 ? [] : [renderBudgets(report.budgets, nowMs), '']),
    report.ledger.length === 0
      ? 'Sales ledger: no sales'
      : renderTable(['VENDOR', 'CURRENCY', 'SALES', 'AMOUNT (minor units)'], ledgerRows),
  ]
    .join('\n')
    .replace(/\n+$/, '');
}

/**
 * One feed, one line per aspect (`feeds show`, `status --feed`): state and reason, configuration (the token
 * by its parameter's name: its value is never read here), lag, last run, cursor, lease, auth backoff.
 */
export function renderFeedDetail(feed: FeedStatus): string {
  const { cursor, config } = feed;
  const lines: Array<[string, string | undefined]> = [
    [
      'state',
      `${stateOf(feed)}${feed.stateReason ? `: ${feed.stateReason}` : ''}${
        feed.stateChangedAt ? ` (since ${feed.stateChangedAt})` : ''
      }`,
    ],
  ];
  if (config === undefined) {
    lines.push([
      'configuration',
      feed.poller === undefined
        ? 'none: a cursor item without a registry row (the dispatcher adds the rows of the initial set)'
        : `its poller's (function ${feed.poller}): a stack of a poller per feed`,
    ]);
  } else {
    lines.push(
      ['token parameter', config.tokenParameterName],
      ['vendor ids', config.vendorIds === undefined ? 'every vendor' : config.vendorIds.join(', ')],
      ['order ids', config.orderIds?.join(', ')],
      ['purpose', config.purpose],
      ['schedule', `every ${config.scheduleMinutes} minute(s)`],
      ['page size', String(config.pageSize)],
      ['from timestamp', config.fromTimestamp],
      ['min age', config.minAgeMinutes === undefined ? undefined : `${config.minAgeMinutes} minute(s)`],
      ['partner base url', config.partnerBaseUrl ?? "the deployment's"],
      ['config revision', String(feed.configRevision)],
    );
  }
  lines.push(
    [
      'lag',
      `${feed.lagSeconds === undefined ? '-' : formatDuration(feed.lagSeconds * 1000)} (last caught up ${
        cursor.lastCaughtUpAt ?? 'never'
      })`,
    ],
    ['last run', lastRunOf(cursor)],
    [
      'cursor',
      cursor.exists
        ? `${shortenCursor(cursor.pageId)} (revision ${cursor.revision ?? '-'}${
            cursor.highWaterMark === undefined ? '' : `, high-water mark ${cursor.highWaterMark}`
          })`
        : '(no item: never polled)',
    ],
    ['lease', leaseOf(feed)],
    ['auth backoff', backoffOf(feed)],
  );
  const shown = lines.filter((line): line is [string, string] => line[1] !== undefined);
  const width = Math.max(...shown.map(([name]) => name.length));
  return [`Feed ${feed.feedId}`, ...shown.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`)].join(
    '\n',
  );
}

/** The state; a cursor item without a registry row says so. */
export function stateOf(feed: Pick<FeedStatus, 'state' | 'registered'>): string {
  return feed.registered ? feed.state : 'no row';
}

function leaseOf(feed: FeedStatus): string {
  const { cursor } = feed;
  return cursor.leaseOwner === undefined
    ? 'free'
    : `${feed.leaseLive ? 'held' : 'expired'} by ${cursor.leaseOwner} until ${new Date(cursor.leaseExpiresAt ?? 0).toISOString()}`;
}

function backoffOf(feed: FeedStatus): string {
  const { cursor } = feed;
  const version = cursor.authFailedTokenVersion;
  if (cursor.authFailures === 0 && feed.authBackoffUntil === undefined) return 'none';
  return `${cursor.authFailures} failed run(s)${version === undefined ? '' : ` with token version ${version}`}${
    feed.authBackoffUntil
      ? `, no call before ${feed.authBackoffUntil}${version === undefined ? '' : ' unless the token parameter has a newer version'}`
      : ', may call now'
  }`;
}

/** The last run's outcome and time as the poller recorded them (items written before that: n/a). */
export function lastRunOf(cursor: CursorItem): string {
  if (cursor.lastRunOutcome === undefined) return cursor.authFailures > 0 ? 'auth-failed' : 'n/a';
  return `${cursor.lastRunOutcome} at ${cursor.lastRunAt ?? '?'}`;
}
