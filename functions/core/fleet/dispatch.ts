// The dispatcher's decision (infra/FLEET.md, "Dispatch"), pure: from the scanned registry rows, the
// clock and the batches still on their way, which feeds to poll now, in which batches of the one poller
// function, within the ingester's own concurrency budget; and the fleet's gauges, which replace the per-feed
// metrics and alarms. Steps: 1. what runs (live leases, batches not yet started) 2. what is due, most starved
// first 3. batches into the free slots 4. gauges.
import * as z from 'zod/mini';
import { DEFAULTS } from '../config/settings.js';
import type { FeedState } from './feed-config.js';

/** What the dispatcher reads of a feed's item (the registry adapter's scan projection); times in epoch ms. */
export interface FeedRow {
  feedId: string;
  /** False: a cursor item without a configuration (before the initial set is seeded): never dispatched. */
  registered: boolean;
  state: FeedState;
  stateReason?: string;
  scheduleMinutes: number;
  tokenParameterName?: string;
  leaseOwner?: string;
  leaseExpiresAt?: number;
  /** The batch and dispatch time the last run was started by (the poller copies them from its event). */
  lastDispatchId?: string;
  lastDispatchedAt?: number;
  /** When the last run ended, and how. */
  lastRunAt?: number;
  lastRunOutcome?: string;
  lastCaughtUpAt?: number;
  createdAt?: number;
  authRetryNotBefore?: number;
  authFailedTokenVersion?: number;
}

/** A batch sent to the poller whose invocation has not said it ended yet. */
export interface InFlightBatch {
  batchId: string;
  dispatchedAt: number;
  feedIds: string[];
}

export interface DispatchSettings {
  /** Poller invocations running at once, at most (the ingester's own budget of the account's concurrency). */
  maxConcurrentPollers: number;
  /** Feeds per poller invocation while the slots suffice (an idle poll is one small GET). */
  batchSize: number;
  /** Feeds per invocation at most when the slots do not suffice for due feeds in batches of batchSize. */
  maxBatchSize: number;
  /** Feeds behind (never polled, or a run that ended with more to fetch) per invocation: each pages flat out. */
  behindBatchSize: number;
  /**
   * Round robin among feeds behind: each gets a slice of paging at least once per round, its slice the round's
   * share of the budget's chains (maxConcurrentPollers × behindBatchSize), from minSliceMs to maxSliceMs.
   */
  roundMs: number;
  minSliceMs: number;
  maxSliceMs: number;
  /** The dispatcher's period: a feed due within half of it is polled now (ticks jitter by seconds). */
  tickMs: number;
  /** How long a batch may take to show a run on each feed before they may be dispatched again (an event lost). */
  inFlightGraceMs: number;
  /** A feed not caught up for longer than this is stale (the gauge the lag alarm watches). */
  staleAfterMs: number;
}

/**
 * The defaults, chosen from the fleet simulation and the cost model (infra/FLEET.md, "Defaults"): idle
 * batches share an invocation among 25 feeds (up to 250 when 10 pollers must hold 10,000 feeds in a tick),
 * feeds behind page 4 to an invocation (a 512 MB poller's memory and CPU), and the budget is 1 % of the default
 * account limit.
 */
export const DISPATCH_DEFAULTS: DispatchSettings = {
  maxConcurrentPollers: DEFAULTS.maxConcurrentPollers,
  batchSize: 25,
  maxBatchSize: 250,
  behindBatchSize: 4,
  roundMs: 30_000,
  minSliceMs: 5_000,
  maxSliceMs: 90_000,
  tickMs: 60_000,
  inFlightGraceMs: 120_000,
  staleAfterMs: DEFAULTS.alarmLagMinutes * 60_000,
};

/** Outcomes after which the feed has more to fetch at once (the run ended for time, its slice or page cap). */
const MORE_TO_FETCH = new Set(['out-of-time', 'page-limit', 'slice-end']);
/** Whether a run that ended so left its feed behind: the poller then asks for a dispatch at once. */
export const leftBehind = (outcome: string) => MORE_TO_FETCH.has(outcome);
/** Outcomes of a run that stopped on a failure; such a feed waits for its interval, in batches of its own. */
const FAILED = new Set([
  'retry-later',
  'cursor-expired-again',
  'auth-failed',
  'auth-backoff',
  'lease-lost',
  'missing-next-page-id',
  'stuck-cursor',
  'order-over-body-cap',
  'config-invalid',
  'error',
]);

export type BatchKind = 'behind' | 'idle' | 'failing';

export interface Batch {
  batchId: string;
  kind: BatchKind;
  feedIds: string[];
}

export interface FleetGauges {
  feeds: number;
  enabled: number;
  paused: number;
  stopped: number;
  removed: number;
  unregistered: number;
  /** Enabled feeds not caught up for more than staleAfterMs. */
  stale: number;
  /** Enabled feeds whose token the partner refused (401) and that wait for their backoff. */
  authFailing: number;
  /** Enabled feeds whose last run ended on a failure. */
  failing: number;
  /** Enabled feeds behind: never polled, or their last run ended with more to fetch. */
  behind: number;
  /** Feeds with a live lease, and the poller invocations running (live leases' invocations, batches on their way). */
  running: number;
  runningPollers: number;
  dispatched: number;
  dispatchedPollers: number;
  /** Due feeds left for a later dispatch: the budget was spent. */
  dueWaiting: number;
  /** Seconds since the stalest enabled feed was caught up (0 when none is registered). */
  maxLagSeconds: number;
}

export interface DispatchPlan {
  batches: Batch[];
  /** How long each feed of these batches pages before it yields its slot (and asks for a dispatch). */
  sliceMs: number;
  /** Due feeds not dispatched, most starved first. */
  waiting: string[];
  /** What the dispatch lock item keeps for the next dispatch: these batches and those still on their way. */
  inFlight: InFlightBatch[];
  gauges: FleetGauges;
}

/** The poller's lease owner for one feed of one invocation: `<run id>#<feed id>` (feed ids never hold `#`). */
export const leaseOwnerOf = (runId: string, feedId: string) => `${runId}#${feedId}`;
/** The poller invocation a lease owner belongs to (an owner without `#` is one invocation of its own). */
export const invocationOf = (owner: string) => owner.split('#')[0] as string;

export function planDispatch(input: {
  rows: readonly FeedRow[];
  now: number;
  dispatchId: string;
  inFlight: readonly InFlightBatch[];
  /** Batches whose invocations have said they ended (the dispatch lock item's `ended`). */
  ended?: readonly string[];
  /** Current version of each token parameter read (a rotated token ends its feeds' 401 backoff at once). */
  tokenVersions?: ReadonlyMap<string, number>;
  settings: DispatchSettings;
}): DispatchPlan {
  const { rows, now, settings } = input;

  // 1. What runs: batches sent that have not said they ended (their invocation's last write, after all it
  // does but ask for the next dispatch), nor given up on, and invocations holding a live lease. A feed's
  // record is no end: its invocation still works after it (the other feeds, the budget, the metrics).
  const live = new Set(rows.filter((row) => row.leaseOwner !== undefined && (row.leaseExpiresAt ?? 0) > now));
  const pending = input.inFlight.filter(
    (batch) => now < batch.dispatchedAt + settings.inFlightGraceMs && !input.ended?.includes(batch.batchId),
  );
  const onTheirWay = new Set(pending.flatMap((batch) => batch.feedIds));
  // A lease taken by a pending batch's run (its item names the batch) is that batch's invocation, counted once.
  const pendingIds = new Set(pending.map((batch) => batch.batchId));
  const invocations = new Set(
    [...live]
      .filter((row) => row.lastDispatchId === undefined || !pendingIds.has(row.lastDispatchId))
      .map((row) => invocationOf(row.leaseOwner as string)),
  );
  const runningPollers = invocations.size + pending.length;

  // 2. What is due, the longest wait first.
  const due: Array<{ row: FeedRow; dueAt: number; kind: BatchKind }> = [];
  for (const row of rows) {
    if (!row.registered || row.state !== 'enabled' || onTheirWay.has(row.feedId) || live.has(row)) continue;
    const kind = kindOf(row);
    const dueAt = kind === 'behind' ? (row.lastRunAt ?? row.createdAt ?? 0) : scheduledAt(row);
    if (dueAt > now + settings.tickMs / 2 || inAuthBackoff(row, now, input.tokenVersions)) continue;
    due.push({ row, dueAt, kind });
  }
  due.sort((a, b) => a.dueAt - b.dueAt || (a.row.feedId < b.row.feedId ? -1 : 1));

  // 3. Into the free slots: behind feeds in small batches (each pages flat out), idle ones in large ones (an
  // idle poll is one GET), larger still when the slots would not hold them all at batchSize. A failing feed
  // (an outage, a documented stop) mostly waits on the partner: it rides along in a batch that runs its whole
  // slice anyway, and takes a slot of its own (shared with other failing feeds) only when none has room, so
  // failing feeds never take the slots of healthy ones.
  const slots = Math.max(0, settings.maxConcurrentPollers - runningPollers);
  const light = due.filter(({ kind }) => kind !== 'behind').length;
  // The slots the behind batches leave (at least one) hold the light feeds.
  const lightSlots = Math.max(1, slots - Math.ceil((due.length - light) / settings.behindBatchSize));
  const lightSize = Math.min(
    settings.maxBatchSize,
    Math.max(settings.batchSize, Math.ceil(light / lightSlots)),
  );
  // Behind feeds spread evenly over the batches they need, sizes one apart at most: a remainder batch of 1
  // beside batches of 4 has its invocation's page turns to itself and pages up to 4× as fast as the others.
  const behindBatches = Math.max(
    1,
    Math.min(slots, Math.ceil((due.length - light) / settings.behindBatchSize)),
  );
  const behindSent = Math.min(due.length - light, behindBatches * settings.behindBatchSize);
  const behindSizeOf = (index: number) =>
    Math.floor(behindSent / behindBatches) + (index < behindSent % behindBatches ? 1 : 0);
  const batches: Batch[] = [];
  const riders = new Map<Batch, number>();
  const waiting: string[] = [];
  const newBatch = (kind: BatchKind) => {
    if (batches.length >= slots) return undefined;
    const batch = { batchId: `${input.dispatchId}-${batches.length + 1}`, kind, feedIds: [] };
    batches.push(batch);
    return batch;
  };
  const lastOf = (kind: BatchKind) => batches.findLast((batch) => batch.kind === kind);
  for (const { row, kind } of due) {
    let batch: Batch | undefined;
    if (kind === 'failing') {
      batch =
        batches.find((b) => b.kind === 'behind' && (riders.get(b) ?? 0) < lightSize) ??
        [lastOf('failing')].find((b) => b !== undefined && b.feedIds.length < lightSize) ??
        newBatch('failing') ??
        batches.find((b) => b.kind === 'idle' && (riders.get(b) ?? 0) < lightSize);
      if (batch !== undefined && batch.kind !== 'failing') riders.set(batch, (riders.get(batch) ?? 0) + 1);
    } else {
      const last = lastOf(kind);
      const size =
        kind === 'behind' ? behindSizeOf(batches.filter((b) => b.kind === 'behind').length - 1) : lightSize;
      batch =
        last !== undefined && last.feedIds.length - (riders.get(last) ?? 0) < size ? last : newBatch(kind);
    }
    if (batch === undefined) waiting.push(row.feedId);
    else batch.feedIds.push(row.feedId);
  }

  const inFlight = [
    ...pending,
    ...batches.map(({ batchId, feedIds }) => ({ batchId, dispatchedAt: now, feedIds })),
  ];
  const dispatched = batches.reduce((sum, batch) => sum + batch.feedIds.length, 0);
  const behind = rows.filter((row) => row.registered && row.state === 'enabled' && kindOf(row) === 'behind');
  const chains = settings.maxConcurrentPollers * settings.behindBatchSize;
  const sliceMs = Math.min(
    settings.maxSliceMs,
    Math.max(settings.minSliceMs, Math.floor((settings.roundMs * chains) / Math.max(1, behind.length))),
  );
  return {
    batches,
    sliceMs,
    waiting,
    inFlight,
    gauges: gaugesOf(rows, now, settings, {
      running: live.size,
      runningPollers,
      dispatched,
      dispatchedPollers: batches.length,
      dueWaiting: waiting.length,
    }),
  };
}

/**
 * Failing: its last run failed; behind: never polled (its backlog is unknown: in a large batch it would share
 * one invocation's page turns with a hundred others) or its last run ended with more to fetch; idle otherwise.
 */
function kindOf(row: FeedRow): BatchKind {
  const outcome = row.lastRunOutcome;
  if (outcome === undefined) return 'behind';
  if (FAILED.has(outcome)) return 'failing';
  return MORE_TO_FETCH.has(outcome) ? 'behind' : 'idle';
}

/**
 * When the next scheduled poll is due: an interval after the last dispatch that started a run (the
 * dispatcher's own clock, so the period does not drift by the invocation's start-up), or after the last run
 * of an item that predates dispatch times; at once for a feed never polled.
 */
function scheduledAt(row: FeedRow): number {
  const last = row.lastDispatchedAt ?? row.lastRunAt;
  return last === undefined ? (row.createdAt ?? 0) : last + row.scheduleMinutes * 60_000;
}

/** Waiting out a 401 backoff, unless the token parameter has a new version since (a rotated token). */
function inAuthBackoff(row: FeedRow, now: number, versions: ReadonlyMap<string, number> | undefined) {
  if (row.authRetryNotBefore === undefined || now >= row.authRetryNotBefore) return false;
  const current = row.tokenParameterName === undefined ? undefined : versions?.get(row.tokenParameterName);
  return current === undefined || current === row.authFailedTokenVersion;
}

function gaugesOf(
  rows: readonly FeedRow[],
  now: number,
  settings: DispatchSettings,
  run: Pick<FleetGauges, 'running' | 'runningPollers' | 'dispatched' | 'dispatchedPollers' | 'dueWaiting'>,
): FleetGauges {
  const count = (state: FeedState) => rows.filter((row) => row.registered && row.state === state).length;
  const enabled = rows.filter((row) => row.registered && row.state === 'enabled');
  const lagMs = (row: FeedRow) => now - (row.lastCaughtUpAt ?? row.createdAt ?? now);
  return {
    feeds: rows.length,
    enabled: enabled.length,
    paused: count('paused'),
    stopped: count('stopped'),
    removed: count('removed'),
    unregistered: rows.filter((row) => !row.registered).length,
    stale: enabled.filter((row) => lagMs(row) > settings.staleAfterMs).length,
    authFailing: enabled.filter((row) => row.authRetryNotBefore !== undefined && now < row.authRetryNotBefore)
      .length,
    failing: enabled.filter((row) => kindOf(row) === 'failing').length,
    behind: enabled.filter((row) => kindOf(row) === 'behind').length,
    maxLagSeconds: Math.round(Math.max(0, ...enabled.map(lagMs)) / 1000),
    ...run,
  };
}

/**
 * The poller's event from the dispatcher: one batch of feeds, the dispatch that sent it (each run records
 * it on its item), how long each feed may page before it yields its slot, and the dispatcher's own function
 * (its ARN), which the poller asks for the next dispatch (the poller's environment cannot name it: the
 * dispatcher's names the poller, and CloudFormation allows no cycle).
 */
const BatchEventSchema = z.object({
  batch: z.object({
    batchId: z.string(),
    dispatchedAt: z.number(),
    sliceMs: z.number(),
    feedIds: z.array(z.string()).check(z.minLength(1)),
    dispatcher: z.optional(z.string()),
  }),
});
export type BatchEvent = z.infer<typeof BatchEventSchema>;

export function batchEventOf(
  batch: Batch,
  dispatchedAt: number,
  sliceMs: number,
  dispatcher?: string,
): BatchEvent {
  const { batchId, feedIds } = batch;
  return { batch: { batchId, dispatchedAt, sliceMs, feedIds, ...(dispatcher ? { dispatcher } : {}) } };
}

/** The batch in the poller's raw event, or undefined (not a dispatcher's event). */
export function batchOf(event: unknown): BatchEvent['batch'] | undefined {
  const parsed = BatchEventSchema.safeParse(event);
  return parsed.success ? parsed.data.batch : undefined;
}

/**
 * A request for a dispatch (a poller with a feed behind or feeds waiting, `ops feeds add`): `requestedAt`
 * lets the dispatcher drop it when a scan that started later has already seen what it asks about. Any other
 * event (the schedule's) dispatches now.
 */
const DispatchRequestSchema = z.object({
  dispatchRequest: z.object({ requestedAt: z.number(), by: z.optional(z.string()) }),
});
export type DispatchRequest = z.infer<typeof DispatchRequestSchema>;

export function dispatchRequestOf(event: unknown): DispatchRequest['dispatchRequest'] | undefined {
  const parsed = DispatchRequestSchema.safeParse(event);
  return parsed.success ? parsed.data.dispatchRequest : undefined;
}
