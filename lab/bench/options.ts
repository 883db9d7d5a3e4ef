// The bench's command line (node:util parseArgs, strict): sizes, output path and the catch-up model's
// inputs. `--quick` shrinks every size for a smoke run; explicit flags still win over it.
import { parseFlags, UsageError } from '../../tools/cli-args.js';

export interface BenchOptions {
  /** Target number of order versions in the generated feed (the simulator's count is reported). */
  versions: number;
  quick: boolean;
  out: string;
  /** Partner API latency per GET assumed by the catch-up and cost models (ms). */
  apiLatencyMs: number;
  /** EventBridge schedule interval of the catch-up model (minutes). */
  scheduleMinutes: number;
  /** Backlog the catch-up model drains (order versions). */
  backlog: number;
  /** Timed rounds per CPU comparison (after warm-up). */
  cpuRounds: number;
  /** Sections 9 and 10: backlog drained through continued runs (versions), their run budget and API latency. */
  chain: {
    versions: number;
    runBudgetMs: number;
    shardVersions: number;
    shardLatencyMs: number;
    shardRunBudgetMs: number;
    /** Smaller pages than the default: more pages per shard (smoother split), less emulator work per page. */
    shardPageSize: number;
  };
  /** Fresh `node` processes per bundle for the cold-start medians. */
  coldStartRuns: number;
  seed: number;
  /** Only these sections (`--only`); undefined: all. */
  only?: Array<(typeof ONLY)[number]>;
  /** Section 11 (feeds sharing a limited partner): feed counts, the token's limit R, window per run. */
  sharedToken: {
    feeds: number[];
    requestsPerSecond: number;
    windowMs: number;
    latencyMs: number;
    pageSize: number;
    /** The run without partnerRequestsPerSecond, on a fake clock (so minutes take a second or two). */
    uncapped: { feeds: number; windowMs: number };
  };
  /** Section 12 (freshness): measured runs. */
  freshnessSamples: number;
  /** Section 13 (parse): characters per adversarial body, and the ordinary pages' total. */
  parseBytes: number;
  /** Section 14 (fleet): feeds measured on moto (0: none, the model and the cost only), the AWS model's fleets. */
  fleet: {
    feeds: number;
    /** Of them, the feeds of the catch-up (all at once, the same backlog: the emulator's time bounds it). */
    catchUpFeeds: number;
    /** Catch-up: every feed the same backlog, this many pages of pageSize. */
    backlogPages: number;
    pageSize: number;
    /** Steady state: new versions arriving, per feed per minute, for this many minutes. */
    arrivalsPerFeedMinute: number;
    steadyMinutes: number;
    model: { idleFeeds: number; catchUpFeeds: number; catchUpBacklog: number };
  };
}

/** Sections `--only` can run alone (the others need the whole bench's shared measurements). */
export const ONLY = ['shared-token', 'freshness', 'parse', 'fleet'] as const;

export const USAGE = `Usage: npm run bench -- [options]

  --versions N          order versions in the generated feed (default 2000; --quick: 60)
  --quick               small sizes and few rounds, for a smoke test (about 45 s)
  --out PATH            JSON report (default .local/bench/latest.json)
  --api-latency-ms MS   partner API latency per GET for the catch-up and cost models (default 150)
  --schedule-minutes M  poller schedule interval for the catch-up model (default 1)
  --backlog N           backlog for the catch-up model, in versions (default 1000000)
  --seed N              generated feed seed (default 20240501)
  --only S1,S2          run only these sections: shared-token, freshness, parse, fleet
  --fleet-catch-up-feeds N
                        feeds of the fleet's catch-up, all at once, 1 to 1000 (default 200; --quick: none)
  --fleet-backlog-pages N
                        each catch-up feed's backlog, in pages of 5 versions, 1 to 100 (default 16)
  -h, --help            this text
`;

const FLAGS = {
  versions: { type: 'string' },
  quick: { type: 'boolean' },
  out: { type: 'string' },
  'api-latency-ms': { type: 'string' },
  'schedule-minutes': { type: 'string' },
  backlog: { type: 'string' },
  seed: { type: 'string' },
  only: { type: 'string' },
  'fleet-catch-up-feeds': { type: 'string' },
  'fleet-backlog-pages': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Parses argv (without node and script); throws UsageError for anything it does not accept. */
export function parseBenchArgs(argv: readonly string[]): BenchOptions | 'help' {
  const values = parseFlags(argv, FLAGS);
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  const catchUpFeeds = positiveInteger('--fleet-catch-up-feeds', values['fleet-catch-up-feeds'], 200);
  if (catchUpFeeds > 1_000) {
    throw new UsageError(
      `--fleet-catch-up-feeds must be at most 1000 (the fleet's feeds), got ${catchUpFeeds}`,
    );
  }
  const backlogPages = positiveInteger('--fleet-backlog-pages', values['fleet-backlog-pages'], 16);
  if (backlogPages > 100)
    throw new UsageError(`--fleet-backlog-pages must be at most 100, got ${backlogPages}`);
  return {
    versions: positiveInteger('--versions', values.versions, quick ? 60 : 2000),
    quick,
    out: values.out ?? '.local/bench/latest.json',
    apiLatencyMs: nonNegativeNumber('--api-latency-ms', values['api-latency-ms'], 150),
    scheduleMinutes: positiveInteger('--schedule-minutes', values['schedule-minutes'], 1),
    backlog: positiveInteger('--backlog', values.backlog, 1_000_000),
    cpuRounds: quick ? 5 : 21,
    // --quick: a backlog of a few pages, still drained over more than one run (catch-up) and dealt to every
    // shard; the smoke run shows every figure, never a speed.
    chain: quick
      ? {
          versions: 400,
          runBudgetMs: 500,
          shardVersions: 200,
          shardLatencyMs: 200,
          shardRunBudgetMs: 1_000,
          shardPageSize: 25,
        }
      : {
          versions: 20_000,
          runBudgetMs: 4_000,
          shardVersions: 2_400,
          shardLatencyMs: 2_000,
          shardRunBudgetMs: 8_000,
          shardPageSize: 50,
        },
    coldStartRuns: quick ? 3 : 15,
    seed: positiveInteger('--seed', values.seed, 20_240_501),
    ...(values.only === undefined ? {} : { only: onlyList(values.only) }),
    sharedToken: {
      feeds: quick ? [2] : [1, 2, 4, 10],
      // Below what one feed reaches against moto on this machine: the partner must be the limit.
      requestsPerSecond: 3,
      windowMs: quick ? 1_000 : 8_000,
      latencyMs: 50,
      pageSize: 10,
      uncapped: { feeds: 4, windowMs: 600_000 },
    },
    freshnessSamples: quick ? 3 : 20,
    parseBytes: quick ? 64 * 1024 : 1024 * 1024,
    // Catch-up: 200 feeds with the same backlog of 16 pages of 5 by default (a page a sixteenth of it: the share
    // measure's resolution) (--fleet-catch-up-feeds 1000: all of
    // them, minutes of moto serialising every call on 2 cores); idle tick and steady state: 1,000 feeds, 0.15
    // new versions a feed a minute for 4 minutes (half the model's 0.3: the emulator's calls bound a tick).
    // --quick measures none (the emulator's part takes minutes at any size on a busy machine): the model and
    // the cost.
    fleet: quick
      ? {
          feeds: 0,
          catchUpFeeds: 0,
          backlogPages: 4,
          pageSize: 5,
          arrivalsPerFeedMinute: 0.15,
          steadyMinutes: 4,
          model: { idleFeeds: 1_000, catchUpFeeds: 100, catchUpBacklog: 10_000 },
        }
      : {
          feeds: 1_000,
          catchUpFeeds,
          backlogPages,
          pageSize: 5,
          arrivalsPerFeedMinute: 0.15,
          steadyMinutes: 4,
          model: { idleFeeds: 10_000, catchUpFeeds: 1_000, catchUpBacklog: 10_000 },
        },
  };
}

function onlyList(raw: string): Array<(typeof ONLY)[number]> {
  const names = raw.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!(ONLY as readonly string[]).includes(name)) {
      throw new UsageError(`--only takes ${ONLY.join(', ')}, got "${name}"`);
    }
  }
  return names as Array<(typeof ONLY)[number]>;
}

function positiveInteger(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(`${flag} must be a positive integer, got "${raw}"`);
  }
  return value;
}

function nonNegativeNumber(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0) {
    throw new UsageError(`${flag} must be a number ≥ 0, got "${raw}"`);
  }
  return value;
}
