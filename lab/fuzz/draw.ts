// A seed → a partner: generated data, a composition of faults from the simulator's catalogue
// (tools/simulator/faults.ts), the pipeline's settings, and how the run is driven. Pure: the same seed and
// profile draw the same partner on every machine (mulberry32, as the simulator's own dice).
//
// Two profiles run the same code: `fast` (the test tiers: small feeds, faults that cost no real time) and
// `full` (the soak: feeds of hundreds of orders, slow headers past 10 s, trickles cut at 30 s, outages of
// minutes through local mode, decompression bombs of 256 MiB, floods past 10,000 records, far-future 429s).
import { FAULT_CATALOGUE } from '../../tools/simulator/faults.js';
import { Random } from '../../tools/simulator/random.js';
import {
  CODINGS,
  type Coding,
  type Fault,
  type FaultOptions,
  NON_PAGE_BODIES,
  type PageFloodFiller,
  type RetryAfterForm,
  SERVER_ERROR_BODIES,
  type SimulatorOptions,
} from '../../tools/simulator/types.js';

export const PROFILES = ['fast', 'full'] as const;
export type Profile = (typeof PROFILES)[number];
export type Mode = 'in-process' | 'local';

const MiB = 1024 * 1024;

export interface PipelineSettings {
  pageSize: number;
  maxPagesPerRun: number;
  maxPageBodyBytes: number;
  /** CURSOR_RECOVERY_LOOKBACK_MINUTES; undefined: a recovery restarts from the earliest entry. */
  lookbackMinutes?: number;
  /** PARTNER_REQUESTS_PER_SECOND; undefined (the default): the budget learns the rate from 429s. */
  requestsPerSecond?: number;
  logLevel: 'DEBUG' | 'INFO' | 'WARN';
}

export interface Partner {
  seed: number;
  profile: Profile;
  mode: Mode;
  feed: NonNullable<SimulatorOptions['feed']>;
  faults: FaultOptions;
  pipeline: PipelineSettings;
  /** The faults switched on, by catalogue name. */
  kinds: Fault[];
  /** How a correct ingester may end: drained, or at one of these documented stops (the first it meets). */
  stops: { must: string[]; may: string[] };
  /** Time the partner spends failing on purpose (its outages): no progress is expected before it ends. */
  timedFaultsMs: number;
  /**
   * How long the seed may take in all, and without progress once the timed faults are over; or in
   * `stallRuns` runs in a row that took at least 45 s in all (quick failures, not a hold waited out).
   */
  budgetMs: number;
  stallMs: number;
  stallRuns: number;
}

/** What local mode deploys (cdk.json, DEFAULTS) and runs (one page a run, tools/local/README.md). */
const LOCAL_MODE_PIPELINE = {
  pageSize: 100,
  maxPagesPerRun: 1,
  maxPageBodyBytes: 8 * MiB,
  logLevel: 'INFO',
} as const;

const uniform = (rng: Random, min: number, max: number) => min + rng.next() * (max - min);
const round3 = (value: number) => Math.round(value * 1000) / 1000;

/** A non-empty random subset of `values`, in their order. */
function subset<T>(rng: Random, values: readonly T[]): T[] {
  const chosen = values.filter(() => rng.chance(0.5));
  return chosen.length > 0 ? chosen : [rng.pick(values)];
}

/** One fault's switch: drawn with its own chance, given the profile and what was drawn before it. */
interface FaultDraw {
  fault: Fault;
  chance: number;
  draw(rng: Random, ctx: DrawContext): Partial<FaultOptions>;
}

interface DrawContext {
  profile: Profile;
  pipeline: PipelineSettings;
  fast: boolean;
}

const FAULT_DRAWS: readonly FaultDraw[] = [
  {
    fault: 'rate-limit',
    chance: 0.35,
    draw: (rng, { fast }) => {
      const forms: RetryAfterForm[] = subset(rng, ['seconds', 'http-date', 'past-date', 'junk', 'absent']);
      // Far-future values hold a whole token's feeds: the soak tries them, the tiers do not.
      if (!fast && rng.chance(0.25)) forms.push(rng.pick(['far-future-seconds', 'far-future-date'] as const));
      return {
        rateLimit: round3(uniform(rng, 0.02, 0.12)),
        retryAfterSeconds: rng.int(0, fast ? 1 : 3),
        retryAfterForms: forms,
      };
    },
  },
  {
    fault: 'skewed-clock',
    chance: 0.2,
    draw: (rng) => ({
      clockSkewMs: rng.pick([-1, 1]) * rng.pick([30_000, 300_000, 3_600_000, 86_400_000]),
    }),
  },
  {
    fault: 'server-error',
    chance: 0.35,
    draw: (rng) => ({
      serverError: round3(uniform(rng, 0.02, 0.12)),
      serverErrorBurst: rng.int(1, 3),
      serverErrorBodies: subset(rng, SERVER_ERROR_BODIES),
    }),
  },
  {
    fault: 'connection-reset',
    chance: 0.25,
    draw: (rng) => ({ connectionReset: round3(uniform(rng, 0.01, 0.08)) }),
  },
  {
    fault: 'keep-alive-drop',
    chance: 0.2,
    draw: (rng) => ({ keepAliveDrop: round3(uniform(rng, 0.05, 0.3)) }),
  },
  {
    fault: 'reset-after-headers',
    chance: 0.2,
    draw: (rng) => ({ resetAfterHeaders: round3(uniform(rng, 0.01, 0.08)) }),
  },
  {
    fault: 'truncated-body',
    chance: 0.2,
    draw: (rng) => ({ truncatedBody: round3(uniform(rng, 0.01, 0.08)) }),
  },
  {
    fault: 'truncated-json',
    chance: 0.15,
    draw: (rng) => ({ truncatedJson: round3(uniform(rng, 0.01, 0.08)) }),
  },
  {
    fault: 'slow',
    chance: 0.25,
    draw: (rng, { fast }) => {
      // The soak's partner is sometimes slow on every page (12 s to the headers: a heavy query, a cold
      // cache), which only a client that waits for its whole deadline gets past; else now and then.
      if (!fast && rng.chance(0.3)) return { slow: 1, slowMs: rng.pick([11_000, 14_000]) };
      const slowMs = fast ? rng.pick([100, 500, 1500]) : rng.pick([200, 2_000, 8_000, 12_000, 20_000]);
      return {
        slow: round3(uniform(rng, 0.02, 0.1)),
        slowMs,
        ...(slowMs >= 5_000 ? { limits: { slow: rng.int(1, 3) } } : {}),
      };
    },
  },
  {
    fault: 'trickle',
    chance: 0.12,
    draw: (rng, { fast }) =>
      // The soak's trickle is a byte a second (a request cut at its total deadline); the tiers' finishes.
      fast || rng.chance(0.5)
        ? { trickle: round3(uniform(rng, 0.02, 0.08)), trickleChunkBytes: 8_192, trickleIntervalMs: 20 }
        : { trickle: 0.05, trickleChunkBytes: 1, trickleIntervalMs: 1_000, limits: { trickle: 1 } },
  },
  {
    fault: 'endless-body',
    chance: 0.12,
    draw: (rng) => ({ endlessBody: round3(uniform(rng, 0.02, 0.06)), limits: { 'endless-body': 3 } }),
  },
  {
    fault: 'non-page-200',
    chance: 0.25,
    draw: (rng) => ({
      nonPage200: round3(uniform(rng, 0.02, 0.1)),
      nonPageBodies: subset(rng, NON_PAGE_BODIES),
    }),
  },
  {
    fault: 'redirect',
    chance: 0.2,
    draw: (rng) => ({ redirect: round3(uniform(rng, 0.01, 0.06)) }),
  },
  {
    fault: 'encoding',
    chance: 0.35,
    // Mostly every answer, as a gateway in front of the partner compresses; sometimes some of them.
    draw: (rng) => ({
      encoding: rng.chance(0.7) ? 1 : round3(uniform(rng, 0.2, 1)),
      codings: subset(rng, CODINGS),
    }),
  },
  {
    fault: 'bomb',
    chance: 0.12,
    draw: (rng, { fast }) => ({
      bomb: round3(uniform(rng, 0.02, 0.06)),
      bombBytes: fast ? 32 * MiB : rng.pick([64 * MiB, 256 * MiB]),
      limits: { bomb: 2 },
    }),
  },
  {
    fault: 'page-flood',
    chance: 0.2,
    draw: (rng, { fast, pipeline }) => {
      const filler: PageFloodFiller = rng.pick(['stream', 'junk', 'duplicates']);
      // Past 10,000 records only with junk: tiny, so moto's queues stay shallow however many there are.
      const records =
        filler === 'junk'
          ? rng.pick(fast ? [150, 600, 2_000] : [300, 2_000, 10_500, 12_000])
          : rng.pick(fast ? [120, 300] : [150, 1_000, 3_000]);
      return {
        pageFlood: round3(uniform(rng, 0.03, 0.15)),
        pageFloodFiller: filler,
        pageFloodRecords: records,
        pageFloodMaxBytes: Math.floor(pipeline.maxPageBodyBytes * 0.8),
        limits: { 'page-flood': filler === 'junk' ? 3 : 6 },
      };
    },
  },
  {
    fault: 'repeat-page',
    chance: 0.25,
    draw: (rng) => ({ repeatPage: round3(uniform(rng, 0.02, 0.15)) }),
  },
  {
    fault: 'expire-cursor',
    chance: 0.25,
    draw: (rng) => ({ expireCursor: round3(uniform(rng, 0.01, 0.06)) }),
  },
  {
    fault: 'stuck-cursor',
    chance: 0.08,
    draw: (rng) => ({ stuckCursor: round3(uniform(rng, 0.02, 0.05)), limits: { 'stuck-cursor': 2 } }),
  },
  {
    fault: 'missing-next-page-id',
    chance: 0.08,
    draw: (rng) => ({
      missingNextPageId: round3(uniform(rng, 0.02, 0.05)),
      limits: { 'missing-next-page-id': 2 },
    }),
  },
  {
    fault: 'cursor-cycle',
    chance: 0.05,
    draw: (rng) => ({ cursorCycleAt: round3(uniform(rng, 0.2, 0.9)) }),
  },
  {
    fault: 'giant-order',
    chance: 0.05,
    draw: (rng, { pipeline }) => ({
      giantOrderAt: round3(uniform(rng, 0.1, 0.9)),
      giantOrderBytes: pipeline.maxPageBodyBytes + MiB,
    }),
  },
  {
    fault: 'revoked-token',
    chance: 0.03,
    draw: (rng) => ({ revokeTokenAfter: rng.int(5, 60) }),
  },
  {
    fault: 'outage',
    chance: 0.07,
    draw: (rng, { fast }) => ({
      outages: [
        {
          afterMs: rng.int(0, fast ? 1_000 : 20_000),
          forMs: fast ? rng.pick([1_000, 3_000]) : rng.pick([5_000, 30_000, 90_000, 180_000]),
        },
      ],
    }),
  },
];

/**
 * Faults the catalogue gained after seeds had run, failed and been kept as regressions: drawn from a stream of
 * their own, so that every earlier seed still draws the partner it drew.
 */
const LATER_DRAWS: readonly FaultDraw[] = [
  {
    fault: 'byte-order-mark',
    chance: 0.15,
    // Mostly on every answer, as a framework that writes one does.
    draw: (rng) => ({ byteOrderMark: rng.chance(0.7) ? 1 : round3(uniform(rng, 0.1, 0.5)) }),
  },
];

/**
 * The probabilities per request the fast profile triples. Not a repeated page's: repeats in a row look like a
 * cycle (and end a run at the documented stuck-cursor), as they should once they come that often.
 */
const PER_REQUEST = [
  'rateLimit',
  'serverError',
  'connectionReset',
  'keepAliveDrop',
  'resetAfterHeaders',
  'truncatedBody',
  'truncatedJson',
  'slow',
  'trickle',
  'endlessBody',
  'nonPage200',
  'redirect',
  'bomb',
  'pageFlood',
  'expireCursor',
  'stuckCursor',
  'missingNextPageId',
] as const satisfies ReadonlyArray<keyof FaultOptions>;

/** Limits merged over the draws (each draw may add its own). */
function merge(into: FaultOptions, more: Partial<FaultOptions>): void {
  const { limits, ...rest } = more;
  Object.assign(into, rest);
  if (limits) into.limits = { ...into.limits, ...limits };
}

/** The stops a fault class allows (tools/simulator/faults.ts FAULT_CATALOGUE). */
function stopsOf(kinds: readonly Fault[]): Partner['stops'] {
  const must: string[] = [];
  const may: string[] = [];
  for (const kind of kinds) {
    const entry = FAULT_CATALOGUE.find((candidate) => candidate.fault === kind);
    if (entry?.class.kind === 'stop') must.push(entry.class.outcome);
    if (entry?.class.kind === 'exact-or-stop') may.push(entry.class.outcome);
  }
  return { must, may: [...may, ...must] };
}

export function drawPartner(seed: number, profile: Profile, mode?: Mode): Partner {
  const rng = new Random((Math.imul(seed, 0x9e3779b1) ^ (profile === 'fast' ? 0x5f5f : 0xf011)) >>> 0);
  const fast = profile === 'fast';
  const pipeline: PipelineSettings = {
    pageSize: rng.pick(fast ? [10, 25, 50] : [1, 5, 10, 25, 50, 100, 100]),
    maxPagesPerRun: rng.pick([1, 2, 5, 20, 50]),
    maxPageBodyBytes: rng.pick(fast ? [2 * MiB, 8 * MiB] : [2 * MiB, 4 * MiB, 8 * MiB, 8 * MiB, 16 * MiB]),
    logLevel: rng.pick(['DEBUG', 'INFO', 'WARN'] as const),
  };
  if (rng.chance(0.4)) pipeline.lookbackMinutes = rng.pick([30, 120, 1_440]);
  if (rng.chance(0.25)) pipeline.requestsPerSecond = rng.int(2, 50);
  // About 150 pages at most: page size 1 gets a small feed.
  const maxOrders = Math.max(10, Math.min(fast ? 25 : 120, pipeline.pageSize * 50));
  const feed: Partner['feed'] = {
    seed: rng.int(1, 2 ** 31),
    orders: rng.int(Math.min(10, maxOrders), maxOrders),
    vendors: rng.int(1, 6),
    currencies: subset(rng, ['EUR', 'GBP', 'USD', 'JPY']),
    duplicateVersions: round3(rng.chance(0.5) ? uniform(rng, 0, 0.1) : 0),
    outOfOrderVersions: round3(rng.chance(0.5) ? uniform(rng, 0, 0.1) : 0),
  };
  if (rng.chance(0.25)) {
    feed.escapeHeavy = round3(uniform(rng, 0.05, 0.3));
    feed.longStringBytes = rng.pick(fast ? [500, 4_000] : [1_000, 8_000, 60_000]);
  }
  const faults: FaultOptions = { seed: rng.int(1, 2 ** 31) };
  const kinds: Fault[] = [];
  const ctx: DrawContext = { profile, pipeline, fast };
  const later = new Random((Math.imul(seed, 0x85ebca6b) ^ (fast ? 0x1a7e : 0x1a7f)) >>> 0);
  for (const [dice, draws] of [
    [rng, FAULT_DRAWS],
    [later, LATER_DRAWS],
  ] as const) {
    for (const draw of draws) {
      if (!dice.chance(draw.chance)) continue;
      kinds.push(draw.fault);
      merge(faults, draw.draw(dice, ctx));
    }
  }
  if (faults.bomb !== undefined && faults.codings === undefined) faults.codings = [rng.pick<Coding>(CODINGS)];
  // A fast partner's feed is a few pages: its faults come more often, or few would fire at all.
  if (fast)
    for (const key of PER_REQUEST)
      if (faults[key] !== undefined) faults[key] = Math.min(0.5, round3((faults[key] ?? 0) * 3));
  // A partner slow on every page: a few pages, each worth its 12 s.
  if (faults.slow === 1) {
    feed.orders = Math.min(feed.orders, 30);
    pipeline.pageSize = Math.max(pipeline.pageSize, 50);
  }
  const timedFaultsMs = (faults.outages ?? []).reduce((end, w) => Math.max(end, w.afterMs + w.forMs), 0);
  // Outages of half a minute and more are what local mode (a process that gives up or waits) must ride out.
  const drawnMode: Mode = !fast && (timedFaultsMs >= 30_000 || rng.chance(0.05)) ? 'local' : 'in-process';
  const chosen = mode ?? drawnMode;
  if (chosen === 'local') {
    // Local mode runs the stack's defaults: what the partner's faults are sized by follows them.
    Object.assign(pipeline, LOCAL_MODE_PIPELINE);
    if (faults.pageFloodMaxBytes !== undefined)
      faults.pageFloodMaxBytes = Math.floor(pipeline.maxPageBodyBytes * 0.8);
    if (faults.giantOrderBytes !== undefined) faults.giantOrderBytes = pipeline.maxPageBodyBytes + MiB;
    delete pipeline.lookbackMinutes;
    delete pipeline.requestsPerSecond;
  }
  return {
    seed,
    profile,
    mode: chosen,
    feed,
    faults,
    pipeline,
    kinds,
    stops: stopsOf(kinds),
    timedFaultsMs,
    budgetMs: fast ? 90_000 : 20 * 60_000 + timedFaultsMs,
    stallMs: fast ? 30_000 : 6 * 60_000,
    stallRuns: 8,
  };
}

/** One line for the report: the feed, the settings and every fault switched on. */
export function describePartner(partner: Partner): string {
  const { feed, pipeline, kinds } = partner;
  const extras = feed.escapeHeavy ? `, escape-heavy ${feed.escapeHeavy}` : '';
  return (
    `${feed.orders} orders${extras}; pageSize ${pipeline.pageSize}, ${pipeline.maxPagesPerRun} page(s)/run, ` +
    `cap ${pipeline.maxPageBodyBytes / MiB} MiB; faults: ${kinds.join(', ') || 'none'}`
  );
}
