// Use case: one scheduled poll of the partner's order-update stream.
//   1. take the feed's lease (cursor item, fenced by revision); skip while a 401 backoff holds for the
//      token parameter's current version
//   2. fetch pages from the stored cursor (the next page is fetched while the current one is published)
//   3. per page: normalise, publish every version to every queue, quarantine what cannot be published
//   4. only then commit that page's nextPageId; stop on hasMore false, the page limit or the time budget
// Crash anywhere and the next run repeats from the last committed cursor: versions may be published
// twice (the message contract says so, and the consumer's version guard absorbs it) but never lost.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { PollerConfig } from '../../poller/config.js';
import { pollCorrelationId, SQS_MAX_MESSAGE_BYTES } from '../contract/order-version-message.js';
import { NO_TRACING, type Tracing } from '../observability/tracing.js';
import { AuthenticationError, CursorExpiredError, RetryLaterError } from '../partner/errors.js';
import type { OrderUpdatesQuery, PartnerApi, RawPage } from '../partner/types.js';
import { type ContinuationEvent, nextContinuation } from './continuation.js';
import { LeaseLostError } from './errors.js';
import type {
  ChainLink,
  CursorStore,
  FindingMetricName,
  Lease,
  OrderVersionPublisher,
  PollerMetrics,
  Quarantine,
  TokenParameter,
} from './ports.js';
import { type PreparedPage, preparePage } from './prepare-page.js';

interface PollRun {
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
  /** Whether the caller can start a continuation after this run. */
  canContinue?: boolean;
}

/**
 * How a run ended. Every kind is observable (`lastRunOutcome` on the cursor item, `npm run ops -- status`,
 * the `poll run finished` log, local mode's scheduling), so none is merged into another.
 * missing-next-page-id: hasMore without a nextPageId (rule 1 broken); stuck-cursor: an empty page handing
 * back the cursor it was asked with; disabled: `enabled: false`, nothing was asked.
 */
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
  | 'disabled';

/** The kinds reported as a failed invocation. */
const FAILED_KINDS: ReadonlySet<PollOutcomeKind> = new Set(['auth-failed', 'lease-lost']);

/**
 * What a run counts: partnerRetries are waits after a 5xx or a network failure, rateLimitWaits after a 429;
 * paceDelayMs, the feed's own delay between page requests at the end of the run (nextPaceDelayMs).
 */
const noCounts = () => ({
  pages: 0,
  versionsPublished: 0,
  quarantined: 0,
  cursorRecoveries: 0,
  partnerRetries: 0,
  rateLimitWaits: 0,
  paceDelayMs: 0,
});
type Counters = ReturnType<typeof noCounts>;

export interface PollOutcome extends Counters {
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
  metrics: Pick<PollerMetrics, 'count'>;
  /** Powertools Logger (tests: MemoryLog, which records the lines). */
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  now: () => number;
  /** The token's SSM parameter: re-read after a 401, and its version keys the backoff (default: none). */
  tokens?: TokenParameter;
  /** Waits between page requests when the feed paces itself (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** A span per page, from hand-off to commit (default: none). */
  tracing?: Tracing;
  /** The SQS message size limit (default SQS_MAX_MESSAGE_BYTES; tests lower it). */
  maxMessageBytes?: number;
}

type FetchResult =
  | { ok: true; page: RawPage; fetchedAt: number; rateLimited: boolean }
  | { ok: false; error: unknown };

/** How the run ended, and the lease it still holds (none when never taken or lost). */
type Ending = { kind: PollOutcomeKind; lease: Lease | undefined };

/** What the helpers of one run share. */
interface Run {
  deps: PollDeps;
  settings: PollerConfig;
  run: PollRun;
  counters: Counters;
}

export async function pollFeed(deps: PollDeps, settings: PollerConfig, run: PollRun): Promise<PollOutcome> {
  const counters = noCounts();
  const ctx: Run = { deps, settings, run, counters };
  const startedAt = deps.now();
  const { kind, lease } = await start(ctx);
  let next: ContinuationEvent | undefined;
  if (lease) {
    const wanted = run.canContinue
      ? nextContinuation(
          { kind, failed: FAILED_KINDS.has(kind), pages: counters.pages },
          {
            feedId: settings.feedId,
            current: run.continuation,
            runId: run.owner,
            startedAt: new Date(startedAt).toISOString(),
            maxContinuations: settings.maxContinuations,
            enabled: settings.enabled,
          },
        )
      : undefined;
    // A continuation is started only when the lease was handed over to it (else it could not take it).
    if ((await releaseQuietly(ctx, lease, kind, wanted)) && wanted) next = wanted;
  }
  const reference = lease?.state.lastCaughtUpAt ?? lease?.state.createdAt;
  const secondsSinceCaughtUp =
    reference === undefined
      ? undefined
      : Math.max(0, Math.round((deps.now() - Date.parse(reference)) / 1000));
  return {
    kind,
    failed: FAILED_KINDS.has(kind),
    ...counters,
    secondsSinceCaughtUp,
    ...(next ? { next } : {}),
  };
}

const chainLinkOf = (event: ContinuationEvent | undefined): ChainLink | undefined =>
  event && { chainId: event.continuation.chainId, step: event.continuation.chain };

/** Takes the lease and polls pages, unless the feed is off, the lease held or a 401 backoff running. */
async function start(ctx: Run): Promise<Ending> {
  const { deps, settings, run } = ctx;
  const { feedId } = settings;
  if (settings.enabled === false) {
    deps.log.info('feed is disabled; this run does nothing', { feedId });
    return { kind: 'disabled', lease: undefined };
  }
  const lease = await deps.cursorStore.acquire(
    feedId,
    run.owner,
    deps.now(),
    run.leaseExpiresAt,
    chainLinkOf(run.continuation),
  );
  if (!lease && run.continuation) {
    // A duplicated or retried event, or one whose chain a scheduled run has ended: it must do nothing.
    deps.log.info("this continuation is not the feed's current chain step; doing nothing", {
      feedId,
      chainId: run.continuation.continuation.chainId,
      chain: run.continuation.continuation.chain,
    });
    return { kind: 'stale-continuation', lease: undefined };
  }
  if (!lease) {
    deps.metrics.count('LeaseContended');
    deps.log.info('another invocation holds the feed lease; skipping this run', { feedId });
    return { kind: 'lease-held', lease: undefined };
  }
  ctx.counters.paceDelayMs = lease.state.paceDelayMs ?? 0;
  const notBefore = lease.state.authRetryNotBefore;
  if (notBefore !== undefined && deps.now() < notBefore) {
    // The backoff holds only while the token parameter keeps the refused version: a rotated token (a new
    // version) is tried at once. Unknown versions (none recorded, SSM unreadable) keep the backoff.
    const failedVersion = lease.state.authFailedTokenVersion;
    const current = failedVersion === undefined ? undefined : await tokenVersion(ctx);
    if (current === undefined || current.version === failedVersion) {
      deps.log.warn('partner API rejected the token on earlier runs; waiting before trying again', {
        feedId,
        authFailures: lease.state.authFailures,
        failedTokenVersion: failedVersion,
        nextAttemptAt: new Date(notBefore).toISOString(),
      });
      return { kind: 'auth-backoff', lease };
    }
    deps.log.info('the token parameter has a new version since the 401; calling the partner API at once', {
      feedId,
      failedTokenVersion: failedVersion,
      tokenVersion: current.version,
    });
  }
  return pollPages(ctx, lease);
}

/** The token parameter read afresh; undefined without the port or when SSM cannot be read (logged). */
async function tokenVersion({
  deps,
  settings,
}: Run): Promise<{ version: number; changed: boolean } | undefined> {
  if (!deps.tokens) return undefined;
  try {
    return await deps.tokens.refresh();
  } catch (error) {
    // The adapter's errors name the parameter, never its value.
    deps.log.warn('could not read the token parameter afresh', {
      feedId: settings.feedId,
      error: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }
}

/**
 * The page loop, under the lease: fetch (the next page while this one is handed off), prepare, hand off,
 * commit. Returns how it ended; releases the lease and throws what it cannot handle.
 */
async function pollPages(ctx: Run, acquired: Lease): Promise<Ending> {
  const { deps, settings, run, counters } = ctx;
  const pageCap = settings.maxPagesPerRun ?? Number.POSITIVE_INFINITY;
  let lease = acquired;
  let request = baseQuery(settings, lease.state.pageId);
  // One recovery per run: never reset, or an always-expiring cursor would loop until the page limit.
  let recoveredThisRun = false;
  // One retry per run after a 401, and only with a token that changed in SSM since the request was sent.
  let retriedWithNewToken = false;
  let prefetched: Promise<FetchResult> | undefined;
  try {
    for (;;) {
      if (counters.pages >= pageCap) return { kind: 'page-limit', lease };
      if (!prefetched && deps.now() >= run.deadline) return { kind: 'out-of-time', lease };
      const result = await (prefetched ?? fetchPage(ctx, request));
      prefetched = undefined;
      if (!result.ok) {
        if (result.error instanceof CursorExpiredError && !recoveredThisRun) {
          recoveredThisRun = true;
          request = recover(ctx, lease);
          continue;
        }
        if (result.error instanceof AuthenticationError) {
          const token = await tokenVersion(ctx);
          if (token?.changed && !retriedWithNewToken) {
            retriedWithNewToken = true;
            deps.log.info(
              'partner API rejected the token, and SSM holds a new one; retrying the request once',
              {
                feedId: settings.feedId,
                tokenVersion: token.version,
              },
            );
            continue;
          }
          return { kind: 'auth-failed', lease: await authFailed(ctx, lease, token?.version) };
        }
        return { kind: fetchFailure(ctx, result.error), lease };
      }

      counters.pages += 1;
      counters.paceDelayMs = nextPaceDelayMs(counters.paceDelayMs, result.rateLimited);
      deps.metrics.count('PagesFetched');
      const step = nextStep(settings, request, result.page);
      if (!step.stop) prefetched = prefetchNext(ctx, step.query, pageCap);
      lease = await commitPage(ctx, lease, request, result);
      if (step.stop) return { kind: stopped(ctx, step.stop, result.page), lease };
      request = step.query;
    }
  } catch (error) {
    if (error instanceof LeaseLostError) {
      deps.log.error('lost the feed lease mid-run; another invocation continues from the committed cursor', {
        feedId: settings.feedId,
      });
      return { kind: 'lease-lost', lease: undefined };
    }
    await releaseQuietly(ctx, lease, 'error');
    throw error;
  }
}

/** One page request, counted and traced; never rejects (a failure is its result). */
function fetchPage(ctx: Run, query: OrderUpdatesQuery): Promise<FetchResult> {
  const { deps, settings, run, counters } = ctx;
  const { metrics, log } = deps;
  let rateLimited = false;
  // A span per page request, retries and waits included (details only: the page's own span annotates).
  const traced = (deps.tracing ?? NO_TRACING).span('### partner fetch', {}, async (span) => {
    span.detail('page', counters.pages + 1);
    const page = await deps.partner.getOrderUpdates(query, {
      deadline: run.requestDeadline ?? run.deadline,
      onRetry: (event) => {
        rateLimited ||= event.kind === 'rate-limited';
        if (event.kind === 'rate-limited') counters.rateLimitWaits += 1;
        else counters.partnerRetries += 1;
        metrics.count(event.kind === 'rate-limited' ? 'RateLimitWaits' : 'PartnerRetries');
        log.warn('partner API call will be retried', { feedId: settings.feedId, ...event });
      },
    });
    span.detail('versions', page.data.length);
    span.detail('rateLimited', rateLimited);
    return page;
  });
  return traced.then(
    (page) => ({ ok: true as const, page, fetchedAt: deps.now(), rateLimited }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

type Step =
  | { stop: 'caught-up' | 'missing-next-page-id' | 'stuck-cursor' }
  | { stop?: undefined; query: OrderUpdatesQuery };

/**
 * After a page: the next request, or why the run stops once the page is committed. hasMore without a
 * nextPageId breaks rule 1: where to go is not guessed. An empty page handing back the cursor it was asked
 * with would come back again (a repeated page *with* data is rule 6's repeat: go on, it is absorbed).
 */
function nextStep(settings: PollerConfig, request: OrderUpdatesQuery, page: RawPage): Step {
  if (!page.hasMore) return { stop: 'caught-up' };
  if (page.nextPageId === undefined) return { stop: 'missing-next-page-id' };
  if (page.data.length === 0 && page.nextPageId === request.pageId) return { stop: 'stuck-cursor' };
  return { query: baseQuery(settings, page.nextPageId) };
}

/**
 * Starts fetching the next page while this one is handed off: what keeps a catch-up at the partner's pace.
 * Not at the page cap, nor when waiting out the feed's own pace (it rises after a 429, nextPaceDelayMs) would
 * pass the deadline.
 */
function prefetchNext(ctx: Run, query: OrderUpdatesQuery, pageCap: number): Promise<FetchResult> | undefined {
  const { deps, run, counters } = ctx;
  if (counters.pages >= pageCap || deps.now() + counters.paceDelayMs >= run.deadline) return undefined;
  if (counters.paceDelayMs <= 0) return fetchPage(ctx, query);
  return (deps.sleep ?? sleep)(counters.paceDelayMs).then(() => fetchPage(ctx, query));
}

/**
 * Normalises the page, then in one span hands it off and commits its cursor: what must be durable before the
 * cursor moves (the next page's fetch, already started, is outside it). Publishing and quarantining must both
 * be durable before the commit. The span's correlation id is the messages' own.
 */
function commitPage(
  { deps, settings, run, counters }: Run,
  held: Lease,
  request: OrderUpdatesQuery,
  { page, fetchedAt }: { page: RawPage; fetchedAt: number },
): Promise<Lease> {
  const { feedId } = settings;
  const correlationId = pollCorrelationId(run.owner, counters.pages);
  const prepared = preparePage(page.data, {
    feedId,
    pageId: request.pageId ?? null,
    fetchedAt: new Date(fetchedAt).toISOString(),
    correlationId,
    maxMessageBytes: deps.maxMessageBytes ?? SQS_MAX_MESSAGE_BYTES,
  });
  const { messages, quarantined } = prepared;
  return (deps.tracing ?? NO_TRACING).span(
    '### page',
    { feedId, page: counters.pages, correlationId },
    async (span) => {
      span.detail('versions', page.data.length);
      const quarantining = Promise.all(quarantined.map((record) => deps.quarantine.put(record)));
      await Promise.all([deps.publisher.publish(messages), quarantining]);
      logHandOff(deps, feedId, correlationId, prepared);
      counters.versionsPublished += messages.length;
      counters.quarantined += quarantined.length;
      span.detail('versionsPublished', messages.length);
      span.detail('quarantined', quarantined.length);
      return deps.cursorStore.commit(held, {
        // No nextPageId (an empty stream, rule 2): stay at the cursor this page was asked for. After a
        // rule-5 recovery that is none, so the expired cursor is cleared instead of saved again.
        pageId: page.nextPageId ?? request.pageId,
        highWaterMark: highWaterMark([held.state.highWaterMark, prepared.highWaterMark], fetchedAt),
        ...(page.hasMore ? {} : { lastCaughtUpAt: new Date(deps.now()).toISOString() }),
        ...(held.state.authFailures > 0 ? { clearAuthFailures: true } : {}),
        paceDelayMs: counters.paceDelayMs,
      });
    },
  );
}

/** Counts and logs a run stopped by its last page (its data is published and committed either way). */
function stopped({ deps, settings }: Run, kind: PollOutcomeKind, page: RawPage): PollOutcomeKind {
  const { feedId } = settings;
  if (kind === 'missing-next-page-id') {
    deps.metrics.count('MissingNextPageId');
    deps.log.warn('page says hasMore but carries no nextPageId; kept its data, ending the run', { feedId });
  } else if (kind === 'stuck-cursor') {
    // Asking again would get the same page back: end the run instead of hammering the partner.
    deps.metrics.count('StuckCursor');
    deps.log.warn('partner answered hasMore with the cursor it was sent; ending the run', {
      feedId,
      versions: page.data.length,
    });
  }
  return kind;
}

/**
 * Pagination rule 5 after a 404 `pageId not found`: repeat without pageId, optionally bounded by the last
 * progress minus a lookback. The mark is never trusted past now: a future fromTimestamp would be answered
 * empty forever.
 */
function recover({ deps, settings, counters }: Run, lease: Lease): OrderUpdatesQuery {
  counters.cursorRecoveries += 1;
  deps.metrics.count('CursorRecoveries');
  const request = baseQuery(settings, undefined);
  const { highWaterMark } = lease.state;
  if (settings.recoveryLookbackMinutes !== undefined && highWaterMark !== undefined) {
    const from = Math.min(Date.parse(highWaterMark), deps.now()) - settings.recoveryLookbackMinutes * 60_000;
    request.fromTimestamp = new Date(from).toISOString();
  }
  deps.log.warn('stored cursor expired (404 pageId not found); restarting the stream per pagination rule 5', {
    feedId: settings.feedId,
    fromTimestamp: request.fromTimestamp,
  });
  return request;
}

/**
 * A 401: recorded on the cursor item with the refused token parameter version and the next attempt's time
 * (doubling per consecutive 401 with that version, capped; a new version starts again from the first wait).
 */
async function authFailed(
  { deps, settings }: Run,
  lease: Lease,
  tokenVersion: number | undefined,
): Promise<Lease> {
  deps.metrics.count('AuthFailures');
  const sameToken = lease.state.authFailedTokenVersion === tokenVersion;
  const failures = sameToken ? lease.state.authFailures : 0;
  const waitMs = Math.min(settings.authBackoff.maxMs, settings.authBackoff.initialMs * 2 ** failures);
  const retryNotBefore = deps.now() + waitMs;
  const recorded = await deps.cursorStore.recordAuthFailure(lease, {
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
  return recorded;
}

/** How any other failed request ends the run; what is not a partner's "later" is thrown. */
function fetchFailure({ deps, settings, counters }: Run, error: unknown): PollOutcomeKind {
  const { feedId } = settings;
  if (error instanceof CursorExpiredError) {
    // The spec's expired-cursor scenario re-expires on every restart: a loop here would never end.
    deps.log.warn('cursor expired again right after recovery; ending the run, a later run retries', {
      feedId,
    });
    return 'cursor-expired-again';
  }
  if (error instanceof RetryLaterError && error.deadlinePassed && counters.pages > 0) {
    // The run's time ran out with the next page (usually the prefetch) still on its way: nothing of it
    // was published, the cursor is that page's; the next run asks again. A run that ends like this has
    // made progress, so it may hand over at once (self-continuation) like any run out of time.
    deps.log.info('run out of time with a page request in flight; the next run repeats it', { feedId });
    return 'out-of-time';
  }
  if (error instanceof RetryLaterError) {
    deps.log.warn('partner API asked us to come back later; the next run repeats the request', {
      feedId,
      reason: error.reason,
      statusCode: error.statusCode,
      retryAfterMs: error.retryAfterMs,
    });
    return 'retry-later';
  }
  throw error;
}

/** Metrics and log lines of a page handed off. */
function logHandOff(deps: PollDeps, feedId: string, correlationId: string, prepared: PreparedPage): void {
  if (prepared.messages.length > 0) deps.metrics.count('VersionsPublished', prepared.messages.length);
  // One line per page: the correlation id its messages carry, so a message leads to this line and run.
  deps.log.info('page handed off', {
    feedId,
    correlationId,
    versionsPublished: prepared.messages.length,
    quarantined: prepared.quarantined.length,
  });
  if (prepared.quarantined.length > 0) {
    deps.metrics.count('RecordsQuarantined', prepared.quarantined.length);
    for (const record of prepared.quarantined) {
      deps.log.warn('record quarantined', {
        feedId,
        reason: record.reason,
        orderId: record.orderId,
        version: record.version,
        pageId: record.pageId,
        correlationId,
      });
    }
  }
  if (prepared.oversized > 0) deps.metrics.count('OversizedRecords', prepared.oversized);
  // Findings (schema drift, consistency-rule violations) travel in the messages; operators see them here:
  // a count per kind, and one line per record naming the order, version and codes (no customer data).
  for (const record of prepared.withFindings) {
    for (const code of record.codes) deps.metrics.count(findingMetricName(code));
    deps.log.warn('order version has findings', {
      feedId,
      orderId: record.orderId,
      version: record.version,
      findingCodes: record.codes,
      correlationId,
    });
  }
}

/** `payments-sum-mismatch` → `FindingPaymentsSumMismatch`: one metric per finding kind (a fixed set). */
export function findingMetricName(code: string): FindingMetricName {
  const pascal = code
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0]?.toUpperCase() + part.slice(1))
    .join('');
  return `Finding${pascal}`;
}

function baseQuery(settings: PollerConfig, pageId: string | undefined): OrderUpdatesQuery {
  return {
    ...(pageId === undefined ? {} : { pageId }),
    pageSize: settings.pageSize,
    ...(settings.vendorIds?.length ? { vendorIds: settings.vendorIds } : {}),
    ...(settings.orderIds?.length ? { orderIds: settings.orderIds } : {}),
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
 * The feed's own pace under rate limiting, AIMD as TCP does: the delay between page requests doubles on
 * every rate-limited page (from 250 ms, up to 30 s) and falls by 50 ms after every page served without a
 * 429, so a feed that keeps hitting the partner's limit settles just below it instead of spending its run
 * waiting out 429s (each of which the client honours on its own). Kept on the cursor item across runs.
 */
export function nextPaceDelayMs(currentMs: number, rateLimited: boolean): number {
  if (rateLimited) return Math.min(30_000, Math.round(currentMs <= 0 ? 250 : currentMs * 2));
  return Math.max(0, currentMs - 50);
}

/**
 * Gives the lease up, recording how the run ended (`outcome`) on the cursor item; with `next`, hands it over
 * to that continuation for the lease grace. False when the release failed.
 */
async function releaseQuietly(
  { deps, settings }: Run,
  lease: Lease,
  outcome: string,
  next?: ContinuationEvent,
): Promise<boolean> {
  const now = deps.now();
  try {
    const link = chainLinkOf(next);
    const handOver = link && { ...link, expiresAt: now + settings.leaseGraceMs };
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
