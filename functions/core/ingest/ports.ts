import type { OutgoingMessage } from '../contract/order-version-message.js';
import type { FeedState } from '../fleet/feed-config.js';
import type { Int64 } from '../model/int64.js';

/**
 * What one poll of a feed uses: its own settings (its registry row's `config`) with the deployment's
 * (poller/config.ts), combined by pollSettingsOf (poll-feed.ts).
 */
export interface PollSettings {
  feedId: string;
  tokenParameterName: string;
  partnerBaseUrl: string;
  pageSize: number;
  vendorIds: string[] | undefined;
  /** A reconcile feed's order ids (int64 as text); never set on a stream. */
  orderIds: string[] | undefined;
  /** Where a feed without a cursor starts (a first sync); undefined: the earliest retained entry. */
  fromTimestamp: string | undefined;
  minAgeMinutes: number | undefined;
  /** Undefined: no page cap; the run ends when caught up, out of time or at the end of its slice. */
  maxPagesPerRun: number | undefined;
  /** The partner client's cap on a 200 body; a larger page is asked again smaller (page-size.ts). */
  maxPageBodyBytes: number;
  recoveryLookbackMinutes: number | undefined;
  /** How long the lease outlives the invocation's deadline: what a crashed run blocks the feed beyond it. */
  leaseGraceMs: number;
  authBackoff: { initialMs: number; maxMs: number };
}

/** What of the deployment's settings a poll uses (poller/config.ts's PollerConfig has them all). */
export type PollDeployment = Pick<
  PollSettings,
  | 'partnerBaseUrl'
  | 'maxPagesPerRun'
  | 'maxPageBodyBytes'
  | 'recoveryLookbackMinutes'
  | 'leaseGraceMs'
  | 'authBackoff'
>;

/** The cursor item's state, as read before the run (or returned by its last write). */
export interface CursorState {
  /** Cursor to resume from; none: from the start of the stream. */
  pageId?: string;
  /** Fencing revision: bumped by every write; a commit must carry the revision it read. */
  revision: number;
  /** Highest order event timestamp seen in committed pages (UTC ISO), used to bound a cursor recovery. */
  highWaterMark?: string;
  lastCaughtUpAt?: string;
  /** When the cursor item was first created (UTC ISO): the lag reference before the first catch-up. */
  createdAt: string;
  /** Consecutive runs that ended in 401, and the earliest time the next run may call the API again. */
  authFailures: number;
  authRetryNotBefore?: number;
  /** The token parameter version the partner refused (never the token): the backoff holds while SSM keeps it. */
  authFailedTokenVersion?: number;
  /** The feed's delay between page requests (AIMD under rate limiting), kept across runs. */
  paceDelayMs?: number;
  /** The page size in use after a page over the body cap (below the configured one), kept across runs. */
  pageSize?: number;
  /** Hashes of the cursors the feed committed last (oldest first): its cycle memory (cursor-cycles.ts). */
  recentCursors?: string[];
  /** What of the stored cursor's page a run handed off before its time ran out (hand-off.ts). */
  partialPage?: PartialPage;
}

/** A page's first `records`, handed off; `digest` names their content, to skip them only on the same page. */
export interface PartialPage {
  records: number;
  digest: string;
}

export interface Lease {
  readonly feedId: string;
  readonly owner: string;
  readonly state: CursorState;
}

export interface CursorCommit {
  /** The next cursor; undefined keeps the stream's start (an empty stream has no cursor). */
  pageId: string | undefined;
  highWaterMark?: string | undefined;
  lastCaughtUpAt?: string;
  /** A successful page clears any auth backoff. */
  clearAuthFailures?: boolean;
  paceDelayMs?: number;
  /** undefined: back at the configured page size (the attribute is removed). */
  pageSize?: number | undefined;
  recentCursors?: string[];
  /** Set: the page at `pageId` is handed off in part; undefined removes it. */
  partialPage?: PartialPage | undefined;
}

/** The dispatch that started a run (its batch and time), recorded on the feed's item by the run. */
export interface DispatchMark {
  batchId: string;
  dispatchedAt: number;
}

/** A feed's item as read (strongly consistent) before its run: the cursor, the lease and the registry row. */
export interface FeedItem {
  feedId: string;
  state: CursorState;
  leaseOwner?: string;
  leaseExpiresAt?: number;
  /** The row's configuration as stored (unchecked: the poller checks it); undefined: not registered. */
  config?: unknown;
  feedState: FeedState;
}

/**
 * How a run that held no lease ended, in one write: an idle poll (the partner served nothing after the
 * cursor) or a run that stopped before any data (a failure, a 401, the backoff).
 */
export interface RunRecord {
  outcome: string;
  at: number;
  dispatch?: DispatchMark | undefined;
  /** Set for an idle poll: what a commit of its empty page would write (the cursor stays). */
  caughtUp?: {
    lastCaughtUpAt: string;
    paceDelayMs: number;
    /** undefined: back at the configured page size (removed). */
    pageSize: number | undefined;
  };
  /** A 401: the backoff, as recordAuthFailure writes it. */
  authFailure?: AuthFailure | undefined;
  /** A documented stop's reason (undefined removes an earlier one). */
  stopReason?: string | undefined;
}

/** How a leased run ended, written as it gives the lease up. */
export interface LastRun {
  outcome: string;
  at: number;
  /** A documented stop's reason (undefined removes an earlier one). */
  stopReason?: string | undefined;
}

/** A 401 run: consecutive 401s with this token version (this one included), and when to try again. */
export interface AuthFailure {
  failures: number;
  retryNotBefore: number;
  /** undefined: the token parameter could not be read. */
  tokenVersion: number | undefined;
}

export interface CursorStore {
  /** The items of `feedIds` that exist, strongly consistent (one read for a batch of feeds). */
  read(feedIds: readonly string[]): Promise<Map<string, FeedItem>>;
  /**
   * A run without a lease, recorded in one write fenced on the revision read and no live lease (bumping
   * the revision); false when the item moved meanwhile (a run took it, an operator moved the cursor): nothing
   * is written, and nothing was published.
   */
  record(feedId: string, revision: number, run: RunRecord): Promise<boolean>;
  /**
   * The lease until `expiresAt`, taken only if the item is still at `revision` (as read) with no live lease;
   * undefined otherwise. Records the dispatch that started the run.
   */
  acquire(
    feedId: string,
    owner: string,
    revision: number,
    nowMs: number,
    expiresAt: number,
    dispatch?: DispatchMark,
  ): Promise<Lease | undefined>;
  /** Writes the cursor under the lease and the fencing revision. Throws LeaseLostError if either moved. */
  commit(lease: Lease, commit: CursorCommit): Promise<Lease>;
  recordAuthFailure(lease: Lease, failure: AuthFailure): Promise<Lease>;
  /** Gives the lease up, recording how the run ended; losing the lease meanwhile is not an error. */
  release(lease: Lease, lastRun: LastRun): Promise<void>;
}

/** A feed's registry state as the poller moves it: a documented stop that only an operator can resume. */
export interface FeedStates {
  stop(feedId: string, reason: string, nowMs: number): Promise<void>;
}

/**
 * One parsed page at a time per invocation (its memory: functions/README.md, "Poller"): a turn is taken
 * before the client parses a 200 body and given back once the page is handed off.
 */
export interface PageTurns {
  take(): Promise<() => void>;
}

/** Asks the dispatcher for a dispatch now (a feed behind, feeds waiting); AWS: an async invoke. */
export interface DispatchRequests {
  request(requestedAt: number, by: string): Promise<void>;
  /** Says the batch ended (the dispatch counts it running until then); returns the due feeds the last dispatch left waiting. */
  end(batchId: string): Promise<number>;
}

/** The token's SSM parameter read afresh: its version (never its value), and whether the value changed. */
export interface TokenParameter {
  refresh(): Promise<{ version: number; changed: boolean }>;
}

/** Sends every message to every queue; throws PublishError unless all were accepted (no commit then). */
export interface OrderVersionPublisher {
  publish(messages: OutgoingMessage[]): Promise<void>;
}

export interface QuarantinedRecord {
  feedId: string;
  /** The cursor the page was requested with (null for the first page). */
  pageId: string | null;
  reason: string;
  issues: string[];
  orderId?: Int64;
  version?: Int64;
  raw: unknown;
  /** Set when the object holds several records of a page: their number, `raw` their list (hand-off.ts). */
  records?: number;
  quarantinedAt: string;
}

/** Stores a record durably under a key derived from its content, so a replay overwrites, never doubles. */
export interface Quarantine {
  put(record: QuarantinedRecord): Promise<string>;
}
