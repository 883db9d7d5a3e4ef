// The fault catalogue (issue 31): every way the simulator can misbehave at the HTTP level, what it does, and
// whether a partner may do it without breaking a promise of the spec; and the seeded dice that draw them.
// One engine serves them all: the generated feed's FaultOptions (/v1), the named fault scenarios, and the
// request-bound quirks of the hostile scenarios (trickle, redirect, html-200) are the same dice with
// probability 1 and a limit. The data-bound quirks (a cursor cycle of a scenario, a record flood, an over-long
// cursor, a deep expiry) stay with their scenario's data (scenarios/build.ts).
//
// Layers, rolled in this order per request; within a layer the first hit wins, the layers compose:
//   1. the answer replaced: outage window, revoked token, keep-alive drop, reset, 429, 5xx, slow headers
//      (the transport faults, as they always were), then a 3xx or a 200 that is no Page
//   2. the page changed (page requests): expired cursor, repeated page, stuck cursor, no nextPageId, a flood
//      of records, a decompression bomb
//   3. the delivery: reset after the headers, a body cut short, a complete but cut JSON, a trickle, no end
//   4. a byte order mark, the coding (gzip, deflate, br) and the partner's clock (Date, and a 429's HTTP-date)
import { Random } from './random.js';
import type { Coding, Fault, FaultOptions, NonPageBody, RetryAfterForm, ServerErrorBody } from './types.js';
import { CODINGS, NON_PAGE_BODIES } from './types.js';

/**
 * What a correct ingester does about a fault (tools/RUNBOOK.md):
 * - exact: the spec allows it (or it is a network's doing); the run ends with the data exact;
 * - exact-or-stop: it breaks a promise of the spec once; the data ends exact, or the run ends at the documented
 *   stop `outcome` and the next one goes on;
 * - stop: it breaks a promise for ever; the feed ends at the documented stop `outcome` (its alarm fires, the
 *   runbook's table says which command resumes), with everything before it exact.
 */
export type FaultClass =
  | { kind: 'exact' }
  | { kind: 'exact-or-stop'; outcome: string }
  | { kind: 'stop'; outcome: string };

export interface CatalogueEntry {
  fault: Fault;
  /** What the partner does, in a line (README and the fuzzer's report). */
  does: string;
  class: FaultClass;
  /** The FaultOptions field that switches it on. */
  option: keyof FaultOptions;
  /** The scenarios that show it on its own (`npm start -- --scenario <id>`). */
  scenarios?: readonly string[];
}

const EXACT: FaultClass = { kind: 'exact' };

export const FAULT_CATALOGUE: readonly CatalogueEntry[] = [
  {
    fault: 'rate-limit',
    does: '429 with Retry-After as seconds, an HTTP-date, a past date, the far future, junk, or none',
    class: EXACT,
    option: 'rateLimit',
    scenarios: ['retry-after-forms', 'far-future-retry-after'],
  },
  {
    fault: 'skewed-clock',
    does: "the partner's clock off ours: every Date header, and a 429's HTTP-date, in its own time",
    class: EXACT,
    option: 'clockSkewMs',
    scenarios: ['skewed-clock'],
  },
  {
    fault: 'server-error',
    does: '500/502/503 with a JSON, HTML or empty body, or one echoing the token; in bursts',
    class: EXACT,
    option: 'serverError',
    scenarios: ['server-errors'],
  },
  {
    fault: 'connection-reset',
    does: 'the connection reset before any answer',
    class: EXACT,
    option: 'connectionReset',
  },
  {
    fault: 'reset-after-headers',
    does: 'the headers and a first part of the body, then a reset',
    class: EXACT,
    option: 'resetAfterHeaders',
    scenarios: ['reset-after-headers'],
  },
  {
    fault: 'truncated-body',
    does: 'half the body Content-Length announces, then the connection closed',
    class: EXACT,
    option: 'truncatedBody',
    scenarios: ['truncated-body'],
  },
  {
    fault: 'truncated-json',
    does: "a complete 200 whose JSON is cut short (a proxy's truncated copy), inside an escape-heavy string",
    class: EXACT,
    option: 'truncatedJson',
    scenarios: ['truncated-json'],
  },
  {
    fault: 'keep-alive-drop',
    does: 'a request on a reused keep-alive connection: the connection closed, no answer',
    class: EXACT,
    option: 'keepAliveDrop',
    scenarios: ['keep-alive-drop'],
  },
  {
    fault: 'slow',
    does: 'the headers only after slowMs (12 s in slow-headers: past a 10 s headers timeout)',
    class: EXACT,
    option: 'slow',
    scenarios: ['slow-headers'],
  },
  {
    fault: 'trickle',
    does: 'the body a few bytes at a time (one a second by default), until done or the client hangs up',
    class: EXACT,
    option: 'trickle',
    scenarios: ['trickle'],
  },
  {
    fault: 'endless-body',
    does: 'a 200 whose chunked body never ends, as fast as the client reads',
    class: EXACT,
    option: 'endlessBody',
    scenarios: ['endless-body'],
  },
  {
    fault: 'non-page-200',
    does: 'a 200 that is no Page: HTML, empty, text, a JSON array, null, an object, wrong types',
    class: EXACT,
    option: 'nonPage200',
    scenarios: ['non-page-200'],
  },
  {
    fault: 'redirect',
    does: 'a 301/302/303/307/308 to a login page whose Location carries a query',
    class: EXACT,
    option: 'redirect',
    scenarios: ['redirect'],
  },
  {
    fault: 'encoding',
    does: 'a gzip, deflate or br coded answer (any status), though the request named no coding',
    class: EXACT,
    option: 'encoding',
    scenarios: ['gzip', 'deflate', 'brotli'],
  },
  {
    fault: 'byte-order-mark',
    does: 'a UTF-8 byte order mark before the body (a framework that writes one; RFC 8259 8.1 forbids it)',
    class: EXACT,
    option: 'byteOrderMark',
    scenarios: ['byte-order-mark'],
  },
  {
    fault: 'bomb',
    does: 'a coded 200 that decodes to hundreds of MiB of JSON whitespace',
    class: EXACT,
    option: 'bomb',
    scenarios: ['gzip-bomb'],
  },
  {
    fault: 'page-flood',
    does: 'far more records than pageSize: the stream ahead, or thousands of junk records or duplicates first',
    class: EXACT,
    option: 'pageFlood',
    scenarios: ['page-flood'],
  },
  {
    fault: 'repeat-page',
    does: 'the page before the cursor served again (pagination rule 6)',
    class: EXACT,
    option: 'repeatPage',
  },
  {
    fault: 'expire-cursor',
    does: '404 pageId not found for a valid cursor at the frontier, anywhere in the stream, each position once (rule 4)',
    class: EXACT,
    option: 'expireCursor',
    scenarios: ['deep-expiry'],
  },
  {
    fault: 'stuck-cursor',
    does: 'hasMore true, no data and the very cursor sent (rule 3 broken), once',
    class: { kind: 'exact-or-stop', outcome: 'stuck-cursor' },
    option: 'stuckCursor',
  },
  {
    fault: 'missing-next-page-id',
    does: 'hasMore true without a nextPageId (rule 1 broken), once',
    class: { kind: 'exact-or-stop', outcome: 'missing-next-page-id' },
    option: 'missingNextPageId',
  },
  {
    fault: 'cursor-cycle',
    does: 'from a point of the stream on, every page hands back the cursor it was sent, with data, for ever',
    class: { kind: 'stop', outcome: 'stuck-cursor' },
    option: 'cursorCycleAt',
    scenarios: ['cursor-cycle'],
  },
  {
    fault: 'giant-order',
    does: 'one order larger than the body cap, so that even a page of one is over it, for ever',
    class: { kind: 'stop', outcome: 'order-over-body-cap' },
    option: 'giantOrderAt',
    scenarios: ['giant-order'],
  },
  {
    fault: 'revoked-token',
    does: 'from a request on, every request 401 Unauthorized (the token revoked)',
    class: { kind: 'stop', outcome: 'auth-failed' },
    option: 'revokeTokenAfter',
  },
  {
    fault: 'outage',
    does: 'for minutes, every request answers 503 or is reset',
    class: EXACT,
    option: 'outages',
    scenarios: ['outage'],
  },
];

/** The FaultOptions fields that tune a fault rather than switch it on. */
export const FAULT_DETAILS: readonly (keyof FaultOptions)[] = [
  'retryAfterSeconds',
  'retryAfterForms',
  'serverErrorBurst',
  'serverErrorBodies',
  'slowMs',
  'trickleChunkBytes',
  'trickleIntervalMs',
  'nonPageBodies',
  'codings',
  'bombBytes',
  'pageFloodRecords',
  'pageFloodFiller',
  'pageFloodMaxBytes',
  'giantOrderBytes',
  'afterRequests',
  'limits',
];

/** A fault that replaces the answer. */
export type AnswerFault =
  | { fault: 'outage'; reset: boolean }
  | { fault: 'revoked-token' }
  | { fault: 'keep-alive-drop' }
  | { fault: 'connection-reset' }
  | { fault: 'rate-limit'; retryAfter: string | undefined }
  | { fault: 'server-error'; status: number; body: ServerErrorBody }
  | { fault: 'redirect'; status: number }
  | { fault: 'non-page-200'; body: NonPageBody };

export type PageFault = 'expire-cursor' | 'repeat-page' | 'stuck-cursor' | 'missing-next-page-id';
export type DeliveryFault =
  | 'reset-after-headers'
  | 'truncated-body'
  | 'truncated-json'
  | 'trickle'
  | 'endless-body';

/** What the request is, as far as the dice care. */
export interface RequestFacts {
  now: number;
  /** An orderUpdates request (not an order by id). */
  page: boolean;
  /** It arrived on a connection that had carried a request before. */
  reusedConnection: boolean;
}

const YEAR_MS = 365 * 24 * 3_600_000;
const JUNK_RETRY_AFTER = ['soon', '1.5', '-1', 'Wed, 31 Feb 2024 10:00:00 GMT', '5 seconds', '0x10'];
const REDIRECT_STATUSES = [302, 301, 307, 308, 303];

/**
 * Seeded dice for one stream of requests: each kind an independent roll in a fixed order (same seed, same
 * request sequence, same faults). A probability of 0 consumes no roll, so switching a new kind on never
 * changes which requests the others hit.
 */
export class FaultDice {
  private readonly rng: Random;
  private burstLeft = 0;
  private rateLimits = 0;
  private serverErrors = 0;
  private redirects = 0;
  private nonPages = 0;
  private junk = 0;
  private requests = 0;
  private outageAnswers = 0;
  private firstRequestAt: number | undefined;
  /** The request being rolled is one of the first `afterRequests`: no fault at all. */
  private quiet = false;
  private readonly fired = new Map<Fault, number>();

  constructor(private readonly options: FaultOptions) {
    this.rng = new Random(options.seed);
  }

  get clockSkewMs(): number {
    return this.options.clockSkewMs ?? 0;
  }

  /** Layer 1: a fault that replaces the answer, and slow headers (which exclude the others, as always). */
  answer(facts: RequestFacts): { answer?: AnswerFault; slowMs?: number } {
    const o = this.options;
    this.requests += 1;
    this.quiet = this.requests <= (o.afterRequests ?? 0);
    if (this.quiet) return {};
    this.firstRequestAt ??= facts.now;
    const since = facts.now - this.firstRequestAt;
    if (
      (o.outages ?? []).some((window) => since >= window.afterMs && since < window.afterMs + window.forMs)
    ) {
      this.count('outage');
      // Alternately a 503 and a reset: a gateway with nothing behind it does both.
      return { answer: { fault: 'outage', reset: this.outageAnswers++ % 2 === 1 } };
    }
    if (o.revokeTokenAfter !== undefined && this.requests > o.revokeTokenAfter) {
      this.count('revoked-token');
      return { answer: { fault: 'revoked-token' } };
    }
    if (facts.reusedConnection && this.hit('keep-alive-drop', o.keepAliveDrop))
      return { answer: { fault: 'keep-alive-drop' } };
    if (this.burstLeft > 0) {
      this.burstLeft -= 1;
      return { answer: this.serverError() };
    }
    if (this.hit('connection-reset', o.connectionReset)) return { answer: { fault: 'connection-reset' } };
    if (this.hit('rate-limit', o.rateLimit))
      return { answer: { fault: 'rate-limit', retryAfter: this.retryAfter(facts.now) } };
    if (this.hit('server-error', o.serverError)) {
      this.burstLeft = Math.max(0, (o.serverErrorBurst ?? 1) - 1);
      return { answer: this.serverError() };
    }
    if (this.hit('slow', o.slow)) return { slowMs: o.slowMs ?? 200 };
    if (this.hit('redirect', o.redirect)) {
      const status = REDIRECT_STATUSES[this.redirects++ % REDIRECT_STATUSES.length] ?? 302;
      return { answer: { fault: 'redirect', status } };
    }
    if (this.hit('non-page-200', o.nonPage200)) {
      const bodies = o.nonPageBodies?.length ? o.nonPageBodies : NON_PAGE_BODIES;
      return { answer: { fault: 'non-page-200', body: bodies[this.nonPages++ % bodies.length] ?? 'html' } };
    }
    return {};
  }

  /** Layer 2a: what happens to a page asked with a cursor (expired, repeated, stuck, without a next cursor). */
  cursor(): PageFault | undefined {
    const o = this.options;
    if (this.quiet) return undefined;
    if (this.hit('expire-cursor', o.expireCursor)) return 'expire-cursor';
    if (this.hit('repeat-page', o.repeatPage)) return 'repeat-page';
    if (this.hit('stuck-cursor', o.stuckCursor)) return 'stuck-cursor';
    return undefined;
  }

  /** Layer 2b: what happens to a page's content (any page request). */
  page(): { missingNextPageId: boolean; flood: boolean; bomb: Coding | undefined } {
    const o = this.options;
    if (this.quiet) return { missingNextPageId: false, flood: false, bomb: undefined };
    const missingNextPageId = this.hit('missing-next-page-id', o.missingNextPageId);
    const flood = this.hit('page-flood', o.pageFlood);
    const bomb = this.hit('bomb', o.bomb) ? this.coding() : undefined;
    return { missingNextPageId, flood, bomb };
  }

  /** Layer 3: how the answer travels (`page`: a 200 page with data, which a cut JSON or no end needs). */
  delivery(page: boolean): DeliveryFault | undefined {
    const o = this.options;
    if (this.quiet) return undefined;
    if (this.hit('reset-after-headers', o.resetAfterHeaders)) return 'reset-after-headers';
    if (this.hit('truncated-body', o.truncatedBody)) return 'truncated-body';
    if (page && this.hit('truncated-json', o.truncatedJson)) return 'truncated-json';
    if (this.hit('trickle', o.trickle)) return 'trickle';
    if (page && this.hit('endless-body', o.endlessBody)) return 'endless-body';
    return undefined;
  }

  /** Layer 4: a byte order mark before the body (under any coding). */
  byteOrderMark(): boolean {
    return !this.quiet && this.hit('byte-order-mark', this.options.byteOrderMark);
  }

  /** Layer 4: the answer's coding, if any. */
  encoding(): Coding | undefined {
    if (this.quiet) return undefined;
    return this.hit('encoding', this.options.encoding) ? this.coding() : undefined;
  }

  /** How often each fault fired (the limits count these). */
  firedCounts(): Partial<Record<Fault, number>> {
    return Object.fromEntries(this.fired);
  }

  private coding(): Coding {
    const codings = this.options.codings?.length ? this.options.codings : CODINGS;
    return codings.length === 1 ? (codings[0] as Coding) : this.rng.pick(codings);
  }

  private serverError(): AnswerFault {
    const bodies = this.options.serverErrorBodies?.length
      ? this.options.serverErrorBodies
      : ['json' as const];
    const status = this.rng.pick([500, 502, 503]);
    return { fault: 'server-error', status, body: bodies[this.serverErrors++ % bodies.length] ?? 'json' };
  }

  /** The Retry-After of the next 429: the forms in turn (by default delta-seconds, then an HTTP-date). */
  private retryAfter(now: number): string | undefined {
    const o = this.options;
    const forms: readonly RetryAfterForm[] = o.retryAfterForms?.length
      ? o.retryAfterForms
      : ['seconds', 'http-date'];
    const form = forms[this.rateLimits++ % forms.length] ?? 'seconds';
    const seconds = o.retryAfterSeconds ?? 1;
    // An HTTP-date is written by the partner's clock, skewed or not (rounded up to a second).
    const theirs = now + this.clockSkewMs;
    const date = (at: number) => new Date(Math.ceil(at / 1000) * 1000).toUTCString();
    switch (form) {
      case 'seconds':
        return String(seconds);
      case 'http-date':
        return date(theirs + seconds * 1000);
      case 'past-date':
        return date(theirs - 3_600_000);
      case 'far-future-seconds':
        return String(10 * 365 * 86_400);
      case 'far-future-date':
        return date(theirs + 5 * YEAR_MS);
      case 'junk':
        return JUNK_RETRY_AFTER[this.junk++ % JUNK_RETRY_AFTER.length];
      case 'absent':
        return undefined;
    }
  }

  /** A roll for `fault` at `probability`; a hit past the fault's limit is a miss. */
  private hit(fault: Fault, probability: number | undefined): boolean {
    if (!this.rng.chance(probability ?? 0)) return false;
    const limit = this.options.limits?.[fault];
    if (limit !== undefined && (this.fired.get(fault) ?? 0) >= limit) return false;
    this.count(fault);
    return true;
  }

  private count(fault: Fault): void {
    this.fired.set(fault, (this.fired.get(fault) ?? 0) + 1);
  }
}
