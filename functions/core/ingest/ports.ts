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
  /**
   * The version of the token's SSM parameter that the partner refused (never the token or anything derived
   * from it): the backoff holds only while the parameter keeps this version.
   */
  authFailedTokenVersion?: number;
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

/** A link of a feed's continuation chain: the chain's id and the position of a run in it (1, 2, …). */
export interface ChainLink {
  chainId: string;
  step: number;
}

/** A 401 run, as recorded on the cursor item. */
export interface AuthFailure {
  /** Consecutive 401 runs with this token version, this one included. */
  failures: number;
  /** The earliest time the next run may call the partner again with the same token version (epoch ms). */
  retryNotBefore: number;
  /** The token parameter's version that was refused (undefined: it could not be read). */
  tokenVersion: number | undefined;
}

export interface CursorStore {
  /**
   * Takes the feed's lease until `expiresAt` (epoch ms; fixed for the run: commits do not extend it), or
   * returns undefined when another live invocation holds it. A scheduled run (`chain` undefined) ends any
   * chain recorded on the item; a continuation (`chain`) takes the lease only when the item says it is the
   * chain's next step (handed over to it by the run before), so a duplicated or retried event gets undefined.
   */
  acquire(
    feedId: string,
    owner: string,
    nowMs: number,
    expiresAt: number,
    chain?: ChainLink,
  ): Promise<Lease | undefined>;
  /** Writes the cursor under the lease and the fencing revision. Throws LeaseLostError if either moved. */
  commit(lease: Lease, commit: CursorCommit): Promise<Lease>;
  /** Records a 401 run and when the next run may try again (under the lease). */
  recordAuthFailure(lease: Lease, failure: AuthFailure): Promise<Lease>;
  /**
   * Gives the lease up early, recording how the run ended (`npm run ops -- status` shows it); losing the lease
   * meanwhile is not an error. With `handOver`, the lease passes to that continuation (held until
   * `handOver.expiresAt`, so a scheduled tick meanwhile ends at once); without, any chain ends.
   */
  release(lease: Lease, lastRun?: LastRun, handOver?: ChainLink & { expiresAt: number }): Promise<void>;
}

/**
 * The partner token's SSM parameter, as far as the use case needs it: its version, never its value.
 */
export interface TokenParameter {
  /**
   * Reads the parameter afresh (bypassing the cache, which it then holds): its current version, and whether
   * its value differs from the one cached before (the one the last request was sent with).
   */
  refresh(): Promise<{ version: number; changed: boolean }>;
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
