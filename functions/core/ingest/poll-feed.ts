// One poll of the partner's order-update stream: functions/README.md, "Poller".
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@aws-lambda-powertools/logger';
import { pollCorrelationId, SQS_MAX_MESSAGE_BYTES } from '../contract/order-version-message.js';
import type { FunctionMetrics } from '../observability/metric-names.js';
import { span } from '../observability/tracer.js';
import { PartnerError, partnerErrorKind } from '../partner/errors.js';
import type { OrderUpdatesQuery, PartnerApi, RawPage } from '../partner/types.js';
import { type ContinuationEvent, nextContinuation } from './continuation.js';
import { CursorCycles } from './cursor-cycles.js';
import { LeaseLostError } from './errors.js';
import { handOffPage } from './hand-off.js';
import { grownPageSize, shrunkPageSize, startingPageSize } from './page-size.js';
import type {
  CursorStore,
  Lease,
  OrderVersionPublisher,
  PollSettings,
  Quarantine,
  TokenParameter,
} from './ports.js';

export interface PollInvocation {
  /** The Lambda request id: the lease owner, and the run id in every message's `poll:<owner>:<page>`. */
  owner: string;
  /** Epoch ms after which no new page is requested (the handler leaves a margin to publish and commit). */
  deadline: number;
  /**
   * Epoch ms until which a request already on its way may be answered (default `deadline`): half the
   * handler's margin, so the page prefetched just before the deadline is kept, not asked again next run.
   */
  requestDeadline?: number;
  /** The invocation's own deadline plus a grace, fixed for the run: only a crashed run's lease lapses. */
  leaseExpiresAt: number;
  /** The continuation event that started this run (undefined: a scheduled run, which may start a chain). */
  continuation?: ContinuationEvent;
  canContinue?: boolean;
}

/** How a run ended (functions/README.md); every kind is observable (cursor item, ops status, logs). */
type PollOutcomeKind =
  | 'caught-up'
  | 'page-limit'
  | 'out-of-time'
  | 'retry-later'
  | 'cursor-expired-again'
  | 'lease-held'
  | 'stale-continuation'
  | 'auth-backoff'
  | 'auth-failed'
  | 'lease-lost'
  | 'missing-next-page-id'
  | 'stuck-cursor'
  | 'order-over-body-cap'
  | 'disabled';

/** What a run counts (partnerRetries: every retry but a 429's; paceDelayMs: the pace at the run's end). */
const noCounts = () => ({
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
  /** The continuation this run handed its lease over to: the caller starts it at once. */
  next?: ContinuationEvent;
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
}

/** A page request's result; a failure is a value, so a prefetch nobody awaits never rejects unhandled. */
type Fetched =
  | { ok: true; page: RawPage; fetchedAt: number; rateLimited: boolean }
  | { ok: false; error: unknown };

/** What the helpers of one run share; `lease` is the one still held (none when never taken or lost). */
interface RunState {
  deps: PollDeps;
  settings: PollSettings;
  invocation: PollInvocation;
  counters: ReturnType<typeof noCounts>;
  lease?: Lease | undefined;
  pageSize: number;
}

export async function pollFeed(
  deps: PollDeps,
  settings: PollSettings,
  invocation: PollInvocation,
): Promise<PollOutcome> {
  const ctx: RunState = { deps, settings, invocation, counters: noCounts(), pageSize: settings.pageSize };
  const startedAt = deps.now();
  const kind = await poll(ctx);
  const { lease, counters } = ctx;
  const failed = kind === 'auth-failed' || kind === 'lease-lost';
  let next: ContinuationEvent | undefined;
  if (lease) {
    const wanted = invocation.canContinue
      ? nextContinuation(
          { kind, failed, pages: counters.pages },
          {
            ...settings,
            current: invocation.continuation,
            runId: invocation.owner,
            startedAt: new Date(startedAt).toISOString(),
          },
        )
      : undefined;
    // A continuation is started only when the lease was handed over to it (else it could not take it).
    if ((await releaseQuietly(ctx, kind, wanted)) && wanted) next = wanted;
  }
  const reference = lease?.state.lastCaughtUpAt ?? lease?.state.createdAt;
  const secondsSinceCaughtUp =
    reference === undefined
      ? undefined
      : Math.max(0, Math.round((deps.now() - Date.parse(reference)) / 1000));
  return { kind, failed, ...counters, secondsSinceCaughtUp, ...(next ? { next } : {}) };
}

/** Takes the lease, then the page loop; returns how the run ended, or releases the lease and throws. */
async function poll(ctx: RunState): Promise<PollOutcomeKind> {
  const { deps, settings, invocation, counters } = ctx;
  const { feedId } = settings;
  if (settings.enabled === false) {
    deps.log.info('feed is disabled; this run does nothing', { feedId });
    return 'disabled';
  }
  const chain = invocation.continuation?.continuation;
  const link = chain && { chainId: chain.chainId, step: chain.chain };
  ctx.lease = await deps.cursorStore.acquire(
    feedId,
    invocation.owner,
    deps.now(),
    invocation.leaseExpiresAt,
    link,
  );
  if (!ctx.lease && chain) {
    // A duplicated or retried event, or one whose chain a scheduled run has ended: it must do nothing.
    deps.log.info("this continuation is not the feed's current chain step; doing nothing", {
      feedId,
      chainId: chain.chainId,
      chain: chain.chain,
    });
    return 'stale-continuation';
  }
  if (!ctx.lease) {
    deps.metrics.count('LeaseContended');
    deps.log.info('another invocation holds the feed lease; skipping this run', { feedId });
    return 'lease-held';
  }
  const { state } = ctx.lease;
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
  // The memory of cursors goes on across runs, chained or scheduled (cursor-cycles.ts).
  const cycles = new CursorCycles(state.recentCursors, state.pageId);
  let request = baseQuery(ctx, state.pageId);
  // One recovery per run: never reset, or an always-expiring cursor would loop until the page limit.
  let recoveredThisRun = false;
  // One retry per run after a 401, and only with a token that changed in SSM since the request was sent.
  let retriedWithNewToken = false;
  let prefetched: Promise<Fetched> | undefined;
  try {
    for (;;) {
      if (counters.pages >= pageCap) return 'page-limit';
      if (!prefetched && deps.now() >= invocation.deadline) return 'out-of-time';
      const result = await (prefetched ?? fetchPage(ctx, request));
      prefetched = undefined;
      if (!result.ok && partnerErrorKind(result.error) === 'cursor-expired' && !recoveredThisRun) {
        recoveredThisRun = true;
        cycles.forget();
        request = recover(ctx);
        continue;
      }
      if (!result.ok && isBodyOverCap(result.error)) {
        const smaller = shrinkPageSize(ctx, request);
        if (smaller === undefined) return 'order-over-body-cap';
        request = smaller;
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
      // Handed off in part: the cursor stayed, and the next run (at once, chained) does the rest.
      if (committed.inPart) return 'out-of-time';
      if (stop === 'missing-next-page-id') {
        deps.metrics.count('MissingNextPageId');
        deps.log.warn('page says hasMore but carries no nextPageId; kept its data, ending the run', {
          feedId,
        });
      } else if (stop === 'stuck-cursor') {
        // Asking again would get the same pages back: end the run (and the chain) instead.
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
    await releaseQuietly(ctx, 'error');
    throw error;
  }
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

function fetchPage(ctx: RunState, query: OrderUpdatesQuery): Promise<Fetched> {
  const { deps, settings, invocation, counters } = ctx;
  let rateLimited = false;
  // A span per page request, retries and waits included (metadata only: the page's own span annotates).
  const traced = span('### partner fetch', {}, async (subsegment) => {
    subsegment?.addMetadata('page', counters.pages + 1);
    const page = await deps.partner.getOrderUpdates(query, {
      deadline: invocation.requestDeadline ?? invocation.deadline,
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
    (page) => ({ ok: true as const, page, fetchedAt: deps.now(), rateLimited }),
    (error: unknown) => ({ ok: false as const, error }),
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
  const { deps, invocation, counters } = ctx;
  if (counters.pages >= pageCap || deps.now() + counters.paceDelayMs >= invocation.deadline) return undefined;
  if (counters.paceDelayMs <= 0) return fetchPage(ctx, query);
  return (deps.sleep ?? sleep)(counters.paceDelayMs).then(() => fetchPage(ctx, query));
}

/**
 * Hands the page off (hand-off.ts), then commits its cursor, in one span: what must be durable before the
 * cursor moves. The cursor memory is dropped at the end of the stream: what comes after it is new. A page
 * the run has no time left to finish is committed in part: the cursor stays, with what is handed off.
 */
function commitPage(
  { deps, settings, invocation, counters, pageSize }: RunState,
  held: Lease,
  request: OrderUpdatesQuery,
  { page, fetchedAt }: { page: RawPage; fetchedAt: number },
  recentCursors: string[],
): Promise<{ lease: Lease; inPart: boolean }> {
  const { feedId } = settings;
  const correlationId = pollCorrelationId(invocation.owner, counters.pages);
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
      {
        until: invocation.requestDeadline ?? invocation.deadline,
        now: deps.now,
        handedBefore: held.state.partialPage,
      },
    );
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

/**
 * A 200 body over the cap: the same cursor at half the page size, at once (undefined: the page held one order
 * already; that order alone is over the cap, and the feed stops there: RUNBOOK "Order over the page body cap").
 */
function shrinkPageSize(ctx: RunState, request: OrderUpdatesQuery): OrderUpdatesQuery | undefined {
  const { deps, settings } = ctx;
  const asked = request.pageSize ?? ctx.pageSize;
  const smaller = shrunkPageSize(asked);
  if (smaller === undefined) {
    deps.metrics.count('OrderOverBodyCap');
    deps.log.error(
      'one order is over the page body cap (maxPageBodyBytes) at page size 1; the feed stops here',
      { feedId: settings.feedId, maxPageBodyBytes: settings.maxPageBodyBytes },
    );
    return undefined;
  }
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
  const { deps, settings, counters, lease } = ctx;
  counters.cursorRecoveries += 1;
  deps.metrics.count('CursorRecoveries');
  const request = baseQuery(ctx, undefined);
  const mark = lease?.state.highWaterMark;
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

/** A 401: the refused token version and the next attempt's time (doubling per 401 with that version, capped). */
async function authFailed(ctx: RunState, tokenVersion: number | undefined): Promise<void> {
  const { deps, settings, lease } = ctx;
  if (!lease) return;
  deps.metrics.count('AuthFailures');
  const failures = lease.state.authFailedTokenVersion === tokenVersion ? lease.state.authFailures : 0;
  const waitMs = Math.min(settings.authBackoff.maxMs, settings.authBackoff.initialMs * 2 ** failures);
  const retryNotBefore = deps.now() + waitMs;
  ctx.lease = await deps.cursorStore.recordAuthFailure(lease, {
    failures: failures + 1,
    retryNotBefore,
    tokenVersion,
  });
  deps.log.error('partner API rejected the token (401 Unauthorized); rotate the token in SSM', {
    feedId: settings.feedId,
    consecutiveFailures: failures + 1,
    failedTokenVersion: tokenVersion,
    nextAttemptAt: new Date(retryNotBefore).toISOString(),
  });
}

/** How any other failed request ends the run; what is not a partner's "later" is thrown. */
function fetchFailure({ deps, settings, counters }: RunState, error: unknown): PollOutcomeKind {
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
    // made progress, so it may hand over at once (self-continuation) like any run out of time.
    deps.log.info('run out of time with a page request in flight; the next run repeats it', { feedId });
    return 'out-of-time';
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
          ? 'partner API answered no readable page (a redirect or a body that is not a page) on every attempt'
          : 'partner API kept failing (5xx or network) on every attempt';
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

function baseQuery({ settings, pageSize }: RunState, pageId: string | undefined): OrderUpdatesQuery {
  return {
    ...(pageId === undefined ? {} : { pageId }),
    pageSize,
    ...(settings.vendorIds?.length ? { vendorIds: settings.vendorIds } : {}),
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

/** The feed's own pace under rate limiting, AIMD as TCP does: doubles on a 429, 50 ms less after a page. */
export function nextPaceDelayMs(currentMs: number, rateLimited: boolean): number {
  if (rateLimited) return Math.min(30_000, Math.round(currentMs <= 0 ? 250 : currentMs * 2));
  return Math.max(0, currentMs - 50);
}

/** Gives the lease up (or hands it over to `next` for the lease grace); false when the release failed. */
async function releaseQuietly(
  { deps, settings, lease }: RunState,
  outcome: string,
  next?: ContinuationEvent,
) {
  if (!lease) return false;
  const now = deps.now();
  try {
    const chain = next?.continuation;
    const handOver = chain && {
      chainId: chain.chainId,
      step: chain.chain,
      expiresAt: now + settings.leaseGraceMs,
    };
    await deps.cursorStore.release(lease, { outcome, at: now }, handOver);
    return true;
  } catch (error) {
    // The lease expires on its own; failing to release early only delays the next run.
    deps.log.warn('could not release the feed lease; it will expire on its own', {
      feedId: lease.feedId,
      error: error instanceof Error ? error.message : String(error),
    });
    return false;
  }
}
