// The partner API simulator: a node:http server answering the two read endpoints of the spec (section 4)
// for the generated feed under /v1 and for the canned scenarios under /{scenario_id}/v1.
//
// Flow of a request: 1. bearer check (401) 2. route (404, 405) 3. the fault dice's answer faults (faults.ts:
// outage, revoked token, keep-alive drop, reset, 429, 5xx, slow headers, 3xx, a 200 that is no Page), for
// /v1 and for a scenario's page requests 4. query validation (400) 5. cursor decoding (400 garbled, 404
// expired/purged) 6. the page faults (expired cursor, repeated or stuck page, missing cursor, flood, bomb),
// the stateful spec scenarios and the hostile scenarios' quirks 7. the page or the order 8. its delivery
// (delivery.ts: cut, trickled, endless; coded; the partner's clock).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type CursorState, decodeCursor, encodeCursor } from './cursor.js';
import { type Answer, bomb, contentEncoding, type DeliveryPlan, deliver, encode } from './delivery.js';
import { type AnswerFault, FaultDice, type PageFault } from './faults.js';
import { type FeedFilter, GeneratedFeed } from './generated-feed.js';
import { type SimOrder, toWire } from './model.js';
import { parseOrderId, parseUpdatesQuery, type UpdatesQuery } from './query.js';
import { SCENARIOS, type ScenarioDefinition } from './scenarios/index.js';
import { TokenRateLimit } from './token-rate-limit.js';
import {
  ALL_SCENARIO_IDS,
  type AnyScenarioId,
  type Coding,
  type ExpectedState,
  type Fault,
  type FaultOptions,
  type NonPageBody,
  type Oracle,
  type RequestLogEntry,
  type RunningSimulator,
  type ServerErrorBody,
  type SimulatorOptions,
} from './types.js';

/** What the simulator does with a request: an answer (shaped by the delivery faults), or no answer at all. */
type Plan =
  | {
      kind: 'answer';
      status: number;
      body: string | Buffer;
      headers?: Record<string, string>;
      /** The faults on this answer, the one that decided it first. */
      faults: Fault[];
      /** Stream positions of the generated feed it carries: delivered once sent whole (none: not readable). */
      positions?: number[] | undefined;
      /** The body's bytes as decoded, when coding (or a bomb) changed them. */
      decodedBytes?: number;
      /** Delivery details of its faults: slow headers, a trickle's pace, what an endless body repeats. */
      slowMs?: number;
      trickle?: DeliveryPlan['trickle'];
      endlessUnit?: Buffer;
    }
  /** Reset before any answer (RST), or closed unanswered (FIN: a keep-alive connection dropped). */
  | { kind: 'reset' | 'drop'; fault: Fault };

type AnswerPlan = Extract<Plan, { kind: 'answer' }>;

const HOUR = 3_600_000;
const ROUTE = /^(?:\/([^/]+))?\/v1\/(?:(orderUpdates)|orders\/([^/]+))$/;
const BEARER = /^Bearer +(\S+)$/i;

const message = (
  status: number,
  text: string,
  fault?: Fault,
  headers?: Record<string, string>,
): AnswerPlan => ({
  kind: 'answer',
  status,
  body: JSON.stringify({ message: text }),
  faults: fault === undefined ? [] : [fault],
  ...(headers === undefined ? {} : { headers }),
});

const EMPTY_STREAM = '{"data":[],"hasMore":false}';

function pageBody(entries: readonly string[], hasMore: boolean, nextPageId: string | undefined): string {
  const cursor = nextPageId === undefined ? '' : `,"nextPageId":${JSON.stringify(nextPageId)}`;
  return `{"data":[${entries.join(',')}],"hasMore":${hasMore}${cursor}}`;
}

/** GET .../orders/{id}: 400 for an id that is not an integer, 404 for an unknown one, else the order. */
function orderReply(rawId: string, latestJson: (id: number) => string | undefined): Plan {
  const id = parseOrderId(rawId);
  if (id === undefined) return message(400, 'order id must be an integer');
  const order = latestJson(id);
  return order === undefined
    ? message(404, 'order not found')
    : { kind: 'answer', status: 200, body: order, faults: [] };
}

const PAGE_ID_NOT_FOUND = 'pageId not found';

function isScenarioId(value: string): value is AnyScenarioId {
  return (ALL_SCENARIO_IDS as readonly string[]).includes(value);
}

const MAINTENANCE_PAGE =
  '<!DOCTYPE html><html><head><title>Down for maintenance</title></head>' +
  '<body><h1>We will be back shortly</h1><p>Scheduled maintenance.</p></body></html>';

const PROXY_ERROR_PAGE =
  '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center>' +
  '<hr><center>nginx</center></body></html>';

/** Where a redirect sends the client: a login page, with a query that must not reach a log. */
const LOGIN_LOCATION =
  'https://login.partner.example/sso/authorize?return_to=%2Fv1%2ForderUpdates&session=8f2c0d17e4b9';

/** The bodies of a 200 that is no Page (faults.ts, non-page-200). */
const NON_PAGE: Record<NonPageBody, { body: string; type: string }> = {
  html: { body: MAINTENANCE_PAGE, type: 'text/html' },
  empty: { body: '', type: 'application/json' },
  text: { body: 'OK', type: 'text/plain' },
  'json-array': { body: '[]', type: 'application/json' },
  'json-null': { body: 'null', type: 'application/json' },
  'json-object': { body: '{"status":"ok"}', type: 'application/json' },
  'wrong-types': { body: '{"data":{},"hasMore":"false","nextPageId":42}', type: 'application/json' },
};

const SERVER_ERROR_TEXT: Record<number, string> = {
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** Records a flood of junk carries (faults.ts, page-flood 'junk'): ids below the feed's, each invalid. */
const JUNK_RECORDS = [
  '{}',
  '{"id":4999990001}',
  '{"id":4999990002,"version":1,"status":"shipped"}',
  '{"id":4999990003,"version":"one"}',
];

/** A page JSON cut short inside its longest run of escaped quotes and backslashes (or at 60 %). */
function cutJson(body: string): string {
  const run = /(?:\\"\\\\)+/.exec(body);
  if (run && run[0].length >= 64) return body.slice(0, run.index + Math.floor(run[0].length / 2));
  return body.slice(0, Math.floor(body.length * 0.6));
}

/** An entry carrying `bytes` more: one order over any body cap (faults.ts, giant-order). */
function inflated(json: string, bytes: number): string {
  return `${json.slice(0, -1)},"note":"${'x'.repeat(bytes)}"}`;
}

/** A scenario with its wire JSON computed once, timestamps relative to the simulator's start. */
interface ServedScenario {
  definition: ScenarioDefinition;
  key: string;
  entries: string[];
  /** End position (exclusive) of each poll, ascending. */
  pollEnds: number[];
  latestOrder: Map<number, string>;
  /** The record-flood quirk's extra records, as JSON, copies included. */
  flood: string[];
}

function serveScenario(definition: ScenarioDefinition, anchor: number): ServedScenario {
  const entries: string[] = [];
  const pollEnds: number[] = [];
  const latest = new Map<number, SimOrder>();
  for (const poll of definition.polls) {
    for (const { order, latestVersion } of poll) {
      entries.push(JSON.stringify(toWire(order, latestVersion, { kind: 'epoch' }, anchor)));
      const known = latest.get(order.id);
      if (!known || order.version > known.version) latest.set(order.id, order);
    }
    pollEnds.push(entries.length);
  }
  const latestOrder = new Map(
    [...latest].map(([id, order]) => [id, JSON.stringify(toWire(order, true, { kind: 'epoch' }, anchor))]),
  );
  const { quirk } = definition;
  // Interleaved (each distinct record, then each again, …): every one of them is among a page's first records.
  const flood =
    quirk?.kind === 'record-flood'
      ? Array.from({ length: quirk.copies }, () =>
          quirk.records.map((record) => JSON.stringify(record)),
        ).flat()
      : [];
  return { definition, key: `scenario:${definition.id}`, entries, pollEnds, latestOrder, flood };
}

/** Fault progress of a stateful scenario for one token (one "run" since the last no-pageId request). */
interface RunState {
  pageRequests: number;
  fired: boolean;
  retryAt: number;
  lastSeen: number;
}

/** What the page faults of one request decided (faults.ts, layer 2). */
interface PageFaults {
  cursor?: PageFault | undefined;
  missingNextPageId: boolean;
  flood: boolean;
  bomb: Coding | undefined;
}

const NO_PAGE_FAULTS: PageFaults = { missingNextPageId: false, flood: false, bomb: undefined };

class Simulator {
  readonly requests: RequestLogEntry[] = [];
  private readonly feed: GeneratedFeed;
  private readonly anchor: number;
  private readonly served = new Map<AnyScenarioId, ServedScenario>();
  private readonly runs = new Map<string, RunState>();
  /** How often each hostile scenario's quirk has fired, per token. */
  private readonly quirks = new Map<string, { fired: number; lastSeen: number }>();
  /** The fault dice of each scenario that declares faults, per token. */
  private readonly scenarioDice = new Map<string, { dice: FaultDice; lastSeen: number }>();
  private readonly dice: FaultDice | undefined;
  private readonly faultOptions: FaultOptions | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stateTtlMs: number;
  private readonly scenarioRetryAfterSeconds: number;
  private readonly tokens: ReadonlySet<string>;
  private readonly latencyMs: number;
  private readonly tokenRateLimit: TokenRateLimit | undefined;
  /** Requests each connection carried: a request on a connection that carried one before is a reuse. */
  private readonly socketRequests = new WeakMap<Socket, number>();
  /** Stream positions of the generated feed delivered whole in a readable page. */
  private readonly delivered = new Set<number>();
  private readonly giantJson = new Map<string, string>();
  /**
   * The expire-cursor fault expires a cursor only at its stream's frontier (the furthest position a cursor was
   * sent for), each position once: the cursor a client kept over a pause, as retention purges it (rule 4). The
   * fresh cursors of a replay behind the frontier stay valid. Expired anywhere and again on every pass, a client
   * that restarts from the start (rule 5 without `fromTimestamp`, the ingester's default) would pass a stream of
   * N pages only after some e^(N × expireCursor) passes (fuzz seeds 99 and 124).
   */
  private readonly frontiers = new Map<string, number>();
  private readonly expiredPositions = new Set<string>();

  constructor(options: SimulatorOptions) {
    this.latencyMs = options.latencyMs ?? 0;
    this.tokenRateLimit = options.tokenRateLimit && new TokenRateLimit(options.tokenRateLimit);
    const now = Date.now();
    this.feed = new GeneratedFeed(options.feed, options.feed?.endsAt ?? now - 3 * HOUR);
    this.anchor = Math.floor(now / 1000) * 1000;
    this.faultOptions = options.faults;
    this.dice = options.faults ? new FaultDice(options.faults) : undefined;
    this.stateTtlMs = options.scenarioStateTtlMs ?? 3 * 60_000;
    this.scenarioRetryAfterSeconds = options.scenarioRetryAfterSeconds ?? 1;
    this.tokens = new Set([options.token, ...(options.additionalTokens ?? [])]);
  }

  expected(): ExpectedState {
    return this.feed.expected();
  }

  oracle(scope: 'stream' | 'delivered', before = Number.POSITIVE_INFINITY): Oracle {
    const positions = scope === 'stream' ? [...Array(this.feed.length).keys()] : [...this.delivered];
    return this.feed.oracle(positions.filter((position) => position < before).sort((a, b) => a - b));
  }

  purgeBefore(fraction: number): void {
    this.feed.purgeBefore(fraction);
  }

  showFirst(entries: number): void {
    this.feed.showFirst(entries);
  }

  /** Order versions in every page answered so far (repeats and duplicates included). */
  versionsServed = 0;

  faultCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const entry of this.requests) {
      for (const fault of [entry.fault, ...(entry.also ?? [])]) {
        if (fault) counts[fault] = (counts[fault] ?? 0) + 1;
      }
    }
    return counts;
  }

  cancelTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = Date.now();
    const entry: RequestLogEntry = {
      method: req.method ?? '',
      url: req.url ?? '',
      authorization: req.headers.authorization,
      status: 0,
      receivedAt,
    };
    res.once('close', () => {
      entry.durationMs = Date.now() - receivedAt;
    });
    const carried = this.socketRequests.get(req.socket) ?? 0;
    this.socketRequests.set(req.socket, carried + 1);
    let plan: Plan;
    if (this.latencyMs > 0) await this.delay(this.latencyMs);
    try {
      plan = await this.route(req, carried > 0);
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      plan = message(500, `simulator error: ${detail}`);
    }
    if (plan.kind !== 'answer') {
      entry.fault = plan.fault;
      this.requests.push(entry);
      if (plan.kind === 'reset') req.socket.resetAndDestroy();
      else req.socket.destroy();
      return;
    }
    entry.status = plan.status;
    entry.bytes = plan.decodedBytes ?? Buffer.byteLength(plan.body);
    const [first, ...also] = plan.faults;
    if (first) entry.fault = first;
    if (also.length > 0) entry.also = also;
    this.requests.push(entry);
    const sent = await deliver(req, res, this.answerOf(plan), this.deliveryOf(plan), (ms) =>
      this.delay(ms),
    ).catch(() => 'cut' as const);
    if (sent === 'whole' && plan.positions)
      for (const position of plan.positions) this.delivered.add(position);
  }

  private answerOf(plan: AnswerPlan): Answer {
    return {
      status: plan.status,
      headers: { 'content-type': 'application/json', ...plan.headers },
      body: typeof plan.body === 'string' ? Buffer.from(plan.body) : plan.body,
    };
  }

  private deliveryOf(plan: AnswerPlan): DeliveryPlan {
    const delivery = plan.faults.find(
      (fault): fault is 'reset-after-headers' | 'truncated-body' | 'trickle' | 'endless-body' =>
        fault === 'reset-after-headers' ||
        fault === 'truncated-body' ||
        fault === 'trickle' ||
        fault === 'endless-body',
    );
    return {
      headersDelayMs: plan.slowMs ?? 0,
      delivery,
      trickle: plan.trickle ?? { chunkBytes: 1, intervalMs: 1000 },
      ...(plan.endlessUnit ? { endlessUnit: plan.endlessUnit } : {}),
    };
  }

  private async route(req: IncomingMessage, reusedConnection: boolean): Promise<Plan> {
    const url = new URL(req.url ?? '/', 'http://simulator.invalid');
    const bearer = BEARER.exec(req.headers.authorization ?? '');
    if (bearer?.[1] === undefined || !this.tokens.has(bearer[1])) {
      return message(401, 'Unauthorized', undefined, { 'www-authenticate': 'Bearer' });
    }
    const retryAfter = this.tokenRateLimit?.check(bearer[1], Date.now());
    if (retryAfter !== undefined) {
      return message(429, 'Too Many Requests', 'rate-limit', { 'retry-after': String(retryAfter) });
    }
    const match = ROUTE.exec(url.pathname);
    const prefix = match?.[1];
    if (!match || (prefix !== undefined && !isScenarioId(prefix))) return message(404, 'not found');
    if (req.method !== 'GET') return message(405, 'method not allowed', undefined, { allow: 'GET' });
    const orderId = match[3];
    const authorization = req.headers.authorization ?? '';
    if (prefix === undefined) {
      const options = this.faultOptions ?? {};
      return this.faulted(
        this.dice,
        options,
        { page: orderId === undefined, reusedConnection },
        bearer[1],
        (page) =>
          orderId === undefined
            ? this.feedUpdates(url.searchParams, page)
            : orderReply(orderId, (id) => this.feed.latestOrderJson(id)),
      );
    }
    if (prefix === 'test-invalid-token') {
      return message(401, 'Unauthorized', undefined, { 'www-authenticate': 'Bearer' });
    }
    const scenario = this.scenario(prefix);
    if (orderId !== undefined) return orderReply(orderId, (id) => scenario.latestOrder.get(id));
    const dice = this.diceOf(scenario, authorization);
    const options = scenario.definition.faults ?? {};
    return this.faulted(dice, options, { page: true, reusedConnection }, bearer[1], (page) =>
      this.scenarioRequest(scenario, url.searchParams, authorization, page),
    );
  }

  /**
   * The request through the dice: an answer fault replaces the answer; otherwise `answer` makes it (given the
   * page faults, rolled once a cursor is known); then the delivery, the coding and the partner's clock.
   */
  private async faulted(
    dice: FaultDice | undefined,
    options: Partial<FaultOptions>,
    request: { page: boolean; reusedConnection: boolean },
    token: string,
    answer: (page: (withCursor: boolean) => PageFaults) => Plan | Promise<Plan>,
  ): Promise<Plan> {
    const now = Date.now();
    const rolled = dice?.answer({ now, ...request }) ?? {};
    let plan: Plan;
    if (rolled.answer) {
      plan = this.faultAnswer(rolled.answer, token);
    } else {
      // Slow answers (as they always were) get no cursor fault.
      const slow = rolled.slowMs !== undefined;
      plan = await answer((withCursor) =>
        !dice || !request.page
          ? NO_PAGE_FAULTS
          : { ...(withCursor && !slow ? { cursor: dice.cursor() } : {}), ...dice.page() },
      );
      if (plan.kind === 'answer' && rolled.slowMs !== undefined) {
        plan.faults.push('slow');
        plan.slowMs = rolled.slowMs;
      }
    }
    if (plan.kind !== 'answer' || !dice) return plan;
    return this.shaped(plan, dice, now, options);
  }

  /** Layers 3 and 4: how the answer travels, its coding, and the partner's clock. */
  private async shaped(
    plan: AnswerPlan,
    dice: FaultDice,
    now: number,
    options: Partial<FaultOptions>,
  ): Promise<Plan> {
    const withData = plan.status === 200 && (plan.positions?.length ?? 0) > 0;
    const bombed = plan.faults.includes('bomb');
    const delivery = bombed ? undefined : dice.delivery(withData || plan.faults.includes('page-flood'));
    if (delivery) plan.faults.push(delivery);
    if (delivery === 'truncated-json' && typeof plan.body === 'string') {
      plan.body = cutJson(plan.body);
      plan.positions = undefined;
    }
    if (delivery === 'reset-after-headers' || delivery === 'truncated-body' || delivery === 'endless-body')
      plan.positions = undefined;
    if (delivery === 'trickle') {
      plan.trickle = {
        chunkBytes: options.trickleChunkBytes ?? 1,
        intervalMs: options.trickleIntervalMs ?? 1000,
      };
    }
    if (delivery === 'endless-body' && typeof plan.body === 'string') {
      // What the endless body repeats: the page's first record (a client sees records, never the end).
      const start = plan.body.indexOf('[{');
      const end = start < 0 ? -1 : plan.body.indexOf('},{', start);
      plan.endlessUnit = Buffer.from(
        start >= 0 && end > start ? `${plan.body.slice(start + 1, end + 1)},` : '{"id":1},',
      );
    }
    const coding = bombed || delivery === 'endless-body' ? undefined : dice.encoding();
    if (!bombed && delivery !== 'endless-body' && typeof plan.body === 'string' && dice.byteOrderMark()) {
      plan.faults.push('byte-order-mark');
      plan.body = `\uFEFF${plan.body}`;
    }
    if (coding) {
      plan.faults.push('encoding');
      plan.decodedBytes = Buffer.byteLength(plan.body);
      plan.body = encode(typeof plan.body === 'string' ? Buffer.from(plan.body) : plan.body, coding);
      plan.headers = { ...plan.headers, 'content-encoding': contentEncoding(coding) };
    }
    if (dice.clockSkewMs !== 0) {
      plan.faults.push('skewed-clock');
      plan.headers = { ...plan.headers, date: new Date(now + dice.clockSkewMs).toUTCString() };
    }
    return plan;
  }

  /** An answer fault (faults.ts, layer 1) as the partner sends it. */
  private faultAnswer(fault: AnswerFault, token: string): Plan {
    switch (fault.fault) {
      case 'outage':
        return fault.reset
          ? { kind: 'reset', fault: 'outage' }
          : message(503, 'Service Unavailable', 'outage', { 'retry-after': '1' });
      case 'revoked-token':
        return message(401, 'Unauthorized', 'revoked-token', { 'www-authenticate': 'Bearer' });
      case 'keep-alive-drop':
        return { kind: 'drop', fault: 'keep-alive-drop' };
      case 'connection-reset':
        return { kind: 'reset', fault: 'connection-reset' };
      case 'rate-limit':
        return message(
          429,
          'Too Many Requests',
          'rate-limit',
          fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter },
        );
      case 'server-error':
        return this.serverError(fault.status, fault.body, token);
      case 'redirect':
        return {
          kind: 'answer',
          status: fault.status,
          body: MAINTENANCE_PAGE,
          headers: { 'content-type': 'text/html', location: LOGIN_LOCATION },
          faults: ['redirect'],
        };
      case 'non-page-200': {
        const { body, type } = NON_PAGE[fault.body];
        return {
          kind: 'answer',
          status: 200,
          body,
          headers: { 'content-type': type },
          faults: ['non-page-200'],
        };
      }
    }
  }

  private serverError(status: number, body: ServerErrorBody, token: string): Plan {
    const text = SERVER_ERROR_TEXT[status] ?? 'Server Error';
    if (body === 'html')
      return {
        ...message(status, text, 'server-error', { 'content-type': 'text/html' }),
        body: PROXY_ERROR_PAGE,
      };
    if (body === 'empty') return { ...message(status, text, 'server-error'), body: '' };
    if (body === 'token-echo') {
      // A gateway that quotes the request back: the token must stay out of every log and error.
      return {
        ...message(status, text, 'server-error'),
        body: JSON.stringify({ message: `upstream refused the request with Authorization: Bearer ${token}` }),
      };
    }
    return message(status, text, 'server-error');
  }

  // ---- generated feed (/v1) ----

  private feedUpdates(
    params: URLSearchParams,
    pageFaults: (withCursor: boolean) => PageFaults,
  ): Plan | Promise<Plan> {
    const parsed = parseUpdatesQuery(params);
    if (!parsed.ok) return message(400, parsed.message);
    const query = parsed.value;
    const feed = this.feed;
    const o = this.faultOptions;
    let from = feed.firstRetained;
    const faults: Fault[] = [];
    let cursor: CursorState | undefined;
    if (query.pageId !== undefined) {
      cursor = decodeCursor(query.pageId);
      if (!cursor) return message(400, 'invalid pageId');
      if (cursor.k !== feed.key || cursor.x || cursor.p > feed.length || feed.isPurged(cursor.p)) {
        return message(404, PAGE_ID_NOT_FOUND);
      }
      from = cursor.p;
    }
    const rolled = pageFaults(query.pageId !== undefined);
    if (this.expiresAtFrontier(rolled.cursor, cursor))
      return message(404, PAGE_ID_NOT_FOUND, 'expire-cursor');
    if (rolled.cursor === 'stuck-cursor' && query.pageId !== undefined) {
      return {
        kind: 'answer',
        status: 200,
        body: pageBody([], true, query.pageId),
        faults: ['stuck-cursor'],
      };
    }
    if (rolled.cursor === 'repeat-page' && cursor && cursor.b < cursor.p && !feed.isPurged(cursor.b)) {
      from = cursor.b;
      faults.push('repeat-page');
    }
    const filter = filterOf(query);
    const floodRecords = o?.pageFloodRecords ?? 2_000;
    const filler = o?.pageFloodFiller ?? 'stream';
    const maxBytes = o?.pageFloodMaxBytes ?? 6 * 1024 * 1024;
    const streamFlood = rolled.flood && filler === 'stream';
    const page = feed.page(
      from,
      streamFlood ? Math.max(query.pageSize, floodRecords) : query.pageSize,
      filter,
      Date.now(),
    );
    if (streamFlood) {
      faults.push('page-flood');
      let bytes = 0;
      let kept = 0;
      while (kept < page.positions.length && bytes <= maxBytes) {
        bytes += feed.entryBytes(page.positions[kept] ?? 0) + 1;
        kept += 1;
      }
      if (bytes > maxBytes) kept -= 1;
      if (kept > 0 && kept < page.positions.length) {
        page.positions.length = kept;
        page.next = (page.positions[kept - 1] ?? from) + 1;
        page.hasMore = true;
      }
    }
    if (page.positions.length === 0) {
      const body = query.pageId === undefined ? EMPTY_STREAM : pageBody([], false, query.pageId);
      return { kind: 'answer', status: 200, body, faults };
    }
    const giant =
      o?.giantOrderAt === undefined
        ? undefined
        : Math.min(feed.length - 1, Math.floor(o.giantOrderAt * feed.length));
    const cyclePosition =
      o?.cursorCycleAt === undefined ? undefined : Math.floor(o.cursorCycleAt * feed.length);
    const cycles = cyclePosition !== undefined && query.pageId !== undefined && from >= cyclePosition;
    let next: string | undefined = cycles
      ? query.pageId
      : encodeCursor({ k: feed.key, p: page.next, b: page.start });
    if (cycles) faults.push('cursor-cycle');
    let hasMore = page.hasMore || cycles;
    if (rolled.missingNextPageId) {
      faults.push('missing-next-page-id');
      next = undefined;
      hasMore = true;
    }
    this.versionsServed += page.positions.length;
    const entries = page.positions.map((position) =>
      position === giant
        ? this.giant(`feed:${position}`, feed.entryJson(position), o?.giantOrderBytes)
        : feed.entryJson(position),
    );
    const positions = [...page.positions];
    let carried: string[] = entries;
    if (rolled.flood && filler !== 'stream') {
      faults.push('page-flood');
      const extra: string[] = [];
      let bytes = 0;
      for (let i = 0; i < floodRecords; i++) {
        let json: string;
        if (filler === 'junk') {
          json = JUNK_RECORDS[i % JUNK_RECORDS.length] ?? '{}';
        } else {
          // Versions already served (the page's own at the start of the stream), before the page's records.
          const at =
            from === 0
              ? (page.positions[i % page.positions.length] ?? 0)
              : Math.max(0, from - floodRecords) + (i % Math.min(floodRecords, from));
          json = feed.entryJson(at);
          positions.push(at);
        }
        bytes += json.length + 1;
        if (bytes > maxBytes) break;
        extra.push(json);
      }
      carried = [...extra, ...entries];
    }
    const plan: AnswerPlan = {
      kind: 'answer',
      status: 200,
      body: pageBody(carried, hasMore, next),
      faults,
      ...(giant !== undefined && page.positions.includes(giant) ? {} : { positions }),
    };
    if (giant !== undefined && page.positions.includes(giant)) plan.faults.push('giant-order');
    return rolled.bomb ? this.bombed(plan, rolled.bomb, o?.bombBytes) : plan;
  }

  /** Whether a rolled expire-cursor fault expires this cursor: at its stream's frontier, each position once. */
  private expiresAtFrontier(rolled: PageFault | undefined, cursor: CursorState | undefined): boolean {
    if (cursor === undefined) return false;
    const frontier = this.frontiers.get(cursor.k) ?? 0;
    this.frontiers.set(cursor.k, Math.max(frontier, cursor.p));
    const position = `${cursor.k}:${cursor.p}`;
    if (rolled !== 'expire-cursor' || cursor.p < frontier || this.expiredPositions.has(position))
      return false;
    this.expiredPositions.add(position);
    return true;
  }

  /** The entry's JSON inflated past any body cap (cached: it is megabytes). */
  private giant(key: string, json: string, bytes = 12 * 1024 * 1024): string {
    let text = this.giantJson.get(key);
    if (text === undefined) {
      text = inflated(json, bytes);
      this.giantJson.set(key, text);
    }
    return text;
  }

  /** A decompression bomb instead of the page (not readable: no positions delivered). */
  private async bombed(plan: AnswerPlan, coding: Coding, bytes = 256 * 1024 * 1024): Promise<Plan> {
    return {
      ...plan,
      body: await bomb(coding, bytes),
      headers: { ...plan.headers, 'content-encoding': contentEncoding(coding) },
      faults: [...plan.faults, 'bomb'],
      positions: undefined,
      decodedBytes: bytes,
    } as Plan;
  }

  // ---- canned scenarios (/{scenario_id}/v1) ----

  /** The scenario's wire form, built when first asked for (some hold megabytes). */
  private scenario(id: AnyScenarioId): ServedScenario {
    let served = this.served.get(id);
    if (!served) {
      served = serveScenario(SCENARIOS[id], this.anchor);
      this.served.set(id, served);
    }
    return served;
  }

  /** The dice of a scenario that declares faults, for this token (forgotten after scenarioStateTtlMs). */
  private diceOf(scenario: ServedScenario, authorization: string): FaultDice | undefined {
    const { faults, id } = scenario.definition;
    if (faults === undefined) return undefined;
    const now = Date.now();
    for (const [key, state] of this.scenarioDice)
      if (now - state.lastSeen > this.stateTtlMs) this.scenarioDice.delete(key);
    const key = `${id}\u0000${authorization}`;
    const state = this.scenarioDice.get(key) ?? {
      dice: new FaultDice({ seed: 1, ...faults }),
      lastSeen: now,
    };
    state.lastSeen = now;
    this.scenarioDice.set(key, state);
    return state.dice;
  }

  private async scenarioRequest(
    scenario: ServedScenario,
    params: URLSearchParams,
    authorization: string,
    pageFaults: (withCursor: boolean) => PageFaults,
  ): Promise<Plan> {
    const parsed = parseUpdatesQuery(params);
    if (!parsed.ok) return message(400, parsed.message);
    const query = parsed.value;
    let cursor: CursorState | undefined;
    if (query.pageId !== undefined) {
      cursor = decodeCursor(query.pageId);
      if (!cursor) return message(400, 'invalid pageId');
      if (cursor.k !== scenario.key || cursor.p > scenario.entries.length)
        return message(404, PAGE_ID_NOT_FOUND);
      if (cursor.x) return message(404, PAGE_ID_NOT_FOUND, 'expire-cursor');
    }
    const stateFault = this.scenarioFault(scenario.definition.id, authorization, query);
    if (stateFault) return stateFault;
    const rolled = pageFaults(query.pageId !== undefined);
    if (this.expiresAtFrontier(rolled.cursor, cursor))
      return message(404, PAGE_ID_NOT_FOUND, 'expire-cursor');
    const quirk = this.firingQuirk(scenario, authorization, cursor);
    if (quirk?.kind === 'deep-expiry') return message(404, PAGE_ID_NOT_FOUND, 'expire-cursor');
    const overLong = quirk?.kind === 'over-long-cursor' ? quirk.bytes : undefined;
    const options = scenario.definition.faults;
    const filler = options?.pageFloodFiller ?? 'stream';
    const pageSize =
      rolled.flood && filler === 'stream'
        ? Math.max(query.pageSize, options?.pageFloodRecords ?? 2_000)
        : query.pageSize;
    // A flood of junk goes before the page's own records (so they are past the 10,000th).
    const junk = rolled.flood && filler === 'junk' ? (options?.pageFloodRecords ?? 2_000) : 0;
    const { body, giant } = this.scenarioPage(scenario, { ...query, pageSize }, cursor, overLong, junk);
    const faults: Fault[] = [];
    if (overLong !== undefined) faults.push('over-long-cursor');
    if (rolled.flood) faults.push('page-flood');
    if (giant) faults.push('giant-order');
    const plan: AnswerPlan = { kind: 'answer', status: 200, body, faults, positions: [] };
    // A scenario's positions are not tracked; a non-empty list marks a page with data for the delivery dice.
    if (body.startsWith('{"data":[{')) plan.positions = [0];
    return rolled.bomb ? this.bombed(plan, rolled.bomb, options?.bombBytes) : plan;
  }

  /**
   * The hostile scenario's stateful quirk if it fires on this page request: over-long-values' first page
   * request of a token, or deep-expiry's first request of the cursor ending poll 1. Forgotten after
   * scenarioStateTtlMs without requests, like the stateful spec scenarios.
   */
  private firingQuirk(
    scenario: ServedScenario,
    authorization: string,
    cursor: CursorState | undefined,
  ): ScenarioDefinition['quirk'] {
    const { quirk, id } = scenario.definition;
    if (quirk === undefined || quirk.kind === 'cursor-cycle' || quirk.kind === 'record-flood')
      return undefined;
    if (quirk.kind === 'deep-expiry' && cursor?.p !== scenario.pollEnds[0]) return undefined;
    const now = Date.now();
    for (const [key, state] of this.quirks)
      if (now - state.lastSeen > this.stateTtlMs) this.quirks.delete(key);
    const key = `${id}\u0000${authorization}`;
    const state = this.quirks.get(key) ?? { fired: 0, lastSeen: now };
    this.quirks.set(key, state);
    state.lastSeen = now;
    if (state.fired >= 1) return undefined;
    state.fired += 1;
    return quirk;
  }

  private scenarioPage(
    scenario: ServedScenario,
    query: UpdatesQuery,
    cursor: CursorState | undefined,
    overLongCursor?: number,
    junkFirst = 0,
  ): { body: string; giant: boolean } {
    const position = cursor?.p ?? 0;
    const total = scenario.entries.length;
    if (query.pageId === undefined && total === 0) return { body: EMPTY_STREAM, giant: false };
    if (position >= total) return { body: pageBody([], false, query.pageId ?? ''), giant: false };
    const pollEnd = scenario.pollEnds.find((end) => end > position) ?? total;
    const { quirk, faults } = scenario.definition;
    const segment = quirk?.kind === 'cursor-cycle' ? quirk.segment : undefined;
    const segmentEnd = segment === undefined ? pollEnd : (Math.floor(position / segment) + 1) * segment;
    const next = Math.min(position + query.pageSize, pollEnd, segmentEnd);
    // The cursor cycle: the end of the stream hands back the second page's cursor, byte for byte.
    const cycled = segment !== undefined && next >= total;
    const expired = scenario.definition.id === 'test-expired-page-id';
    const nextPageId =
      overLongCursor !== undefined
        ? 'x'.repeat(overLongCursor)
        : encodeCursor({
            k: scenario.key,
            p: cycled ? segment : next,
            b: segment === undefined ? position : cycled ? segment : next,
            ...(expired ? { x: 1 as const } : {}),
          });
    this.versionsServed += next - position;
    const giantAt =
      faults?.giantOrderAt === undefined
        ? undefined
        : Math.min(total - 1, Math.floor(faults.giantOrderAt * total));
    const entries = scenario.entries
      .slice(position, next)
      .map((json, index) =>
        position + index === giantAt
          ? this.giant(`${scenario.key}:${giantAt}`, json, faults?.giantOrderBytes)
          : json,
      );
    const flood = query.pageId === undefined ? scenario.flood : [];
    const junk = Array.from({ length: junkFirst }, (_, i) => JUNK_RECORDS[i % JUNK_RECORDS.length] ?? '{}');
    const cut = quirk?.kind === 'record-flood' ? Math.max(0, entries.length - quirk.after) : 0;
    const records = flood.length > 0 ? [...entries.slice(0, cut), ...flood, ...entries.slice(cut)] : entries;
    const body = pageBody([...junk, ...records], cycled || next < pollEnd, nextPageId);
    return { body, giant: giantAt !== undefined && giantAt >= position && giantAt < next };
  }

  /** test-rate-limit / test-transient-error: the second page request of a run fails once. */
  private scenarioFault(id: AnyScenarioId, authorization: string, query: UpdatesQuery): Plan | undefined {
    if (id !== 'test-rate-limit' && id !== 'test-transient-error') return undefined;
    const now = Date.now();
    for (const [key, run] of this.runs) if (now - run.lastSeen > this.stateTtlMs) this.runs.delete(key);
    const key = `${id}\u0000${authorization}`;
    let run = this.runs.get(key);
    if (query.pageId === undefined || !run) {
      run = { pageRequests: 0, fired: false, retryAt: 0, lastSeen: now };
      this.runs.set(key, run);
    }
    run.lastSeen = now;
    run.pageRequests += 1;
    if (run.pageRequests < 2) return undefined;
    if (id === 'test-transient-error') {
      if (run.fired) return undefined;
      run.fired = true;
      return message(503, 'Service Unavailable', 'server-error');
    }
    if (!run.fired) {
      run.fired = true;
      run.retryAt = now + this.scenarioRetryAfterSeconds * 1000;
      return message(429, 'Too Many Requests', 'rate-limit', {
        'retry-after': String(this.scenarioRetryAfterSeconds),
      });
    }
    if (now < run.retryAt) {
      const seconds = Math.max(1, Math.ceil((run.retryAt - now) / 1000));
      return message(429, 'Too Many Requests', 'rate-limit', { 'retry-after': String(seconds) });
    }
    return undefined;
  }

  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }
}

function filterOf(query: UpdatesQuery): FeedFilter {
  return {
    ...(query.vendorIds ? { vendorIds: query.vendorIds } : {}),
    ...(query.orderIds ? { orderIds: query.orderIds } : {}),
    ...(query.fromTimestamp === undefined ? {} : { fromTimestamp: query.fromTimestamp }),
    ...(query.minAgeMinutes === undefined ? {} : { minAgeMinutes: query.minAgeMinutes }),
  };
}

/** Starts the simulator; resolves once it listens. See ./types.ts and ./README.md. */
export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const simulator = new Simulator(options);
  const server = createServer((req, res) => {
    void simulator.handle(req, res);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    requests: simulator.requests,
    expected: () => simulator.expected(),
    oracle: (scope, before) => simulator.oracle(scope, before),
    purgeBefore: (fraction) => simulator.purgeBefore(fraction),
    showFirst: (entries) => simulator.showFirst(entries),
    faultCounts: () => simulator.faultCounts(),
    versionsServed: () => simulator.versionsServed,
    close: () => {
      closed ??= new Promise<void>((resolve, reject) => {
        simulator.cancelTimers();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
