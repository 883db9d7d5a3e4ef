// status: one look at a deployed stack. Per feed, what its cursor item holds (cursor, revision, lease,
// last caught up and lag, auth backoff and the token parameter version it holds for, pace); per queue (orders, each subscriber, each dead-letter
// queue) depth and age of the oldest message; the number of quarantined records; the sales ledger's
// totals. Flow: gather (AWS reads) → StatusReport → renderStatus (pure) or JSON.
//
// The last run's outcome is what the poller recorded on the cursor item when it gave its lease up
// (`lastRunOutcome`, `lastRunAt`); a run that crashed or never released leaves the previous one there.

import type { AwsAt } from '../aws.js';
import { quarantinedKeys, queueDepth } from '../local/data.js';
import { readSalesLedger, type SalesTotal } from '../store/sales-ledger.js';
import { type BudgetStatus, readBudgets, renderBudgets } from './budget.js';
import { type CursorItem, liveLease, readCursorItem } from './cursor.js';
import { formatDuration, queueNameOf, renderTable, shortenCursor } from './format.js';
import { type OldestAgeSource, oldestAgeSourceFor } from './queue-age.js';
import type { OpsTarget } from './target.js';

export interface FeedStatus {
  feedId: string;
  poller: string | undefined;
  cursor: CursorItem;
  leaseLive: boolean;
  /** Seconds since lastCaughtUpAt (else since the item was created); undefined without either. */
  lagSeconds: number | undefined;
  /** A 401 backoff in force: no partner call before this time. */
  authBackoffUntil: string | undefined;
}

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
  feeds: FeedStatus[];
  queues: QueueStatus[];
  quarantined: number;
  ledger: SalesTotal[];
  /** The request budget of each token the feeds read (shared by the feeds on that token). */
  budgets: BudgetStatus[];
}

export async function gatherStatus(
  aws: AwsAt,
  target: OpsTarget,
  feeds: readonly string[],
  nowMs: number,
  ageSource: OldestAgeSource = oldestAgeSourceFor(aws),
): Promise<StatusReport> {
  const feedStatuses = await Promise.all(
    feeds.map(async (feedId): Promise<FeedStatus> => {
      const cursor = await readCursorItem(aws, target.cursorTable, feedId);
      return feedStatusOf(cursor, target.pollers[feedId], nowMs);
    }),
  );
  const queueRefs = target.queues.flatMap((queue) => [
    { name: queue.name, role: 'queue' as const, url: queue.url },
    ...(queue.deadLetterUrl
      ? [{ name: queue.name, role: 'dead-letter' as const, url: queue.deadLetterUrl }]
      : []),
  ]);
  const queues = await Promise.all(
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
  const [quarantined, ledger, budgets] = await Promise.all([
    quarantinedKeys(aws, target.quarantineBucket).then((keys) => keys.length),
    readSalesLedger(aws.dynamo, target.ordersTable),
    readBudgets(aws, target.cursorTable, nowMs),
  ]);
  return {
    stackName: target.stackName,
    at: new Date(nowMs).toISOString(),
    feeds: feedStatuses,
    queues,
    quarantined,
    ledger,
    budgets,
  };
}

export function feedStatusOf(cursor: CursorItem, poller: string | undefined, nowMs: number): FeedStatus {
  const since = cursor.lastCaughtUpAt ?? cursor.createdAt;
  const sinceMs = since === undefined ? Number.NaN : Date.parse(since);
  return {
    feedId: cursor.feedId,
    poller,
    cursor,
    leaseLive: liveLease(cursor, nowMs),
    lagSeconds: Number.isNaN(sinceMs) ? undefined : Math.max(0, Math.floor((nowMs - sinceMs) / 1000)),
    authBackoffUntil:
      cursor.authRetryNotBefore !== undefined && cursor.authRetryNotBefore > nowMs
        ? new Date(cursor.authRetryNotBefore).toISOString()
        : undefined,
  };
}

export function renderStatus(report: StatusReport): string {
  const feedRows = report.feeds.map((feed) => {
    const { cursor } = feed;
    const lease =
      cursor.leaseOwner === undefined
        ? 'free'
        : `${feed.leaseLive ? 'held' : 'expired'} by ${cursor.leaseOwner} until ${new Date(cursor.leaseExpiresAt ?? 0).toISOString()}`;
    const version = cursor.authFailedTokenVersion;
    const backoff =
      cursor.authFailures === 0 && feed.authBackoffUntil === undefined
        ? 'none'
        : `${cursor.authFailures} failed run(s)${version === undefined ? '' : ` with token version ${version}`}${
            feed.authBackoffUntil
              ? `, no call before ${feed.authBackoffUntil}${version === undefined ? '' : ' unless the token parameter has a newer version'}`
              : ', may call now'
          }`;
    return [
      feed.feedId,
      cursor.exists ? shortenCursor(cursor.pageId) : '(no item)',
      cursor.revision === undefined ? '-' : String(cursor.revision),
      cursor.lastCaughtUpAt ?? 'never',
      feed.lagSeconds === undefined ? '-' : formatDuration(feed.lagSeconds * 1000),
      lastRunOf(cursor),
      backoff,
      lease,
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
  return [
    `Stack ${report.stackName} at ${report.at}`,
    '',
    renderTable(
      ['FEED', 'CURSOR', 'REVISION', 'LAST CAUGHT UP', 'LAG', 'LAST RUN', 'AUTH BACKOFF', 'LEASE'],
      feedRows,
    ),
    '',
    renderTable(['QUEUE', 'VISIBLE', 'IN FLIGHT', 'DELAYED', 'OLDEST'], queueRows),
    '',
    `Quarantined records: ${report.quarantined}`,
    '',
    ...(report.budgets.length === 0 ? [] : [renderBudgets(report.budgets, Date.parse(report.at)), '']),
    report.ledger.length === 0
      ? 'Sales ledger: no sales'
      : renderTable(['VENDOR', 'CURRENCY', 'SALES', 'AMOUNT (minor units)'], ledgerRows),
    '',
    ...(report.feeds.length === 0 ? ['No feed found (no poller output and no cursor item).'] : []),
  ]
    .join('\n')
    .replace(/\n+$/, '');
}

/** The last run's outcome and time as the poller recorded them (items written before that: n/a). */
function lastRunOf(cursor: CursorItem): string {
  if (cursor.lastRunOutcome === undefined) return cursor.authFailures > 0 ? 'auth-failed' : 'n/a';
  return `${cursor.lastRunOutcome} at ${cursor.lastRunAt ?? '?'}`;
}
