// Ports of the poll use case. Flow: schedule → poller handler → pollFeed → (CursorStore, PartnerApi,
// OrderVersionPublisher, Quarantine, Tracing). AWS adapters live in ../adapters (Tracing's in
// ../observability); tests use in-memory fakes.

import type { OutgoingMessage } from '../contract/order-version-message.js';
import type { Int64 } from '../model/int64.js';
import type { ContinuationEvent } from './continuation.js';

/** The cursor item's state, as read when the lease was taken. */
export interface CursorState {
  /** Cursor to resume from; undefined: from the start of the stream. */
  pageId: string | undefined;
  /** Fencing revision: bumped by every write; a commit must carry the revision it read. */
  revision: number;
  /** Highest order event timestamp seen in committed pages (UTC ISO), used to bound a cursor recovery. */
  highWaterMark: string | undefined;
  lastCaughtUpAt: string | undefined;
  /** When the cursor item was first created (UTC ISO): the lag reference before the first catch-up. */
  createdAt: string;
  /** Consecutive runs that ended in 401, and the earliest time the next run may call the API again. */
  authFailures: number;
  authRetryNotBefore: number | undefined;
  /** The feed's delay between page requests (AIMD under rate limiting), kept across runs. */
  paceDelayMs?: number;
}

export interface Lease {
  readonly feedId: string;
  readonly owner: string;
  readonly state: CursorState;
}

export interface CursorCommit {
  /** The next cursor; undefined keeps the stream's start (an empty stream has no cursor). */
  pageId: string | undefined;
  highWaterMark?: string;
  lastCaughtUpAt?: string;
  /** A successful page clears any auth backoff. */
  clearAuthFailures?: boolean;
  /** The feed's pace at this page, so the next run (or a continuation) starts from it. */
  paceDelayMs?: number;
}

export interface CursorStore {
  /** Takes the feed's lease, or returns undefined when another live invocation holds it. */
  acquire(feedId: string, owner: string, nowMs: number, leaseMs: number): Promise<Lease | undefined>;
  /** Writes the cursor under the lease and the fencing revision. Throws LeaseLostError if either moved. */
  commit(lease: Lease, commit: CursorCommit, nowMs: number, leaseMs: number): Promise<Lease>;
  /** Records a 401 run and when the next run may try again (under the lease). */
  recordAuthFailure(lease: Lease, retryNotBefore: number): Promise<Lease>;
  /**
   * Gives the lease up early, recording how the run ended (`npm run ops -- status` shows it); losing the lease
   * meanwhile is not an error.
   */
  release(lease: Lease, lastRun?: LastRun): Promise<void>;
}

/** How a run ended, kept on the cursor item when the run gives its lease up. */
export interface LastRun {
  /** The poll outcome's kind ('caught-up', 'out-of-time', 'retry-later', …). */
  outcome: string;
  /** When the run ended (epoch ms). */
  at: number;
}

export interface OrderVersionPublisher {
  /**
   * Sends every message to every subscribed queue. Resolves only when all are accepted by SQS;
   * throws PublishError otherwise (the caller then does not commit the page).
   */
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
  quarantinedAt: string;
}

export interface Quarantine {
  /** Stores the record durably under a key derived from its content, so a replay overwrites, never doubles. */
  put(record: QuarantinedRecord): Promise<string>;
}

/** Counters the use case emits; the handler maps them onto CloudWatch metrics. */
export interface PollMetrics {
  count(name: PollMetricName | FindingMetricName, value?: number): void;
}

/** One count per finding kind, e.g. `FindingUnknownField` (the kinds are a fixed set: bounded metrics). */
export type FindingMetricName = `Finding${string}`;

export type PollMetricName =
  | 'PagesFetched'
  | 'VersionsPublished'
  | 'RecordsQuarantined'
  | 'OversizedRecords'
  | 'PartnerRetries'
  | 'RateLimitWaits'
  | 'CursorRecoveries'
  | 'AuthFailures'
  | 'LeaseContended'
  | 'MissingNextPageId'
  | 'StuckCursor';

/** Starts the next run of the same feed at once (self-continuation); AWS: an async self-invoke. */
export interface Continuation {
  /** Starts `functionArn` (the poller itself) with `event`, asynchronously. */
  request(event: ContinuationEvent, functionArn: string): Promise<void>;
}
