// Public interface of the partner API simulator (see README "Partner API simulator").
// Implemented in ./server.ts; `startSimulator` is exported from ./index.ts.
import type { TokenRateLimitOptions } from './token-rate-limit.js';

export const SCENARIO_IDS = [
  'test-authentication',
  'test-invalid-token',
  'test-pagination',
  'test-rate-limit',
  'test-transient-error',
  'test-expired-page-id',
  'test-empty-stream',
  'test-order-lifecycle',
  'test-versioning',
  'test-out-of-order-versions',
  'test-items-and-options',
  'test-substitutions',
  'test-price-adjustments',
  'test-vouchers',
  'test-payments',
  'test-delivery',
  'test-multi-location',
] as const;
export type ScenarioId = (typeof SCENARIO_IDS)[number];

/**
 * Partners nobody scripted (issue 24), served like the spec's scenarios under /{id}/v1 so that anyone can try
 * them (`npm start -- --scenario large-orders`); not part of the spec, so `npm run verify` leaves them out.
 */
export const HOSTILE_SCENARIO_IDS = [
  'large-orders',
  'trickle',
  'redirect',
  'html-200',
  'cursor-cycle',
  'record-flood',
  'over-long-values',
  'deep-expiry',
] as const;
export type HostileScenarioId = (typeof HOSTILE_SCENARIO_IDS)[number];

/** Every scenario the simulator serves: the spec's, then the hostile ones. */
export const ALL_SCENARIO_IDS = [...SCENARIO_IDS, ...HOSTILE_SCENARIO_IDS] as const;
export type AnyScenarioId = ScenarioId | HostileScenarioId;

export interface GeneratedFeedOptions {
  /** Same seed, same feed. */
  seed: number;
  /** Number of distinct orders; each gets 1..N versions. */
  orders: number;
  /** Number of vendor locations (vendorId `vendor-<n>`). */
  vendors?: number;
  /** Currencies to draw from (each order has one). Default ['EUR']. */
  currencies?: string[];
}

/** Fault injection for the generated feed under /v1 (scenario prefixes follow the spec exactly). */
export interface FaultOptions {
  /** Seed of the fault dice (independent of the feed seed). */
  seed: number;
  /** Probability per feed request of a 429. Retry-After alternates delta-seconds and HTTP-date forms. */
  rateLimit?: number;
  /** Seconds announced in Retry-After (default 1). */
  retryAfterSeconds?: number;
  /** Probability per request of a 5xx (500/502/503, random); `serverErrorBurst` in a row (default 1). */
  serverError?: number;
  serverErrorBurst?: number;
  /** Probability per request of a destroyed socket (connection reset) with no response. */
  connectionReset?: number;
  /** Probability per request of a delay of `slowMs` before answering (default 200 ms). */
  slow?: number;
  slowMs?: number;
  /** Probability per page of answering a cursor with the page *before* it again (a repeated page). */
  repeatPage?: number;
  /** Probability per page that a cursor answers 404 `pageId not found` (an expired cursor). */
  expireCursor?: number;
}

export interface SimulatorOptions {
  /** Default 0: a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The bearer token the simulator accepts. */
  token: string;
  /** Further accepted tokens (e.g. to show that stateful scenarios keep their progress per token). */
  additionalTokens?: string[];
  /** Production-like feed served under /v1 (no scenario prefix). Absent: /v1 serves an empty stream. */
  feed?: GeneratedFeedOptions & {
    /** Versions duplicated / swapped out of order within the stream (fractions 0..1, seeded). */
    duplicateVersions?: number;
    outOfOrderVersions?: number;
    /**
     * Event time (epoch ms) of the last stream entry. Default: 3 hours before start, so minAgeMinutes up
     * to 180 hides nothing; set it closer to now to see minAgeMinutes hide the newest entries.
     */
    endsAt?: number;
  };
  faults?: FaultOptions;
  /** Inactivity after which a stateful scenario forgets its fault progress (default 3 minutes). */
  scenarioStateTtlMs?: number;
  /** Retry-After seconds for the test-rate-limit scenario (default 1). */
  scenarioRetryAfterSeconds?: number;
  /**
   * Every request is answered this long after it arrived (default 0): the partner's own latency, so a
   * benchmark can make the partner, not this machine, the bottleneck. Requests are served concurrently.
   */
  latencyMs?: number;
  /**
   * The partner's limit per token (./token-rate-limit.ts): a bucket of `requestsPerSecond` holding `burst`;
   * empty → 429 with Retry-After, on every path (generated feed and scenarios). Absent: no limit.
   */
  tokenRateLimit?: TokenRateLimitOptions;
}

export interface ExpectedOrder {
  id: number;
  version: number;
  status: 'placed' | 'rejected' | 'accepted' | 'cancelled';
  vendorId: string;
  total: { amount: number; currency: string };
}

export interface ExpectedSale {
  vendorId: string;
  currency: string;
  count: number;
  amount: number;
}

/** What a correct ingester ends with after draining the generated feed. */
export interface ExpectedState {
  /** Latest (highest) version of every order, by id. */
  orders: Map<number, ExpectedOrder>;
  /** Orders whose latest version is `accepted`, per (vendorId, currency), sorted by vendorId then currency. */
  sales: ExpectedSale[];
  /** Distinct (orderId, version) pairs in the stream. */
  distinctVersions: number;
}

export interface RequestLogEntry {
  method: string;
  /** Path and query exactly as received. */
  url: string;
  /** Value of the Authorization header, if any (tests check the token travelled only there). */
  authorization: string | undefined;
  /** HTTP status answered; 0 for a connection reset (no response). */
  status: number;
  /** The fault injected, if any (scenario faults included: test-rate-limit, test-transient-error, test-expired-page-id). */
  fault?:
    | 'rate-limit'
    | 'server-error'
    | 'connection-reset'
    | 'slow'
    | 'repeat-page'
    | 'expire-cursor'
    | 'trickle'
    | 'redirect'
    | 'html'
    | 'over-long-cursor';
}

export interface RunningSimulator {
  /** e.g. http://127.0.0.1:43121 — append `/v1/...` or `/<scenario>/v1/...`. */
  readonly url: string;
  readonly requests: RequestLogEntry[];
  expected(): ExpectedState;
  /** Simulate retention: cursors pointing before this fraction of the stream answer 404. */
  purgeBefore(fraction: number): void;
  /** Counts of injected faults by kind. */
  faultCounts(): Record<string, number>;
  /** Order versions in every page answered so far, repeated pages and duplicated versions included. */
  versionsServed(): number;
  close(): Promise<void>;
}
