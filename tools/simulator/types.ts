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

/**
 * One named scenario per fault of the catalogue (issue 31, ./faults.ts) that no other scenario shows: ordinary
 * data, and the fault on the first page requests (or on all of them), so that anyone can see what a partner
 * doing it looks like (`npm start -- --scenario gzip`). Not part of the spec, so `npm run verify` leaves them out.
 */
export const FAULT_SCENARIO_IDS = [
  'gzip',
  'deflate',
  'brotli',
  'gzip-bomb',
  'byte-order-mark',
  'slow-headers',
  'far-future-retry-after',
  'skewed-clock',
  'retry-after-forms',
  'server-errors',
  'keep-alive-drop',
  'reset-after-headers',
  'truncated-body',
  'truncated-json',
  'endless-body',
  'non-page-200',
  'page-flood',
  'outage',
  'escape-heavy',
  'giant-order',
] as const;
export type FaultScenarioId = (typeof FAULT_SCENARIO_IDS)[number];

/** Every scenario the simulator serves: the spec's, then the hostile ones, then the named faults. */
export const ALL_SCENARIO_IDS = [...SCENARIO_IDS, ...HOSTILE_SCENARIO_IDS, ...FAULT_SCENARIO_IDS] as const;
export type AnyScenarioId = ScenarioId | HostileScenarioId | FaultScenarioId;

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

/** The forms a 429's Retry-After takes (RFC 9110 §10.2.3 and what partners send besides). */
export const RETRY_AFTER_FORMS = [
  'seconds',
  'http-date',
  'past-date',
  'far-future-seconds',
  'far-future-date',
  'junk',
  'absent',
] as const;
export type RetryAfterForm = (typeof RETRY_AFTER_FORMS)[number];

/** What a 5xx carries: a JSON Error, a proxy's HTML page, nothing, or a JSON Error echoing the request's token. */
export const SERVER_ERROR_BODIES = ['json', 'html', 'empty', 'token-echo'] as const;
export type ServerErrorBody = (typeof SERVER_ERROR_BODIES)[number];

/** 200s that are no Page: a maintenance page, nothing, text, and JSON of the wrong shape. */
export const NON_PAGE_BODIES = [
  'html',
  'empty',
  'text',
  'json-array',
  'json-null',
  'json-object',
  'wrong-types',
] as const;
export type NonPageBody = (typeof NON_PAGE_BODIES)[number];

/** Content codings the simulator may answer with whatever the request's Accept-Encoding (RFC 9110 §12.5.3). */
export const CODINGS = ['gzip', 'deflate', 'br'] as const;
export type Coding = (typeof CODINGS)[number];

/** What fills a page beyond what was asked (`pageFlood`). */
export const PAGE_FLOOD_FILLERS = ['stream', 'junk', 'duplicates'] as const;
export type PageFloodFiller = (typeof PAGE_FLOOD_FILLERS)[number];

/**
 * Fault injection (./faults.ts has the catalogue): for the generated feed under /v1, and for a scenario that
 * declares faults (the named fault scenarios). Each probability applies per request (page requests only on a
 * scenario), rolled with seeded dice, so the same request sequence gets the same faults. The faults of one
 * layer exclude each other (the first hit wins); layers compose (a 429 may come gzip-coded, after slow headers,
 * with a skewed Date).
 */
export interface FaultOptions {
  /** Seed of the fault dice (independent of the feed seed). */
  seed: number;
  /** Probability per feed request of a 429. Retry-After alternates delta-seconds and HTTP-date forms. */
  rateLimit?: number;
  /** Seconds announced in Retry-After (default 1). */
  retryAfterSeconds?: number;
  /** The forms a 429's Retry-After is drawn from (default: seconds and http-date, alternating). */
  retryAfterForms?: readonly RetryAfterForm[];
  /** Probability per request of a 5xx (500/502/503, random); `serverErrorBurst` in a row (default 1). */
  serverError?: number;
  serverErrorBurst?: number;
  /** The bodies a 5xx is drawn from (default ['json']). */
  serverErrorBodies?: readonly ServerErrorBody[];
  /** Probability per request of a destroyed socket (connection reset) with no response. */
  connectionReset?: number;
  /** Probability per request of a delay of `slowMs` before the headers (default 200 ms). */
  slow?: number;
  slowMs?: number;
  /** Probability per page of answering a cursor with the page *before* it again (a repeated page). */
  repeatPage?: number;
  /** Probability per page that a cursor answers 404 `pageId not found` (an expired cursor). */
  expireCursor?: number;
  /** Probability per request arriving on a reused keep-alive connection that the server closes it unanswered. */
  keepAliveDrop?: number;
  /** Probability per answer of a reset connection right after the headers (and a first part of the body). */
  resetAfterHeaders?: number;
  /** Probability per answer of a connection closed halfway through the body (Content-Length says more). */
  truncatedBody?: number;
  /** Probability per page of a complete 200 whose JSON is cut short (as a proxy's truncated copy). */
  truncatedJson?: number;
  /** Probability per answer of a body sent `trickleChunkBytes` (default 1) every `trickleIntervalMs` (1000). */
  trickle?: number;
  trickleChunkBytes?: number;
  trickleIntervalMs?: number;
  /** Probability per page of a 200 whose body never ends (chunked, until the client hangs up). */
  endlessBody?: number;
  /** Probability per request of a 200 that is no Page, its body drawn from `nonPageBodies` (default all). */
  nonPage200?: number;
  nonPageBodies?: readonly NonPageBody[];
  /** Probability per request of a 3xx (301/302/303/307/308) to a login page, never the data. */
  redirect?: number;
  /** Probability per answer of a compressed body, the coding drawn from `codings` (default all three). */
  encoding?: number;
  codings?: readonly Coding[];
  /** Probability per answer of a UTF-8 byte order mark before its body (before any coding). */
  byteOrderMark?: number;
  /** Probability per page of a compressed 200 that decodes to `bombBytes` (default 256 MiB) of JSON whitespace. */
  bomb?: number;
  bombBytes?: number;
  /**
   * Probability per page of far more records than `pageSize`: `pageFloodRecords` (default 2,000) of
   * `pageFloodFiller` ('stream': the next records of the stream; 'junk': tiny invalid records *before* the
   * page's own; 'duplicates': versions already served, before the page's own), at most `pageFloodMaxBytes`.
   */
  pageFlood?: number;
  pageFloodRecords?: number;
  pageFloodFiller?: PageFloodFiller;
  pageFloodMaxBytes?: number;
  /** Probability per page of `hasMore: true`, no data and the very cursor sent (a stuck cursor, once). */
  stuckCursor?: number;
  /** Probability per page of `hasMore: true` without a `nextPageId` (pagination rule 1 broken, once). */
  missingNextPageId?: number;
  /** From this fraction of the stream on, every page hands back the cursor it was sent: a cycle for ever. */
  cursorCycleAt?: number;
  /** The stream entry at this fraction carries `giantOrderBytes` (default 12 MiB) more: one order over the cap. */
  giantOrderAt?: number;
  giantOrderBytes?: number;
  /** After this many requests every request answers 401 (the token revoked). */
  revokeTokenAfter?: number;
  /** Outages, in ms after the first request: every request in a window answers 503 or is reset. */
  outages?: ReadonlyArray<{ afterMs: number; forMs: number }>;
  /** The partner's clock: every answer's `Date` (and a 429's HTTP-date) this far from ours. */
  clockSkewMs?: number;
  /** The first this many requests get no fault (a scenario's: its first page requests). */
  afterRequests?: number;
  /** At most this many of a fault in all (e.g. `{ trickle: 1 }`); beyond it the dice miss. */
  limits?: Partial<Record<Fault, number>>;
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
     * Fraction of orders whose first item carries a long, escape-heavy name (quotes, backslashes, control
     * characters, emoji, a 16-digit run; some versions written with every non-ASCII character as \\u escapes),
     * up to `longStringBytes` characters (default 20,000). The order's money and state are unchanged.
     */
    escapeHeavy?: number;
    longStringBytes?: number;
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
  fault?: Fault;
  /** Faults composed with `fault` on the same answer (a coding, a delivery, slow headers). */
  also?: Fault[];
  /** Epoch ms the request arrived, and how long until its connection was done with it (answered or hung up). */
  receivedAt?: number;
  durationMs?: number;
  /** Bytes of the answer's body as decoded (a coded body's, a bomb's, in full), if it had one. */
  bytes?: number;
}

/** Every fault the simulator can inject (./faults.ts: FAULT_CATALOGUE describes each). */
export type Fault =
  | 'rate-limit'
  | 'server-error'
  | 'connection-reset'
  | 'slow'
  | 'repeat-page'
  | 'expire-cursor'
  | 'trickle'
  | 'redirect'
  | 'non-page-200'
  | 'over-long-cursor'
  | 'keep-alive-drop'
  | 'reset-after-headers'
  | 'truncated-body'
  | 'truncated-json'
  | 'endless-body'
  | 'encoding'
  | 'byte-order-mark'
  | 'bomb'
  | 'page-flood'
  | 'stuck-cursor'
  | 'missing-next-page-id'
  | 'cursor-cycle'
  | 'giant-order'
  | 'revoked-token'
  | 'outage'
  | 'skewed-clock';

/** What the partner delivered: the end state a correct ingester reaches from it, and the versions it holds. */
export interface Oracle extends ExpectedState {
  /** Every `orderId:version` in it. */
  versionKeys: ReadonlySet<string>;
  /** Stream entries in it (distinct positions). */
  entries: number;
}

export interface RunningSimulator {
  /** e.g. http://127.0.0.1:43121 — append `/v1/...` or `/<scenario>/v1/...`. */
  readonly url: string;
  readonly requests: RequestLogEntry[];
  expected(): ExpectedState;
  /** Simulate retention: cursors pointing before this fraction of the stream answer 404. */
  purgeBefore(fraction: number): void;
  /**
   * New versions arriving: the generated feed (/v1) ends after its first `entries` entries until more are
   * shown (a cursor never moves past a hidden entry, as with minAgeMinutes). Default: all of it.
   */
  showFirst(entries: number): void;
  /** Counts of injected faults by kind. */
  faultCounts(): Record<string, number>;
  /** Order versions in every page answered so far, repeated pages and duplicated versions included. */
  versionsServed(): number;
  /**
   * The generated feed (/v1) as an oracle: `stream`, all of it; `delivered`, the entries of pages the
   * partner sent whole and readable (no transport fault, no order over the cap), the end state of a run
   * that stopped partway; `before`: only the entries before that stream position (a stored cursor's).
   */
  oracle(scope: 'stream' | 'delivered', before?: number): Oracle;
  close(): Promise<void>;
}
