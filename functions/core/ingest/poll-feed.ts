// Use case: one scheduled poll of the partner's order-update stream.
//   1. take the feed's lease (cursor item, fenced by revision); skip while a 401 backoff is running
//   2. fetch pages from the stored cursor (the next page is fetched while the current one is published)
//   3. per page: normalise, publish every version to every queue, quarantine what cannot be published
//   4. only then commit that page's nextPageId; stop on hasMore false, the page limit or the time budget
// Crash anywhere and the next run repeats from the last committed cursor: versions may be published
// twice (the message contract says so, and the consumer's version guard absorbs it) but never lost.
import { pollCorrelationId, SQS_MAX_MESSAGE_BYTES } from '../contract/order-version-message.js';
import { NO_TRACING } from '../observability/tracing.js';
import { AuthenticationError, CursorExpiredError, RetryLaterError } from '../partner/errors.js';
import type { OrderUpdatesQuery, PartnerApi, RawPage } from '../partner/types.js';
import { LeaseLostError } from './errors.js';
import { nextPaceDelayMs } from './pace.js';
import type {
  CursorStore,
  FindingMetricName,
  LastRun,
  Lease,
  Log,
  OrderVersionPublisher,
  PollMetrics,
  Quarantine,
  Tracing,
} from './ports.js';
import { type PreparedPage, preparePage } from './prepare-page.js';

export interface PollSettings {
  feedId: string;
  pageSize: number;
  /** Pages one run fetches at most; undefined: no cap, the run ends when caught up or out of time. */
  maxPagesPerRun?: number;
  /** False: the feed is switched off; a run does nothing (not even take the lease). Default true. */
  enabled?: boolean;
  minAgeMinutes?: number;
  vendorIds?: string[];
  orderIds?: number[];
  /**
   * After an expired cursor, restart from (high-water mark − this many minutes) instead of the stream's
   * start. Undefined: replay from the earliest entry (nothing can be skipped, but the replay can be long).
   */
  recoveryLookbackMinutes?: number;
  maxMessageBytes?: number;
  /** Backoff across runs after a 401: first wait, doubled per consecutive failure, capped. */
  authBackoff: { initialMs: number; maxMs: number };
}

export interface PollRun {
  /**
   * Unique per invocation (the Lambda request id): the lease owner, and the run id of every message's
   * correlation id (`poll:<owner>:<page>`), so a message leads to this invocation's logs.
   */
  owner: string;
  /** Epoch ms after which no new page is requested (the handler leaves a margin to publish and commit). */
  deadline: number;
  /**
   * Epoch ms until which a page request already on its way may still be answered (default `deadline`). The
   * handler gives it half the safety margin: the page prefetched just before the deadline is then not thrown
   * away and asked again by the next run, and the other half still covers its publish and commit.
   */
  requestDeadline?: number;
  /** How long the lease lasts; longer than the invocation can live, so only a crash lets it lapse. */
  leaseMs: number;
}

export type PollOutcomeKind =
  | 'caught-up'
  | 'page-limit'
  | 'out-of-time'
  | 'retry-later'
  | 'cursor-expired-again'
  | 'lease-held'
  | 'auth-backoff'
  | 'auth-failed'
  | 'lease-lost'
  /** hasMore true with no nextPageId (breaks pagination rule 1): the page is kept, no cursor is guessed. */
  | 'missing-next-page-id'
  /** hasMore true, but the cursor did not move: the partner re-served the page it was asked for. */
  | 'stuck-cursor'
  /** The feed is switched off in the deployment's configuration (`enabled: false`): nothing was asked. */
  | 'disabled';

export interface PollOutcome {
  kind: PollOutcomeKind;
  /** True when the run should be reported as a failed invocation. */
  failed: boolean;
  pages: number;
  versionsPublished: number;
  quarantined: number;
  cursorRecoveries: number;
  /** Waits after a 5xx or a network failure, in this run. */
  partnerRetries: number;
  /** Waits after a 429, in this run. */
  rateLimitWaits: number;
  /** The feed's own delay between page requests at the end of the run (AIMD under rate limiting). */
  paceDelayMs: number;
  /** Seconds since the feed was last caught up, measured at the end of the run (lag). */
  secondsSinceCaughtUp: number | undefined;
  detail?: string;
}

export interface PollDeps {
  cursorStore: CursorStore;
  partner: PartnerApi;
  publisher: OrderVersionPublisher;
  quarantine: Quarantine;
  metrics: PollMetrics;
  log: Log;
  now: () => number;
  /** Waits between page requests when the feed paces itself (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** A span per page, from hand-off to commit (default: none). */
  tracing?: Tracing;
}

type FetchResult =
  | { ok: true; page: RawPage; fetchedAt: number; rateLimited: boolean }
  | { ok: false; error: unknown };

const timer = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function pollFeed(deps: PollDeps, settings: PollSettings, run: PollRun): Promise<PollOutcome> {
  const { cursorStore, log, metrics, now } = deps;
  const tracing = deps.tracing ?? NO_TRACING;
  const counters = {
    pages: 0,
    versionsPublished: 0,
    quarantined: 0,
    cursorRecoveries: 0,
    partnerRetries: 0,
    rateLimitWaits: 0,
  };
  const sleep = deps.sleep ?? timer;
  const pageCap = settings.maxPagesPerRun ?? Number.POSITIVE_INFINITY;
  let paceDelayMs = 0;
  if (settings.enabled === false) {
    log.info('feed is disabled; this run does nothing', { feedId: settings.feedId });
    return finish('disabled', false, undefined);
  }
  const acquired = await cursorStore.acquire(settings.feedId, run.owner, now(), run.leaseMs);
  if (!acquired) {
    metrics.count('LeaseContended');
    log.info('another invocation holds the feed lease; skipping this run', { feedId: settings.feedId });
    return finish('lease-held', false, undefined);
  }
  let lease: Lease = acquired;
  paceDelayMs = lease.state.paceDelayMs ?? 0;
  const notBefore = lease.state.authRetryNotBefore;
  if (notBefore !== undefined && now() < notBefore) {
    log.warn('partner API rejected the token on earlier runs; waiting before trying again', {
      feedId: settings.feedId,
      authFailures: lease.state.authFailures,
      nextAttemptAt: new Date(notBefore).toISOString(),
    });
    return finish('auth-backoff', false, lease);
  }

  let request = baseQuery(settings, lease.state.pageId);
  // One recovery per run: never reset, or an always-expiring cursor would loop until the page limit.
  let recoveredThisRun = false;
  let prefetched: Promise<FetchResult> | undefined;
  const fetchPage = (query: OrderUpdatesQuery): Promise<FetchResult> => {
    let rateLimited = false;
    // A span per page request, retries and waits included (details only: the page's own span annotates).
    const traced = tracing.span('### partner fetch', {}, async (span) => {
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
      (page) => ({ ok: true as const, page, fetchedAt: now(), rateLimited }),
      (error: unknown) => ({ ok: false as const, error }),
    );
  };
  // The feed's own pace: after a page that met a 429 the next request waits longer (see pace.ts).
  const pacedFetch = (query: OrderUpdatesQuery): Promise<FetchResult> =>
    paceDelayMs > 0 ? sleep(paceDelayMs).then(() => fetchPage(query)) : fetchPage(query);

  try {
    for (;;) {
      if (counters.pages >= pageCap) return finish('page-limit', false, lease);
      if (!prefetched && now() >= run.deadline) return finish('out-of-time', false, lease);
      const result = await (prefetched ?? fetchPage(request));
      prefetched = undefined;

      if (!result.ok) {
        const { error } = result;
        if (error instanceof CursorExpiredError) {
          if (recoveredThisRun) {
            // The spec's expired-cursor scenario re-expires on every restart: a loop here would never end.
            log.warn('cursor expired again right after recovery; ending the run, a later run retries', {
              feedId: settings.feedId,
            });
            return finish('cursor-expired-again', false, lease);
          }
          recoveredThisRun = true;
          counters.cursorRecoveries += 1;
          metrics.count('CursorRecoveries');
          request = recoveryQuery(settings, lease.state.highWaterMark, now());
          log.warn(
            'stored cursor expired (404 pageId not found); restarting the stream per pagination rule 5',
            {
              feedId: settings.feedId,
              fromTimestamp: request.fromTimestamp,
            },
          );
          continue;
        }
        if (error instanceof AuthenticationError) {
          metrics.count('AuthFailures');
          const failures = lease.state.authFailures;
          const waitMs = Math.min(settings.authBackoff.maxMs, settings.authBackoff.initialMs * 2 ** failures);
          lease = await cursorStore.recordAuthFailure(lease, now() + waitMs);
          log.error('partner API rejected the token (401 Unauthorized); rotate the token in SSM', {
            feedId: settings.feedId,
            consecutiveFailures: failures + 1,
            nextAttemptAt: new Date(now() + waitMs).toISOString(),
          });
          return finish('auth-failed', true, lease);
        }
        if (error instanceof RetryLaterError && error.deadlinePassed && counters.pages > 0) {
          // The run's time ran out with the next page (usually the prefetch) still on its way: nothing of it
          // was published, the cursor is that page's; the next run asks again. A run that ends like this has
          // made progress, so it may hand over at once (self-continuation) like any run out of time.
          log.info('run out of time with a page request in flight; the next run repeats it', {
            feedId: settings.feedId,
          });
          return finish('out-of-time', false, lease);
        }
        if (error instanceof RetryLaterError) {
          log.warn('partner API asked us to come back later; the next run repeats the request', {
            feedId: settings.feedId,
            reason: error.reason,
            statusCode: error.statusCode,
            retryAfterMs: error.retryAfterMs,
          });
          return finish('retry-later', false, lease);
        }
        throw error;
      }

      const { page, fetchedAt } = result;
      counters.pages += 1;
      paceDelayMs = nextPaceDelayMs(paceDelayMs, { rateLimited: result.rateLimited });
      metrics.count('PagesFetched');
      const correlationId = pollCorrelationId(run.owner, counters.pages);
      const prepared = preparePage(page.data, {
        feedId: settings.feedId,
        pageId: request.pageId ?? null,
        fetchedAt: new Date(fetchedAt).toISOString(),
        correlationId,
        maxMessageBytes: settings.maxMessageBytes ?? SQS_MAX_MESSAGE_BYTES,
      });

      const nextRequest =
        page.nextPageId === undefined ? undefined : { ...baseQuery(settings, page.nextPageId) };
      // A page that brings nothing and leaves the cursor where it was: asking again gets the same answer.
      // (A repeated page *with* data and the same cursor is rule 6's repeat: go on, it is absorbed.)
      const cursorStuck =
        page.hasMore &&
        page.data.length === 0 &&
        nextRequest !== undefined &&
        page.nextPageId === request.pageId;
      if (
        page.hasMore &&
        nextRequest &&
        !cursorStuck &&
        counters.pages < pageCap &&
        now() + paceDelayMs < run.deadline
      ) {
        prefetched = pacedFetch(nextRequest);
      }

      const caughtUp = !page.hasMore;
      const held = lease;
      const pageRequested = request;
      // The page's span covers what must be durable before its cursor moves: hand-off, then commit (the
      // next page's fetch, started above, is outside it). Its correlation id is the messages' own.
      lease = await tracing.span(
        '### page',
        { feedId: settings.feedId, page: counters.pages, correlationId },
        async (span) => {
          span.detail('versions', page.data.length);
          await handOff(deps, prepared, settings.feedId, correlationId);
          counters.versionsPublished += prepared.messages.length;
          counters.quarantined += prepared.quarantined.length;
          span.detail('versionsPublished', prepared.messages.length);
          span.detail('quarantined', prepared.quarantined.length);
          return cursorStore.commit(
            held,
            {
              // No nextPageId (an empty stream, rule 2): stay at the cursor this page was asked for. After a
              // rule-5 recovery that is none, so the expired cursor is cleared instead of saved again.
              pageId: page.nextPageId ?? pageRequested.pageId,
              ...maxHighWaterMark(held.state.highWaterMark, prepared, fetchedAt),
              ...(caughtUp ? { lastCaughtUpAt: new Date(now()).toISOString() } : {}),
              ...(held.state.authFailures > 0 ? { clearAuthFailures: true } : {}),
              paceDelayMs,
            },
            now(),
            run.leaseMs,
          );
        },
      );
      if (caughtUp) return finish('caught-up', false, lease);
      if (!nextRequest) {
        // hasMore true without a cursor breaks pagination rule 1: the page's data is published and the
        // cursor stays where it was (a later run asks again); where to go next is not guessed.
        metrics.count('MissingNextPageId');
        log.warn('page says hasMore but carries no nextPageId; kept its data, ending the run', {
          feedId: settings.feedId,
        });
        return finish('missing-next-page-id', false, lease);
      }
      if (cursorStuck) {
        // Asking again would get the same page back: end the run instead of hammering the partner.
        metrics.count('StuckCursor');
        log.warn('partner answered hasMore with the cursor it was sent; ending the run', {
          feedId: settings.feedId,
          versions: page.data.length,
        });
        return finish('stuck-cursor', false, lease);
      }
      request = nextRequest;
    }
  } catch (error) {
    if (error instanceof LeaseLostError) {
      log.error('lost the feed lease mid-run; another invocation continues from the committed cursor', {
        feedId: settings.feedId,
      });
      return finish('lease-lost', true, undefined);
    }
    await releaseQuietly(cursorStore, lease, log, { outcome: 'error', at: now() });
    throw error;
  }

  async function finish(
    kind: PollOutcomeKind,
    failed: boolean,
    held: Lease | undefined,
  ): Promise<PollOutcome> {
    if (held) await releaseQuietly(cursorStore, held, log, { outcome: kind, at: now() });
    const reference = held?.state.lastCaughtUpAt ?? held?.state.createdAt;
    const secondsSinceCaughtUp =
      reference === undefined ? undefined : Math.max(0, Math.round((now() - Date.parse(reference)) / 1000));
    return { kind, failed, ...counters, paceDelayMs, secondsSinceCaughtUp };
  }
}

/** Publishing and quarantining must both be durable before the page's cursor may be committed. */
async function handOff(
  deps: PollDeps,
  prepared: PreparedPage,
  feedId: string,
  correlationId: string,
): Promise<void> {
  const quarantining = Promise.all(prepared.quarantined.map((record) => deps.quarantine.put(record)));
  await Promise.all([deps.publisher.publish(prepared.messages), quarantining]);
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

function baseQuery(settings: PollSettings, pageId: string | undefined): OrderUpdatesQuery {
  return {
    ...(pageId === undefined ? {} : { pageId }),
    pageSize: settings.pageSize,
    ...(settings.vendorIds?.length ? { vendorIds: settings.vendorIds } : {}),
    ...(settings.orderIds?.length ? { orderIds: settings.orderIds } : {}),
    ...(settings.minAgeMinutes === undefined ? {} : { minAgeMinutes: settings.minAgeMinutes }),
  };
}

/**
 * Pagination rule 5: repeat without pageId, optionally bounded by the last progress minus a lookback. The
 * mark is never trusted past now: a future fromTimestamp would be answered empty forever.
 */
export function recoveryQuery(
  settings: PollSettings,
  highWaterMark: string | undefined,
  nowMs: number,
): OrderUpdatesQuery {
  const query = baseQuery(settings, undefined);
  if (settings.recoveryLookbackMinutes === undefined || highWaterMark === undefined) return query;
  const mark = Math.min(Date.parse(highWaterMark), nowMs);
  const from = mark - settings.recoveryLookbackMinutes * 60_000;
  return { ...query, fromTimestamp: new Date(from).toISOString() };
}

/**
 * The newest order timestamp of committed pages, capped at the page's fetch time: one record dated in the
 * future (a 9999-12-31 sentinel, a skewed clock) must not move the mark there, or a bounded recovery would
 * ask for the future and see an empty stream forever.
 */
export function maxHighWaterMark(
  current: string | undefined,
  prepared: Pick<PreparedPage, 'highWaterMark'>,
  fetchedAtMs: number,
): { highWaterMark?: string } {
  const fetchedAt = new Date(fetchedAtMs).toISOString();
  const capped = (mark: string | undefined) => (mark !== undefined && mark > fetchedAt ? fetchedAt : mark);
  const candidate = capped(prepared.highWaterMark);
  const stored = capped(current);
  if (candidate === undefined) return stored === undefined ? {} : { highWaterMark: stored };
  if (stored === undefined || candidate > stored) return { highWaterMark: candidate };
  return { highWaterMark: stored };
}

async function releaseQuietly(store: CursorStore, lease: Lease, log: Log, lastRun: LastRun): Promise<void> {
  try {
    await store.release(lease, lastRun);
  } catch (error) {
    // The lease expires on its own; failing to release early only delays the next run.
    log.warn('could not release the feed lease; it will expire on its own', {
      feedId: lease.feedId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
