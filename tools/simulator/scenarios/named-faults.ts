// One scenario per fault of the catalogue (../faults.ts) that no other scenario shows (issue 31): ordinary
// generated orders (epoch-ms timestamps), ids `30NN000000 + …` (NN = 26 … 45), and the fault on the first page
// requests or on all of them, declared as `faults` and carried out by the same dice as the generated feed's.
// What a correct ingester ends with is in expectations.ts and in tools/simulator/README.md.

import { escapeHeavyText } from '../generated-feed.js';
import type { SimOrder } from '../model.js';
import { Random } from '../random.js';
import type { FaultScenarioId } from '../types.js';
import {
  generatedPoll,
  latestAtServeTime,
  present,
  type ScenarioDefinition,
  type ScenarioEntry,
} from './build.js';

/** A definition whose data is built when first read (an import of the simulator builds none of it). */
function lazy(
  definition: Omit<ScenarioDefinition, 'polls'>,
  polls: () => ScenarioEntry[][],
): ScenarioDefinition {
  let built: ScenarioEntry[][] | undefined;
  return Object.defineProperty({ ...definition }, 'polls', {
    enumerable: true,
    get: () => (built ??= polls()),
  }) as ScenarioDefinition;
}

/** A single-poll stream of `versions` generated entries. */
const plain = (seed: number, idBase: number, versions = 25) =>
  latestAtServeTime(generatedPoll({ seed, idBase, versions, vendors: 2 }));

/** Each order's first item named with an escape-heavy text of `chars` characters (same on every version). */
function escapeHeavy(polls: ReturnType<typeof plain>, seed: number, chars: number) {
  const rng = new Random(seed);
  const names = new Map<number, string>();
  return polls.map((poll) =>
    poll.map(({ order, latestVersion }) => {
      const name = names.get(order.id) ?? escapeHeavyText(rng, chars);
      names.set(order.id, name);
      const items = order.items.map((item, index) => (index === 0 ? { ...item, name } : item));
      return { order: { ...order, items }, latestVersion };
    }),
  );
}

const base = (nn: number) => 3_000_000_000 + nn * 1_000_000;

/** The first of `values`, which must be there. */
const first = <T>(values: readonly T[]): T => present(values[0])[0] as T;

// 20 versions, then an order of its own whose wire form the giant-order fault inflates past the cap.
const GIANT_ORDER_ID = base(44) + 999;
function giantPoll(): ScenarioEntry[][] {
  const poll = first(plain(144, base(44), 20));
  const giant: SimOrder = { ...first(poll).order, id: GIANT_ORDER_ID, version: 1 };
  return [[...poll, { order: giant, latestVersion: true }]];
}

export const NAMED_FAULT_SCENARIOS: Readonly<Record<FaultScenarioId, ScenarioDefinition>> = {
  gzip: lazy(
    {
      id: 'gzip',
      summary:
        'every answer gzip-coded (pages, a 429, a 404 pageId not found), though no coding was asked for',
      faults: {
        encoding: 1,
        codings: ['gzip'],
        rateLimit: 1,
        expireCursor: 1,
        limits: { 'rate-limit': 1, 'expire-cursor': 1 },
      },
    },
    () => plain(126, base(26)),
  ),
  deflate: lazy(
    {
      id: 'deflate',
      summary: 'every answer deflate-coded',
      faults: { encoding: 1, codings: ['deflate'] },
    },
    () => plain(127, base(27)),
  ),
  brotli: lazy(
    {
      id: 'brotli',
      summary: 'every answer br-coded',
      faults: { encoding: 1, codings: ['br'] },
    },
    () => plain(128, base(28)),
  ),
  'gzip-bomb': lazy(
    {
      id: 'gzip-bomb',
      summary: 'the first page request answers a gzip body that decodes to 256 MiB of JSON whitespace',
      faults: { bomb: 1, codings: ['gzip'], limits: { bomb: 1 } },
    },
    () => plain(129, base(29)),
  ),
  'byte-order-mark': lazy(
    {
      id: 'byte-order-mark',
      summary:
        'every answer after a UTF-8 byte order mark (pages, a 429, a 404 pageId not found), as a framework writes one',
      faults: {
        byteOrderMark: 1,
        rateLimit: 1,
        expireCursor: 1,
        limits: { 'rate-limit': 1, 'expire-cursor': 1 },
      },
    },
    () => plain(145, base(45)),
  ),
  'slow-headers': lazy(
    {
      id: 'slow-headers',
      summary: 'every page request gets its headers after 12 s (a heavy query, a cold cache): 4 pages, 48 s',
      faults: { slow: 1, slowMs: 12_000 },
    },
    () => plain(130, base(30)),
  ),
  'far-future-retry-after': lazy(
    {
      id: 'far-future-retry-after',
      summary: 'the second page request answers 429 with Retry-After an HTTP-date five years ahead (once)',
      faults: {
        afterRequests: 1,
        rateLimit: 1,
        retryAfterForms: ['far-future-date'],
        limits: { 'rate-limit': 1 },
      },
    },
    () => plain(131, base(31)),
  ),
  'skewed-clock': lazy(
    {
      id: 'skewed-clock',
      summary: "the partner's clock an hour fast: Date headers, and a 429's Retry-After date 2 s ahead in it",
      faults: {
        clockSkewMs: 3_600_000,
        afterRequests: 1,
        rateLimit: 1,
        retryAfterSeconds: 2,
        retryAfterForms: ['http-date'],
        limits: { 'rate-limit': 1 },
      },
    },
    () => plain(132, base(32)),
  ),
  'retry-after-forms': lazy(
    {
      id: 'retry-after-forms',
      summary: 'page requests answer 429 with Retry-After as seconds, a date, a past date, junk, and none',
      faults: {
        afterRequests: 1,
        rateLimit: 0.5,
        retryAfterForms: ['seconds', 'http-date', 'past-date', 'junk', 'absent'],
        limits: { 'rate-limit': 5 },
      },
    },
    () => plain(133, base(33)),
  ),
  'server-errors': lazy(
    {
      id: 'server-errors',
      summary: '5xx with a JSON body, an HTML page, an empty body, and a JSON body echoing the token',
      faults: {
        serverError: 0.5,
        serverErrorBodies: ['json', 'html', 'empty', 'token-echo'],
        limits: { 'server-error': 4 },
      },
    },
    () => plain(134, base(34)),
  ),
  'keep-alive-drop': lazy(
    {
      id: 'keep-alive-drop',
      summary: 'a page request on a reused keep-alive connection: the connection closed unanswered (3 times)',
      faults: { keepAliveDrop: 1, limits: { 'keep-alive-drop': 3 } },
    },
    () => plain(135, base(35)),
  ),
  'reset-after-headers': lazy(
    {
      id: 'reset-after-headers',
      summary: 'the first page request: the headers and a few bytes, then the connection reset',
      faults: { resetAfterHeaders: 1, limits: { 'reset-after-headers': 1 } },
    },
    () => plain(136, base(36)),
  ),
  'truncated-body': lazy(
    {
      id: 'truncated-body',
      summary: 'the first page request: half the body Content-Length announces, then the connection closed',
      faults: { truncatedBody: 1, limits: { 'truncated-body': 1 } },
    },
    () => plain(137, base(37)),
  ),
  'truncated-json': lazy(
    {
      id: 'truncated-json',
      summary:
        'escape-heavy 64 KiB names; the first page request answers a complete 200 cut inside one of them',
      faults: { truncatedJson: 1, limits: { 'truncated-json': 1 } },
    },
    () => escapeHeavy(plain(138, base(38), 12), 138, 128 * 1024),
  ),
  'endless-body': lazy(
    {
      id: 'endless-body',
      summary: 'the first page request answers a 200 whose body never ends',
      faults: { endlessBody: 1, limits: { 'endless-body': 1 } },
    },
    () => plain(139, base(39)),
  ),
  'non-page-200': lazy(
    {
      id: 'non-page-200',
      summary: 'page requests answer 200 that is no Page: HTML, empty, text, [], null, {}, wrong types',
      faults: { nonPage200: 0.5, limits: { 'non-page-200': 7 } },
    },
    () => plain(140, base(40)),
  ),
  'page-flood': lazy(
    {
      id: 'page-flood',
      summary:
        'the first page carries 10,000 tiny invalid records (4 distinct), then the orders it was asked for',
      faults: {
        pageFlood: 1,
        pageFloodFiller: 'junk',
        pageFloodRecords: 10_000,
        limits: { 'page-flood': 1 },
      },
      junkRecords: 4,
    },
    () => plain(141, base(41)),
  ),
  outage: lazy(
    {
      id: 'outage',
      summary:
        'half a second after the first page request, every request answers 503 or is reset for 3 minutes',
      faults: { outages: [{ afterMs: 500, forMs: 180_000 }] },
    },
    () => plain(142, base(42), 60),
  ),
  'escape-heavy': lazy(
    {
      id: 'escape-heavy',
      summary:
        'item names of 20,000 characters: quotes, backslashes, control characters, emoji, a 16-digit run',
    },
    () => escapeHeavy(plain(143, base(43)), 143, 20_000),
  ),
  'giant-order': lazy(
    {
      id: 'giant-order',
      summary: '20 versions, then one order of 12 MiB: over the 8 MiB body cap even in a page of one',
      faults: { giantOrderAt: 1, giantOrderBytes: 12 * 1024 * 1024 },
      unreadableOrderIds: [GIANT_ORDER_ID],
      stop: 'order-over-body-cap',
    },
    () => giantPoll(),
  ),
};
