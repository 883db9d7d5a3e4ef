// One poll of one feed of the partner's order-update stream: functions/README.md, "Poller". The item is read
// before (one read for the poller's batch); an idle poll is one write, the lease is taken only for data.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@aws-lambda-powertools/logger';
import { pollCorrelationId, SQS_MAX_MESSAGE_BYTES } from '../contract/order-version-message.js';
import { leaseOwnerOf } from '../fleet/dispatch.js';
import type { FeedConfig } from '../fleet/feed-config.js';
import type { FunctionMetrics } from '../observability/metric-names.js';
import { span } from '../observability/tracer.js';
import { PartnerError, partnerErrorKind } from '../partner/errors.js';
import type { OrderUpdatesQuery, PartnerApi, RawPage } from '../partner/types.js';
import { CursorCycles } from './cursor-cycles.js';
import { LeaseLostError } from './errors.js';
import { handOffPage } from './hand-off.js';
import { grownPageSize, shrunkPageSize, startingPageSize } from './page-size.js';
import type {
  AuthFailure,
  CursorStore,
  DispatchMark,
  FeedItem,
  FeedStates,
  LastRun,
  Lease,
  OrderVersionPublisher,
  PageTurns,
  PollDeployment,
  PollSettings,
  Quarantine,
  RunRecord,
  TokenParameter,
} from './ports.js';

export interface PollInvocation {
  /** The Lambda request id: the run id of every message's `poll:<runId>:<page>`, and of the lease owner. */
  runId: string;
  /** The feed's item as read before the run (its cursor, lease and revision). */
  item: FeedItem;
  /** Epoch ms after which no new page is requested (the handler leaves a margin to publish and commit). */
  deadline: number;
  /**
   * Epoch ms until which a request already on its way may be answered (default `deadline`): half the
   * handler's margin, so the page prefetched just before the deadline is kept, not asked again next run.
   */
  requestDeadline?: number;
  /** The invocation's own deadline plus a grace, fixed for the run: only a crashed run's lease lapses. */
  leaseExpiresAt: number;
  /**
   * Epoch ms when the feed's slice of the invocation ends (the dispatcher's round robin): a run still paging
   * then ends `slice-end`, and the next dispatch gives it another slice. Undefined: the invocation's deadline.
   */
  sliceEndsAt?: number;
  /** The dispatch that started the run, recorded on the item. */
  dispatch?: DispatchMark;
}

/** How a run ended (functions/README.md); every kind is observable (the feed's row, ops status, logs). */
export type PollOutcomeKind =
  | 'caught-up'
  | 'page-limit'
  | 'out-of-time'
  | 'slice-end'
  | 'retry-later'
  | 'cursor-expired-again'
  | 'lease-held'
  | 'auth-backoff'
  | 'auth-failed'
  | 'lease-lost'
  | 'missing-next-page-id'
  | 'stuck-cursor'
  | 'order-over-body-cap'
  | 'disabled'
  | 'unregistered'
  | 'config-invalid'
  | 'error';

/** The documented stops (tools/RUNBOOK.md): the reason each puts on the feed's row for the operator. */
const STOP_REASONS: Partial<Record<PollOutcomeKind, string>> = {
  'stuck-cursor':
    'the partner answered hasMore with a cursor it was already sent; every run stops there until the partner moves on (tools/RUNBOOK.md)',
  'missing-next-page-id':
    'the partner answered hasMore without a nextPageId; every run reads that page again until it sends one (tools/RUNBOOK.md)',
  'order-over-body-cap':
    'one order is over the page body cap (maxPageBodyBytes) at page size 1; raise the cap, then resume the feed (tools/RUNBOOK.md)',
  'auth-failed':
    'the partner refused the token (401); rotate it in SSM (a new version is tried at once) (tools/RUNBOOK.md)',
};

/** What a run counts (partnerRetries: every retry but a 429's; paceDelayMs: the pace at the run's end). */
export const noCounts = () => ({
  pages: 0,
  versionsPublished: 0,
  quarantined: 0,
  cursorRecoveries: 0,
  partnerRetries: 0,
  rateLimitWaits: 0,
  paceDelayMs: 0,
});

export interface PollOutcome extends ReturnType<typeof noCounts> {
  kind: PollOutcomeKind;
  /** Whether the run is reported as a failed invocation (follows from the kind). */
  failed: boolean;
  /** Seconds since the feed was last caught up, at the end of the run (lag). */
  secondsSinceCaughtUp: number | undefined;
}

export interface PollDeps {
  cursorStore: CursorStore;
  partner: PartnerApi;
  publisher: OrderVersionPublisher;
  quarantine: Quarantine;
  metrics: Pick<FunctionMetrics, 'count'>;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  now: () => number;
  /** The token's SSM parameter: re-read after a 401, and its version keys the backoff. */
  tokens?: TokenParameter;
  /** Waits between page requests when the feed paces itself (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** The SQS message size limit (default SQS_MAX_MESSAGE_BYTES; tests lower it). */
  maxMessageBytes?: number;
  /** One parsed page at a time in the invocation (none: no limit). */
  pageTurns?: PageTurns;
  /** Moves the feed to `stopped` on a stop only an operator can resume (order-over-body-cap). */
  feedStates?: FeedStates;
}

/** A page request's result; a failure is a value, so a prefetch nobody awaits never rejects unhandled. */
type Fetched =
  | { ok: true; page: RawPage; fetchedAt: number; rateLimited: boolean; done: () => void }
  | { ok: false; error: unknown };

const noTurn = () => undefined;

/** What the helpers of one run share; `lease` is the one still held (none when never taken or lost). */
interface RunState {
  deps: PollDeps;
  settings: PollSettings;
  invocation: PollInvocation;
  owner: string;
  /** The feed's deadlines: the invocation's, or its slice's when that ends first. */
  deadline: number;
  requestDeadline: number;
  /**
   * The invocation's own deadlines, which the run's first page request may use past its slice's end: every run
   * given a slice makes progress, however short the slice and however slow the partner is to start a page.
   */
  firstPage: { deadline: number; requestDeadline: number };
  /** How a run that runs out of time ends: `slice-end` when its slice ended before the invocation. */
  timeUp: 'out-of-time' | 'slice-end';
  counters: ReturnType<typeof noCounts>;
  lease?: Lease | undefined;
  pageSize: number;
  /** What a run without a lease records (an idle poll's catch-up, a 401's backoff). */
  record: Pick<RunRecord, 'caughtUp' | 'authFailure'>;
}

/** Page turns one at a time, first come first served (PageTurns); a turn given back twice counts once. */
export function oneAtATime(): PageTurns {
  let last: Promise<void> = Promise.resolve();
  return {
    take() {
      let giveBack = () => {};
      const held = new Promise<void>((resolve) => {
        giveBack = resolve;
      });
      const before = last;
      last = before.then(() => held);
      return before.then(() => {
        let given = false;
        return () => {
          if (given) return;
          given = true;
          giveBack();
        };
      });
    },
  };
}

/** A feed's settings: its registry row's configuration, with the deployment's. */
export function pollSettingsOf(feedId: string, config: FeedConfig, deployment: PollDeployment): PollSettings {
  return {
    feedId,
    tokenParameterName: config.tokenParameterName,
    partnerBaseUrl: config.partnerBaseUrl ?? deployment.partnerBaseUrl,
    pageSize: config.pageSize,
    vendorIds: config.vendorIds,
    orderIds: config.purpose === 'reconcile' ? config.orderIds : undefined,
    fromTimestamp: config.fromTimestamp,
    minAgeMinutes: config.minAgeMinutes,
    maxPagesPerRun: deployment.maxPagesPerRun,
    maxPageBodyBytes: deployment.maxPageBodyBytes,
    recoveryLookbackMinutes: deployment.recoveryLookbackMinutes,
    leaseGraceMs: deployment.leaseGraceMs,
    authBackoff: deployment.authBackoff,
  };
}

export async function pollFeed(
  deps: PollDeps,
  settings: PollSettings,
  invocation: PollInvocation,
): Promise<PollOutcome> {
  const requestDeadline = invocation.requestDeadline ?? invocation.deadline;
  const sliced = invocation.sliceEndsAt !== undefined && invocation.sliceEndsAt < invocation.deadline;
  const deadline = sliced ? (invocation.sliceEndsAt as number) : invocation.deadline;
  const ctx: RunState = {
    deps,
    settings,
    invocation,
    owner: leaseOwnerOf(invocation.runId, settings.feedId),
    deadline,
    // A slice keeps the invocation's margin after its end for the request on its way.
    requestDeadline: Math.min(requestDeadline, deadline + (requestDeadline - invocation.deadline)),
    timeUp: sliced ? 'slice-end' : 'out-of-time',
    firstPage: { deadline: invocation.deadline, requestDeadline },
    counters: noCounts(),
    pageSize: settings.pageSize,
    record: {},
  };
  let kind: PollOutcomeKind;
  try {
    kind = await poll(ctx);
  } catch (error) {
    // Leased, poll gave the lease up with the outcome; else the row still learns that the run failed.
    if (!ctx.lease)
      await recordQuietly(ctx, { outcome: 'error', at: deps.now(), dispatch: invocation.dispatch });
    throw error;
  }
  const { counters } = ctx;
  const failed = kind === 'auth-failed' || kind === 'lease-lost';
  const stopReason = STOP_REASONS[kind];
  const at = deps.now();
  let caughtUpAt = ctx.lease?.state.lastCaughtUpAt ?? invocation.item.state.lastCaughtUpAt;
  if (ctx.lease) {
    await releaseQuietly(ctx, { outcome: kind, at, stopReason });
  } else if (kind !== 'lease-held' && kind !== 'lease-lost') {
    const run: RunRecord = { outcome: kind, at, dispatch: invocation.dispatch, stopReason, ...ctx.record };
    if (await recordQuietly(ctx, run)) caughtUpAt = run.caughtUp?.lastCaughtUpAt ?? caughtUpAt;
  }
  if (kind === 'order-over-body-cap') await stopFeed(ctx, stopReason as string);
  const reference = caughtUpAt ?? invocation.item.state.createdAt;
  const secondsSinceCaughtUp = Math.max(0, Math.round((deps.now() - Date.parse(reference)) / 1000));
  return { kind, failed, ...counters, secondsSinceCaughtUp };
}

/**
 * The page loop from the cursor read. Until there is data no lease is held: a page with none after the cursor
 * (idle) ends the run with one write (pollFeed's record); the first page with data takes the lease on the
 * revision read, then every page is handed off and committed under it. Returns how the run ended, or gives
 * the lease up and throws.
 */
async function poll(ctx: RunState): Promise<PollOutcomeKind> {
  const { deps, settings, invocation, counters } = ctx;
  const { feedId } = settings;
  const { item } = invocation;
  const { state } = item;
  if (item.leaseOwner !== undefined && (item.leaseExpiresAt ?? 0) >= deps.now()) {
    deps.metrics.count('LeaseContended');
    deps.log.info('another invocation holds the feed lease; skipping this run', { feedId });
    return 'lease-held';
  }
  counters.paceDelayMs = state.paceDelayMs ?? 0;
  if (state.authRetryNotBefore !== undefined && deps.now() < state.authRetryNotBefore) {
    // The backoff holds only while the token parameter keeps the refused version: a rotated token (a new
    // version) is tried at once. Unknown versions (none recorded, SSM unreadable) keep the backoff.
    const failedVersion = state.authFailedTokenVersion;
    const current = failedVersion === undefined ? undefined : await tokenVersion(ctx);
    if (current === undefined || current.version === failedVersion) {
      deps.log.warn('partner API rejected the token on earlier runs; waiting before trying again', {
        feedId,
        authFailures: state.authFailures,
        failedTokenVersion: failedVersion,
        nextAttemptAt: new Date(state.authRetryNotBefore).toISOString(),
      });
      return 'auth-backoff';
    }
    deps.log.info('the token parameter has a new version since the 401; calling the partner API at once', {
      feedId,
      failedTokenVersion: failedVersion,
      tokenVersion: current.version,
    });
  }

  const pageCap = settings.maxPagesPerRun ?? Number.POSITIVE_INFINITY;
  ctx.pageSize = startingPageSize(state.pageSize, settings.pageSize);
  // The memory of cursors goes on across runs (cursor-cycles.ts).
  const cycles = new CursorCycles(state.recentCursors, state.pageId);
  let request = baseQuery(ctx, state.pageId);
  // One recovery per run: never reset, or an always-expiring cursor would loop until the page limit.
  let recoveredThisRun = false;
  // One retry per run after a 401, and only with a token that changed in SSM since the request was sent.
  let retriedWithNewToken = false;
  let overCapAtOne = 0;
  let prefetched: Promise<Fetched> | undefined;
  // The parse turn of the page in hand, given back however the run goes on (giving it back twice is harmless).
  let inHand: (() => void) | undefined;
  try {
    for (;;) {
      if (counters.pages >= pageCap) return 'page-limit';
      const { deadline, requestDeadline } = counters.pages === 0 ? ctx.firstPage : ctx;
      if (!prefetched && deps.now() >= deadline) return ctx.timeUp;
      const result = await (prefetched ?? fetchPage(ctx, request, requestDeadline));
      prefetched = undefined;
      inHand = result.ok ? result.done : undefined;
      if (!result.ok && partnerErrorKind(result.error) === 'cursor-expired' && !recoveredThisRun) {
        recoveredThisRun = true;
        cycles.forget();
        request = recover(ctx);
        continue;
      }
      if (!result.ok && isBodyOverCap(result.error)) {
        const smaller = shrinkPageSize(ctx, request);
        if (smaller !== undefined) request = smaller;
        // One order over the cap stops the feed; a gateway's one-off (a decompression bomb) must not: asked
        // again before it stops (fuzz seed 18, full profile: one bomb at page size 1 stopped a feed).
        else if (++overCapAtOne >= OVER_CAP_ASKS_AT_ONE) return orderOverBodyCap(ctx);
        continue;
      }
      if (!result.ok && partnerErrorKind(result.error) === 'auth') {
        const token = await tokenVersion(ctx);
        if (token?.changed && !retriedWithNewToken) {
          retriedWithNewToken = true;
          deps.log.info(
            'partner API rejected the token, and SSM holds a new one; retrying the request once',
            { feedId, tokenVersion: token.version },
          );
          continue;
        }
        await authFailed(ctx, token?.version);
        return 'auth-failed';
      }
      if (!result.ok) return fetchFailure(ctx, result.error);

      const { page } = result;
      if (!ctx.lease && idle(page, request, state.pageId, counters.pages)) {
        result.done();
        counters.pages += 1;
        deps.metrics.count('PagesFetched');
        // The empty page is a clean page: the pace and the page size recover as after any other.
        counters.paceDelayMs = nextPaceDelayMs(counters.paceDelayMs, result.rateLimited);
        const size = grownPageSize(ctx.pageSize, settings.pageSize);
        ctx.record.caughtUp = {
          lastCaughtUpAt: new Date(deps.now()).toISOString(),
          paceDelayMs: counters.paceDelayMs,
          pageSize: size < settings.pageSize ? size : undefined,
        };
        return 'caught-up';
      }
      if (!ctx.lease) {
        ctx.lease = await deps.cursorStore.acquire(
          feedId,
          ctx.owner,
          state.revision,
          deps.now(),
          invocation.leaseExpiresAt,
          invocation.dispatch,
        );
        if (!ctx.lease) {
          // Another run took the feed (or an operator moved its cursor) since it was read: that run goes on
          // from the committed cursor; this page is dropped unpublished.
          result.done();
          deps.metrics.count('LeaseContended');
          deps.log.info("the feed's item moved since it was read (another run took it); skipping this run", {
            feedId,
          });
          return 'lease-held';
        }
      }
      counters.pages += 1;
      counters.paceDelayMs = nextPaceDelayMs(counters.paceDelayMs, result.rateLimited);
      deps.metrics.count('PagesFetched');
      // More records than asked for is the partner's doing, not a reason to refuse them: counted, handed off.
      const beyond = page.data.length - (request.pageSize ?? settings.pageSize);
      if (beyond > 0) deps.metrics.count('RecordsBeyondPageSize', beyond);
      ctx.pageSize = grownPageSize(ctx.pageSize, settings.pageSize);
      const stop = stopAfter(page, request, cycles);
      cycles.committed(page.nextPageId ?? request.pageId);
      const nextRequest = baseQuery(ctx, page.nextPageId);
      if (!stop) prefetched = prefetchNext(ctx, nextRequest, pageCap);
      const committed = await commitPage(ctx, ctx.lease, request, result, cycles.recent);
      ctx.lease = committed.lease;
      // Handed off in part: the cursor stayed, and the feed's next run does the rest.
      if (committed.inPart) return ctx.timeUp;
      if (stop === 'missing-next-page-id') {
        deps.metrics.count('MissingNextPageId');
        deps.log.warn('page says hasMore but carries no nextPageId; kept its data, ending the run', {
          feedId,
        });
      } else if (stop === 'stuck-cursor') {
        // Asking again would get the same pages back: end the run instead.
        deps.metrics.count('StuckCursor');
        deps.log.warn('partner answered hasMore with a cursor it was already sent; ending the run', {
          feedId,
          versions: page.data.length,
        });
      }
      if (stop) return stop;
      request = nextRequest;
    }
  } catch (error) {
    if (error instanceof LeaseLostError) {
      ctx.lease = undefined;
      deps.log.error('lost the feed lease mid-run; another invocation continues from the committed cursor', {
        feedId,
      });
      return 'lease-lost';
    }
    await releaseQuietly(ctx, { outcome: 'error', at: deps.now() });
    throw error;
  } finally {
    inHand?.();
    // A page fetched ahead that the run will not hand off gives its parse turn back when it arrives.
    void prefetched?.then((unused) => unused.ok && unused.done());
  }
}

/**
 * The partner served nothing after the stored cursor (rule 3's empty page, or the empty stream), on the
 * run's first request: nothing to hand off, and the cursor stays where it is.
 */
function idle(page: RawPage, request: OrderUpdatesQuery, stored: string | undefined, pages: number): boolean {
  const cursor = page.nextPageId ?? request.pageId;
  return (
    pages === 0 && page.data.length === 0 && !page.hasMore && cursor === stored && request.pageId === stored
  );
}

/** The token parameter read afresh; undefined without the port or when SSM cannot be read (logged). */
async function tokenVersion({ deps, settings }: RunState) {
  try {
    return await deps.tokens?.refresh();
  } catch (error) {
    // The adapter's errors name the parameter, never its value.
    deps.log.warn('could not read the token parameter afresh', {
      feedId: settings.feedId,
      error: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }
}

function fetchPage(
  ctx: RunState,
  query: OrderUpdatesQuery,
  deadline = ctx.requestDeadline,
): Promise<Fetched> {
  const { deps, settings, counters } = ctx;
  let rateLimited = false;
  // The turn to parse (and hold) a page, taken before the client parses one, given back after its hand-off.
  let done: (() => void) | undefined;
  const { pageTurns } = deps;
  const beforeParse =
    pageTurns &&
    (async () => {
      done ??= await pageTurns.take();
    });
  // A span per page request, retries and waits included (metadata only: the page's own span annotates).
  const traced = span('### partner fetch', {}, async (subsegment) => {
    subsegment?.addMetadata('page', counters.pages + 1);
    const page = await deps.partner.getOrderUpdates(query, {
      deadline,
      ...(beforeParse ? { beforeParse } : {}),
      onRetry: (event) => {
        rateLimited ||= event.kind === 'rate-limited';
        if (event.kind === 'rate-limited') counters.rateLimitWaits += 1;
        else counters.partnerRetries += 1;
        deps.metrics.count(event.kind === 'rate-limited' ? 'RateLimitWaits' : 'PartnerRetries');
        deps.log.warn('partner API call will be retried', { feedId: settings.feedId, ...event });
      },
    });
    subsegment?.addMetadata('versions', page.data.length);
    subsegment?.addMetadata('rateLimited', rateLimited);
    return page;
  });
  return traced.then(
    (page) => ({ ok: true as const, page, fetchedAt: deps.now(), rateLimited, done: done ?? noTurn }),
    (error: unknown) => {
      done?.();
      return { ok: false as const, error };
    },
  );
}

/**
 * Starts fetching the next page while this one is handed off: what keeps a catch-up at the partner's pace.
 * Not at the page cap, nor when waiting out the feed's own pace (it rises after a 429) would pass the deadline.
 */
function prefetchNext(
  ctx: RunState,
  query: OrderUpdatesQuery,
  pageCap: number,
): Promise<Fetched> | undefined {
  const { deps, counters } = ctx;
  if (counters.pages >= pageCap || deps.now() + counters.paceDelayMs >= ctx.deadline) return undefined;
  if (counters.paceDelayMs <= 0) return fetchPage(ctx, query);
  return (deps.sleep ?? sleep)(counters.paceDelayMs).then(() => fetchPage(ctx, query));
}

/**
 * Hands the page off (hand-off.ts), then commits its cursor, in one span: what must be durable before the
 * cursor moves. The cursor memory is dropped at the end of the stream: what comes after it is new. A page
 * the run has no time left to finish is committed in part: the cursor stays, with what is handed off.
 */
function commitPage(
  { deps, settings, invocation, counters, pageSize, requestDeadline }: RunState,
  held: Lease,
  request: OrderUpdatesQuery,
  { page, fetchedAt, done }: { page: RawPage; fetchedAt: number; done: () => void },
  recentCursors: string[],
): Promise<{ lease: Lease; inPart: boolean }> {
  const { feedId } = settings;
  const correlationId = pollCorrelationId(invocation.runId, counters.pages);
  return span('### page', { feedId, page: counters.pages, correlationId }, async (subsegment) => {
    subsegment?.addMetadata('versions', page.data.length);
    const handed = await handOffPage(
      deps,
      page.data,
      {
        feedId,
        pageId: request.pageId ?? null,
        fetchedAt: new Date(fetchedAt).toISOString(),
        correlationId,
        maxMessageBytes: deps.maxMessageBytes ?? SQS_MAX_MESSAGE_BYTES,
      },
      // The half margin left after the last request's answer is what the last slice and the commit take.
      { until: requestDeadline, now: deps.now, handedBefore: held.state.partialPage },
    ).finally(done);
    const { partial } = handed;
    counters.versionsPublished += handed.versionsPublished;
    counters.quarantined += handed.quarantined;
    subsegment?.addMetadata('versionsPublished', handed.versionsPublished);
    subsegment?.addMetadata('quarantined', handed.quarantined);
    const lease = await deps.cursorStore.commit(held, {
      // No nextPageId (an empty stream, rule 2): stay at the cursor this page was asked for. After a
      // rule-5 recovery that is none, so the expired cursor is cleared instead of saved again.
      pageId: partial ? request.pageId : (page.nextPageId ?? request.pageId),
      highWaterMark: highWaterMark([held.state.highWaterMark, handed.highWaterMark], fetchedAt),
      ...(page.hasMore || partial ? {} : { lastCaughtUpAt: new Date(deps.now()).toISOString() }),
      ...(held.state.authFailures > 0 ? { clearAuthFailures: true } : {}),
      paceDelayMs: counters.paceDelayMs,
      pageSize: pageSize < settings.pageSize ? pageSize : undefined,
      recentCursors: partial ? held.state.recentCursors : page.hasMore ? recentCursors : undefined,
      partialPage: partial,
    });
    return { lease, inPart: partial !== undefined };
  });
}

/** Why the run ends after this page, if it does (its data is handed off and committed either way). */
function stopAfter(
  page: RawPage,
  request: OrderUpdatesQuery,
  cycles: CursorCycles,
): PollOutcomeKind | undefined {
  if (!page.hasMore) return 'caught-up';
  if (page.nextPageId === undefined) return 'missing-next-page-id';
  if (page.data.length === 0 && page.nextPageId === request.pageId) return 'stuck-cursor';
  return cycles.judge(request.pageId, page.nextPageId) === 'cycle' ? 'stuck-cursor' : undefined;
}

const isBodyOverCap = (error: unknown) => partnerErrorKind(error) === 'body-too-large';

/** How often a page of one order is asked for, over the cap each time, before the feed stops at it. */
const OVER_CAP_ASKS_AT_ONE = 3;

/** A page of one order over the cap every time it was asked for: that order alone is over it. */
function orderOverBodyCap({ deps, settings }: RunState): PollOutcomeKind {
  deps.metrics.count('OrderOverBodyCap');
  deps.log.error(
    `one order is over the page body cap (maxPageBodyBytes) at page size 1, ${OVER_CAP_ASKS_AT_ONE} times asked; the feed stops here`,
    { feedId: settings.feedId, maxPageBodyBytes: settings.maxPageBodyBytes },
  );
  return 'order-over-body-cap';
}

/**
 * A 200 body over the cap: the same cursor at half the page size, at once (undefined: the page held one order
 * already; RUNBOOK "Order over the page body cap").
 */
function shrinkPageSize(ctx: RunState, request: OrderUpdatesQuery): OrderUpdatesQuery | undefined {
  const { deps, settings } = ctx;
  const asked = request.pageSize ?? ctx.pageSize;
  const smaller = shrunkPageSize(asked);
  if (smaller === undefined) return undefined;
  ctx.pageSize = smaller;
  deps.metrics.count('PageSizeReduced');
  deps.log.warn('page body over the cap; asking the same cursor again with a smaller page size', {
    feedId: settings.feedId,
    pageSize: asked,
    nextPageSize: smaller,
  });
  return { ...request, pageSize: smaller };
}

/** Rule 5 after a 404 `pageId not found`; the mark is never trusted past now (a future start is empty forever). */
function recover(ctx: RunState): OrderUpdatesQuery {
  const { deps, settings, counters, lease, invocation } = ctx;
  counters.cursorRecoveries += 1;
  deps.metrics.count('CursorRecoveries');
  const request = baseQuery(ctx, undefined);
  const mark = (lease?.state ?? invocation.item.state).highWaterMark;
  if (settings.recoveryLookbackMinutes !== undefined && mark !== undefined) {
    const from = Math.min(Date.parse(mark), deps.now()) - settings.recoveryLookbackMinutes * 60_000;
    request.fromTimestamp = new Date(from).toISOString();
  }
  deps.log.warn('stored cursor expired (404 pageId not found); restarting the stream per pagination rule 5', {
    feedId: settings.feedId,
    fromTimestamp: request.fromTimestamp,
  });
  return request;
}

/**
 * A 401: the refused token version and the next attempt's time (doubling per 401 with that version, capped),
 * written under the lease when the run holds one, else with the run's record.
 */
async function authFailed(ctx: RunState, tokenVersion: number | undefined): Promise<void> {
  const { deps, settings, lease } = ctx;
  const state = lease?.state ?? ctx.invocation.item.state;
  deps.metrics.count('AuthFailures');
  const failures = state.authFailedTokenVersion === tokenVersion ? state.authFailures : 0;
  const waitMs = Math.min(settings.authBackoff.maxMs, settings.authBackoff.initialMs * 2 ** failures);
  const retryNotBefore = deps.now() + waitMs;
  const failure: AuthFailure = { failures: failures + 1, retryNotBefore, tokenVersion };
  if (lease) ctx.lease = await deps.cursorStore.recordAuthFailure(lease, failure);
  else ctx.record.authFailure = failure;
  deps.log.error('partner API rejected the token (401 Unauthorized); rotate the token in SSM', {
    feedId: settings.feedId,
    tokenParameter: settings.tokenParameterName,
    consecutiveFailures: failures + 1,
    failedTokenVersion: tokenVersion,
    nextAttemptAt: new Date(retryNotBefore).toISOString(),
  });
}

/** How any other failed request ends the run; what is not a partner's "later" is thrown. */
function fetchFailure({ deps, settings, counters, timeUp }: RunState, error: unknown): PollOutcomeKind {
  const { feedId } = settings;
  if (partnerErrorKind(error) === 'cursor-expired') {
    // The spec's expired-cursor scenario re-expires on every restart: a loop here would never end.
    deps.log.warn('cursor expired again right after recovery; ending the run, a later run retries', {
      feedId,
    });
    return 'cursor-expired-again';
  }
  const later = error instanceof PartnerError && error.kind === 'retry-later';
  if (later && error.deadlinePassed && counters.pages > 0) {
    // The run's time ran out with the next page (usually the prefetch) still on its way: nothing of it
    // was published, the cursor is that page's; the next run asks again. A run that ends like this has
    // made progress: the feed is behind, like any run out of time.
    deps.log.info('run out of time with a page request in flight; the next run repeats it', { feedId });
    return timeUp;
  }
  if (later) {
    // Counted per give-up: one is a partner's passing hiccup, an alarm rings when they repeat.
    if (error.reason === 'unreadable') deps.metrics.count('UnreadablePages');
    // Whose "later" ended the run: our own deadline is not the partner's Retry-After.
    const why = error.deadlinePassed
      ? "the run's own deadline ended the partner request"
      : error.reason === 'rate-limited'
        ? 'partner API asked us to come back later (429)'
        : error.reason === 'unreadable'
          ? 'partner API failed every attempt, the last answering no readable page (a redirect or a body that is not a page)'
          : 'partner API failed every attempt, the last with a 5xx or a network failure';
    deps.log.warn(`${why}; the next run repeats the request`, {
      feedId,
      reason: error.reason,
      statusCode: error.statusCode,
      retryAfterMs: error.retryAfterMs,
      error: error.message,
    });
    return 'retry-later';
  }
  throw error;
}

/** A request from `pageId` with the feed's filters; without a cursor, from the feed's first-sync start. */
function baseQuery({ settings, pageSize }: RunState, pageId: string | undefined): OrderUpdatesQuery {
  return {
    ...(pageId === undefined ? {} : { pageId }),
    pageSize,
    ...(settings.vendorIds?.length ? { vendorIds: settings.vendorIds } : {}),
    ...(settings.orderIds?.length ? { orderIds: settings.orderIds } : {}),
    ...(pageId === undefined && settings.fromTimestamp !== undefined
      ? { fromTimestamp: settings.fromTimestamp }
      : {}),
    ...(settings.minAgeMinutes === undefined ? {} : { minAgeMinutes: settings.minAgeMinutes }),
  };
}

/**
 * The newest order timestamp of committed pages, capped at the page's fetch time: one record dated in the
 * future (a 9999-12-31 sentinel, a skewed clock) must not move the mark there, or a bounded recovery would
 * ask for the future and see an empty stream forever. ISO strings sort in time order.
 */
function highWaterMark(marks: Array<string | undefined>, fetchedAtMs: number): string | undefined {
  const highest = marks
    .filter((mark) => mark !== undefined)
    .sort()
    .at(-1);
  return highest && [highest, new Date(fetchedAtMs).toISOString()].sort()[0];
}

/**
 * The feed's own pace under rate limiting, AIMD as TCP does: doubles on a 429; after a clean page 50 ms less,
 * or 0.2 requests/s more where that is sooner (50 ms alone took 600 pages back from 30 s: fuzz seed 626).
 */
export function nextPaceDelayMs(currentMs: number, rateLimited: boolean): number {
  if (rateLimited) return Math.min(30_000, Math.round(currentMs <= 0 ? 250 : currentMs * 2));
  return Math.max(0, Math.min(currentMs - 50, Math.round(1000 / (1000 / currentMs + 0.2))));
}

/** Gives the lease up with how the run ended; a failure only delays the next run (the lease expires). */
async function releaseQuietly({ deps, lease }: RunState, lastRun: LastRun): Promise<void> {
  if (!lease) return;
  try {
    await deps.cursorStore.release(lease, lastRun);
  } catch (error) {
    deps.log.warn('could not release the feed lease; it will expire on its own', {
      feedId: lease.feedId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Records a run that held no lease; false when it was not written (nothing was published either way). */
async function recordQuietly({ deps, settings, invocation }: RunState, run: RunRecord): Promise<boolean> {
  try {
    if (await deps.cursorStore.record(settings.feedId, invocation.item.state.revision, run)) return true;
    deps.log.info(
      "the feed's item moved since it was read (another run, an operator); this run's record is dropped",
      {
        feedId: settings.feedId,
        outcome: run.outcome,
      },
    );
  } catch (error) {
    deps.log.warn("could not record the run on the feed's row", {
      feedId: settings.feedId,
      outcome: run.outcome,
      error: error instanceof Error ? error.message : String(error),
    });
  }
  return false;
}

/** A stop only an operator can resume: the feed leaves the rotation (`stopped`, the reason on its row). */
async function stopFeed({ deps, settings }: RunState, reason: string): Promise<void> {
  try {
    await deps.feedStates?.stop(settings.feedId, reason, deps.now());
  } catch (error) {
    deps.log.warn('could not mark the feed stopped; it stops again on its next run', {
      feedId: settings.feedId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
