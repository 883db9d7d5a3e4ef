import type { OutgoingMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import type { ContinuationEvent } from './continuation.js';

/** What pollFeed needs of the poller's configuration (poller/config.ts reads it from the environment). */
export interface PollSettings {
  feedId: string;
  enabled: boolean;
  pageSize: number;
  /** Undefined: no page cap; the run ends when caught up or out of time. */
  maxPagesPerRun: number | undefined;
  /** The partner client's cap on a 200 body; a larger page is asked again smaller (page-size.ts). */
  maxPageBodyBytes: number;
  /** Runs that may follow one another at once while a backlog lasts (0: every run waits for the schedule). */
  maxContinuations: number;
  minAgeMinutes: number | undefined;
  vendorIds: string[] | undefined;
  recoveryLookbackMinutes: number | undefined;
  /** How long the lease outlives the invocation's deadline: what a crashed run blocks the feed beyond it. */
  leaseGraceMs: number;
  authBackoff: { initialMs: number; maxMs: number };
}

/** The cursor item's state, as read when the lease was taken. */
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

/** A link of a feed's continuation chain: the chain's id and the position of a run in it (1, 2, …). */
export interface ChainLink {
  chainId: string;
  step: number;
}

/** A 401 run: consecutive 401s with this token version (this one included), and when to try again. */
export interface AuthFailure {
  failures: number;
  retryNotBefore: number;
  /** undefined: the token parameter could not be read. */
  tokenVersion: number | undefined;
}

export interface CursorStore {
  /** The lease until `expiresAt`, or undefined when held; a continuation only at its handed-over chain step. */
  acquire(
    feedId: string,
    owner: string,
    nowMs: number,
    expiresAt: number,
    chain?: ChainLink,
  ): Promise<Lease | undefined>;
  /** Writes the cursor under the lease and the fencing revision. Throws LeaseLostError if either moved. */
  commit(lease: Lease, commit: CursorCommit): Promise<Lease>;
  recordAuthFailure(lease: Lease, failure: AuthFailure): Promise<Lease>;
  /** Gives the lease up early (or hands it over); losing the lease meanwhile is not an error. */
  release(
    lease: Lease,
    lastRun?: { outcome: string; at: number },
    handOver?: ChainLink & { expiresAt: number },
  ): Promise<void>;
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

/** Starts the next run of the same feed at once (self-continuation); AWS: an async self-invoke. */
export interface Continuation {
  request(event: ContinuationEvent, functionArn: string): Promise<void>;
}
