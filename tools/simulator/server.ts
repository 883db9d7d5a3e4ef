// The partner API simulator: a node:http server answering the two read endpoints of the spec (section 4)
// for the generated feed under /v1 and for the canned scenarios under /{scenario_id}/v1.
//
// Flow of a request: 1. bearer check (401) 2. route (404, 405) 3. for /v1, injected transport faults
// (reset, 429, 5xx, slow) 4. query validation (400) 5. cursor decoding (400 garbled, 404 expired/purged)
// 6. scenario state faults (test-rate-limit, test-transient-error) and the hostile scenarios' quirks
// 7. the page or the order.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CursorState, decodeCursor, encodeCursor } from './cursor.js';
import { type FeedFilter, GeneratedFeed } from './generated-feed.js';
import { type SimOrder, toWire } from './model.js';
import { parseOrderId, parseUpdatesQuery, type UpdatesQuery } from './query.js';
import { Random } from './random.js';
import { SCENARIOS, type ScenarioDefinition } from './scenarios/index.js';
import { TokenRateLimit } from './token-rate-limit.js';
import {
  ALL_SCENARIO_IDS,
  type AnyScenarioId,
  type ExpectedState,
  type FaultOptions,
  type RequestLogEntry,
  type RunningSimulator,
  type SimulatorOptions,
} from './types.js';

type Fault = NonNullable<RequestLogEntry['fault']>;

type Reply =
  | {
      kind: 'response';
      status: number;
      body: string;
      headers?: Record<string, string>;
      fault?: Fault;
      /** Send the body one byte a second (the trickle scenario). */
      trickle?: boolean;
    }
  | { kind: 'reset' };

const HOUR = 3_600_000;
const ROUTE = /^(?:\/([^/]+))?\/v1\/(?:(orderUpdates)|orders\/([^/]+))$/;
const BEARER = /^Bearer +(\S+)$/i;

const message = (status: number, text: string, fault?: Fault, headers?: Record<string, string>): Reply => ({
  kind: 'response',
  status,
  body: JSON.stringify({ message: text }),
  ...(fault === undefined ? {} : { fault }),
  ...(headers === undefined ? {} : { headers }),
});

const EMPTY_STREAM = '{"data":[],"hasMore":false}';

function pageBody(entries: readonly string[], hasMore: boolean, nextPageId: string): string {
  return `{"data":[${entries.join(',')}],"hasMore":${hasMore},"nextPageId":${JSON.stringify(nextPageId)}}`;
}

/** GET .../orders/{id}: 400 for an id that is not an integer, 404 for an unknown one, else the order. */
function orderReply(rawId: string, latestJson: (id: number) => string | undefined): Reply {
  const id = parseOrderId(rawId);
  if (id === undefined) return message(400, 'order id must be an integer');
  const order = latestJson(id);
  return order === undefined
    ? message(404, 'order not found')
    : { kind: 'response', status: 200, body: order };
}

const PAGE_ID_NOT_FOUND = 'pageId not found';

function isScenarioId(value: string): value is AnyScenarioId {
  return (ALL_SCENARIO_IDS as readonly string[]).includes(value);
}

const MAINTENANCE_PAGE =
  '<!DOCTYPE html><html><head><title>Down for maintenance</title></head>' +
  '<body><h1>We will be back shortly</h1><p>Scheduled maintenance.</p></body></html>';

/** Where the redirect scenario sends the client: a login page, with a query that must not reach a log. */
const LOGIN_LOCATION =
  'https://login.partner.example/sso/authorize?return_to=%2Fv1%2ForderUpdates&session=8f2c0d17e4b9';

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

type TransportFault =
  | { kind: 'connection-reset' }
  | { kind: 'rate-limit'; retryAfter: string }
  | { kind: 'server-error'; status: number }
  | { kind: 'slow'; ms: number };

/** Seeded fault dice for the generated feed: each kind is an independent roll, the first hit wins. */
class FaultDice {
  private readonly rng: Random;
  private burstLeft = 0;
  private rateLimits = 0;

  constructor(private readonly options: FaultOptions) {
    this.rng = new Random(options.seed);
  }

  transport(now: number): TransportFault | undefined {
    const o = this.options;
    if (this.burstLeft > 0) {
      this.burstLeft -= 1;
      return { kind: 'server-error', status: this.rng.pick([500, 502, 503]) };
    }
    if (this.rng.chance(o.connectionReset ?? 0)) return { kind: 'connection-reset' };
    if (this.rng.chance(o.rateLimit ?? 0)) {
      const seconds = o.retryAfterSeconds ?? 1;
      // Alternates the two forms of RFC 9110: delta-seconds, then an HTTP-date (rounded up to a second).
      const retryAfter =
        this.rateLimits++ % 2 === 0
          ? String(seconds)
          : new Date(Math.ceil((now + seconds * 1000) / 1000) * 1000).toUTCString();
      return { kind: 'rate-limit', retryAfter };
    }
    if (this.rng.chance(o.serverError ?? 0)) {
      this.burstLeft = Math.max(0, (o.serverErrorBurst ?? 1) - 1);
      return { kind: 'server-error', status: this.rng.pick([500, 502, 503]) };
    }
    if (this.rng.chance(o.slow ?? 0)) return { kind: 'slow', ms: o.slowMs ?? 200 };
    return undefined;
  }

  cursor(): 'expire-cursor' | 'repeat-page' | undefined {
    if (this.rng.chance(this.options.expireCursor ?? 0)) return 'expire-cursor';
    if (this.rng.chance(this.options.repeatPage ?? 0)) return 'repeat-page';
    return undefined;
  }
}

const SERVER_ERROR_TEXT: Record<number, string> = {
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** Fault progress of a stateful scenario for one token (one "run" since the last no-pageId request). */
interface RunState {
  pageRequests: number;
  fired: boolean;
  retryAt: number;
  lastSeen: number;
}

class Simulator {
  readonly requests: RequestLogEntry[] = [];
  private readonly feed: GeneratedFeed;
  private readonly scenarios: Map<AnyScenarioId, ServedScenario>;
  private readonly runs = new Map<string, RunState>();
  /** How often each hostile scenario's quirk has fired, per token. */
  private readonly quirks = new Map<string, { fired: number; lastSeen: number }>();
  private readonly dice: FaultDice | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stateTtlMs: number;
  private readonly scenarioRetryAfterSeconds: number;
  private readonly tokens: ReadonlySet<string>;
  private readonly latencyMs: number;
  private readonly tokenRateLimit: TokenRateLimit | undefined;

  constructor(options: SimulatorOptions) {
    this.latencyMs = options.latencyMs ?? 0;
    this.tokenRateLimit = options.tokenRateLimit && new TokenRateLimit(options.tokenRateLimit);
    const now = Date.now();
    this.feed = new GeneratedFeed(options.feed, options.feed?.endsAt ?? now - 3 * HOUR);
    const anchor = Math.floor(now / 1000) * 1000;
    this.scenarios = new Map(ALL_SCENARIO_IDS.map((id) => [id, serveScenario(SCENARIOS[id], anchor)]));
    this.dice = options.faults ? new FaultDice(options.faults) : undefined;
    this.stateTtlMs = options.scenarioStateTtlMs ?? 3 * 60_000;
    this.scenarioRetryAfterSeconds = options.scenarioRetryAfterSeconds ?? 1;
    this.tokens = new Set([options.token, ...(options.additionalTokens ?? [])]);
  }

  expected(): ExpectedState {
    return this.feed.expected();
  }

  purgeBefore(fraction: number): void {
    this.feed.purgeBefore(fraction);
  }

  /** Order versions in every page answered so far (repeats and duplicates included). */
  versionsServed = 0;

  faultCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const entry of this.requests) {
      if (entry.fault) counts[entry.fault] = (counts[entry.fault] ?? 0) + 1;
    }
    return counts;
  }

  cancelTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const entry: RequestLogEntry = {
      method: req.method ?? '',
      url: req.url ?? '',
      authorization: req.headers.authorization,
      status: 0,
    };
    let reply: Reply;
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    try {
      reply = await this.route(req);
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      reply = message(500, `simulator error: ${detail}`);
    }
    if (reply.kind === 'reset') {
      entry.fault = 'connection-reset';
      this.requests.push(entry);
      req.socket.resetAndDestroy();
      return;
    }
    entry.status = reply.status;
    if (reply.fault) entry.fault = reply.fault;
    this.requests.push(entry);
    res.writeHead(reply.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(reply.body),
      ...reply.headers,
    });
    if (reply.trickle) this.trickle(res, Buffer.from(reply.body));
    else res.end(reply.body);
  }

  /** One byte a second until the body is sent or the client hangs up (then nothing more is sent). */
  private trickle(res: ServerResponse, body: Buffer): void {
    let sent = 0;
    let closed = false;
    res.once('close', () => {
      closed = true;
    });
    const tick = (): void => {
      if (closed) return;
      if (sent >= body.length) {
        res.end();
        return;
      }
      res.write(body.subarray(sent, sent + 1));
      sent += 1;
      void this.delay(1000).then(tick);
    };
    tick();
  }

  private async route(req: IncomingMessage): Promise<Reply> {
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
    if (prefix === undefined) return this.feedRequest(orderId, url.searchParams);
    if (prefix === 'test-invalid-token') {
      return message(401, 'Unauthorized', undefined, { 'www-authenticate': 'Bearer' });
    }
    const scenario = this.scenarios.get(prefix);
    if (!scenario) return message(404, 'not found');
    return this.scenarioRequest(scenario, orderId, url.searchParams, req.headers.authorization ?? '');
  }

  // ---- generated feed (/v1) ----

  private async feedRequest(orderId: string | undefined, params: URLSearchParams): Promise<Reply> {
    const fault = this.dice?.transport(Date.now());
    let slow = false;
    if (fault?.kind === 'connection-reset') return { kind: 'reset' };
    if (fault?.kind === 'rate-limit') {
      return message(429, 'Too Many Requests', 'rate-limit', { 'retry-after': fault.retryAfter });
    }
    if (fault?.kind === 'server-error') {
      return message(fault.status, SERVER_ERROR_TEXT[fault.status] ?? 'Server Error', 'server-error');
    }
    if (fault?.kind === 'slow') {
      await this.delay(fault.ms);
      slow = true;
    }
    const reply =
      orderId === undefined
        ? this.feedUpdates(params, !slow)
        : orderReply(orderId, (id) => this.feed.latestOrderJson(id));
    return slow && reply.kind === 'response' && reply.fault === undefined
      ? { ...reply, fault: 'slow' }
      : reply;
  }

  private feedUpdates(params: URLSearchParams, cursorFaults: boolean): Reply {
    const parsed = parseUpdatesQuery(params);
    if (!parsed.ok) return message(400, parsed.message);
    const query = parsed.value;
    const feed = this.feed;
    let from = feed.firstRetained;
    let fault: Fault | undefined;
    if (query.pageId !== undefined) {
      const cursor = decodeCursor(query.pageId);
      if (!cursor) return message(400, 'invalid pageId');
      if (cursor.k !== feed.key || cursor.x || cursor.p > feed.length || feed.isPurged(cursor.p)) {
        return message(404, PAGE_ID_NOT_FOUND);
      }
      from = cursor.p;
      const roll = cursorFaults ? this.dice?.cursor() : undefined;
      if (roll === 'expire-cursor') return message(404, PAGE_ID_NOT_FOUND, 'expire-cursor');
      if (roll === 'repeat-page' && cursor.b < cursor.p && !feed.isPurged(cursor.b)) {
        from = cursor.b;
        fault = 'repeat-page';
      }
    }
    const page = feed.page(from, query.pageSize, filterOf(query), Date.now());
    if (page.positions.length === 0) {
      const body = query.pageId === undefined ? EMPTY_STREAM : pageBody([], false, query.pageId);
      return { kind: 'response', status: 200, body };
    }
    const next = encodeCursor({ k: feed.key, p: page.next, b: page.start });
    this.versionsServed += page.positions.length;
    const body = pageBody(
      page.positions.map((position) => feed.entryJson(position)),
      page.hasMore,
      next,
    );
    return { kind: 'response', status: 200, body, ...(fault === undefined ? {} : { fault }) };
  }

  // ---- canned scenarios (/{scenario_id}/v1) ----

  private scenarioRequest(
    scenario: ServedScenario,
    orderId: string | undefined,
    params: URLSearchParams,
    authorization: string,
  ): Reply {
    if (orderId !== undefined) return orderReply(orderId, (id) => scenario.latestOrder.get(id));
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
    const quirk = this.firingQuirk(scenario, authorization, cursor);
    if (quirk?.kind === 'deep-expiry') return message(404, PAGE_ID_NOT_FOUND, 'expire-cursor');
    if (quirk?.kind === 'redirect') {
      return {
        kind: 'response',
        status: 302,
        body: MAINTENANCE_PAGE,
        headers: { 'content-type': 'text/html', location: LOGIN_LOCATION },
        fault: 'redirect',
      };
    }
    if (quirk?.kind === 'html-200') {
      return {
        kind: 'response',
        status: 200,
        body: MAINTENANCE_PAGE,
        headers: { 'content-type': 'text/html' },
        fault: 'html',
      };
    }
    const overLong = quirk?.kind === 'over-long-cursor' ? quirk.bytes : undefined;
    const body = this.scenarioPage(scenario, query, cursor, overLong);
    if (quirk?.kind === 'trickle')
      return { kind: 'response', status: 200, body, fault: 'trickle', trickle: true };
    return {
      kind: 'response',
      status: 200,
      body,
      ...(overLong === undefined ? {} : { fault: 'over-long-cursor' as const }),
    };
  }

  /**
   * The hostile scenario's stateful quirk if it fires on this page request: the first (html-200: the first
   * `times`) page requests of a token, or deep-expiry's first request of the cursor ending poll 1. Forgotten
   * after scenarioStateTtlMs without requests, like the stateful spec scenarios.
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
    if (state.fired >= (quirk.kind === 'html-200' ? quirk.times : 1)) return undefined;
    state.fired += 1;
    return quirk;
  }

  private scenarioPage(
    scenario: ServedScenario,
    query: UpdatesQuery,
    cursor: CursorState | undefined,
    overLongCursor?: number,
  ): string {
    const position = cursor?.p ?? 0;
    const total = scenario.entries.length;
    if (query.pageId === undefined && total === 0) return EMPTY_STREAM;
    if (position >= total) return pageBody([], false, query.pageId ?? '');
    const pollEnd = scenario.pollEnds.find((end) => end > position) ?? total;
    const { quirk } = scenario.definition;
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
    const entries = scenario.entries.slice(position, next);
    const flood = query.pageId === undefined ? scenario.flood : [];
    const cut = quirk?.kind === 'record-flood' ? Math.max(0, entries.length - quirk.after) : 0;
    return pageBody(
      flood.length > 0 ? [...entries.slice(0, cut), ...flood, ...entries.slice(cut)] : entries,
      cycled || next < pollEnd,
      nextPageId,
    );
  }

  /** test-rate-limit / test-transient-error: the second page request of a run fails once. */
  private scenarioFault(id: AnyScenarioId, authorization: string, query: UpdatesQuery): Reply | undefined {
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
    purgeBefore: (fraction) => simulator.purgeBefore(fraction),
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
