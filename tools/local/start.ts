// `npm start`: the whole pipeline on this machine. A thin CLI over runtime.ts#runLocal: parse the
// flags, show progress and the summary, map the outcome to an exit status, turn SIGINT/SIGTERM into a
// graceful stop.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isMain, quietSdkNodeVersionWarning, UsageError, usageErrorOf } from '../cli-args.js';
import {
  DEFAULT_ORDERS,
  DEFAULT_SEED,
  DEFAULT_TUNING,
  LocalUsageError,
  MAX_OVERLAPPING_FEEDS,
  overlappingFeeds,
} from './options.js';
import type { LocalRunOptions, LocalSummary } from './runtime.js';
import { DEFAULT_GIVE_UP_AFTER_MS } from './scheduling.js';
import {
  formatBanner,
  formatProgress,
  formatResume,
  formatSubscribers,
  formatSummary,
  KEPT_EMULATOR,
} from './terminal.js';

const T = DEFAULT_TUNING;
export const USAGE = `Usage: npm start -- [options]      (or: npx tsx tools/local/start.ts [options])

Runs the whole order-feed-ingester pipeline on this machine: deploys the CDK stack (the production stack,
with cdk deploy) into an AWS emulator (moto), stores the partner token in the emulator's SSM, and runs the
real poller and consumer handlers in this process the way Lambda runs them, until the feed is drained.

Partner API
  --api-url URL        partner API base URL up to, not including, /v1
                       (e.g. http://127.0.0.1:8080/test-versioning); http:// only for loopback hosts.
                       Omitted: the built-in simulator is started.
  --scenario ID        built-in simulator: serve that spec scenario (e.g. test-versioning), or a partner
                       nobody scripted (large-orders, trickle, redirect, html-200, cursor-cycle,
                       record-flood, over-long-values, deep-expiry: tools/simulator/README.md)
  --orders N           built-in simulator: orders in the generated feed (default ${DEFAULT_ORDERS})
  --seed S             built-in simulator: seed of the generated feed (default ${DEFAULT_SEED})
  --token-rate-limit R built-in simulator: allow each token R requests per second (a burst of R), 429 with
                       Retry-After beyond, as a rate-limiting partner does: the feeds (--shards) then pace
                       themselves through the token's shared request budget
  --feeds N            built-in generated feed: a fleet of N feeds (1 to 1000) registered in the feed
                       registry at runtime, the feed's vendors dealt between them (max(5, N) vendors),
                       4 feeds to a token parameter (sharing its request budget); the dispatcher runs
                       every minute and on each poller's request, each batch a poller invocation here.
                       The deployment's own feed is paused. The summary lists every feed (tools/local/README.md)
  --revoked-token-feeds K
                       with --feeds: K more feeds re-reading the first feeds' vendors with a token the
                       simulator refuses (401): they stop, with the reason on their row; the others go on
  --overlapping-feeds N
                       deploy N feeds (orderFeed.feeds, 1 to 5) that each read every vendor: they overlap,
                       so every version arrives N times and the version guard keeps one (any partner API;
                       needs a fresh emulator). Was --feeds N before fleets
  --shards N           built-in simulator: deploy N feeds (orderFeed.feeds) that split the generated
                       feed's vendors between them, each with its own scheduler, cursor and lease, run side
                       by side (1 to 5; needs a fresh emulator)
  --token-file PATH    file holding the partner token; else env PARTNER_API_TOKEN. Required with
                       --api-url. The built-in simulator otherwise uses the token an earlier run stored at
                       --aws-endpoint, or a random one. Stored in the emulator's SSM as a SecureString,
                       where the poller reads it as in production. Never printed.

AWS
  --aws-endpoint URL   an AWS-compatible endpoint already running (e.g. moto_server on
                       http://localhost:5000): the stack is deployed there, or reused if CloudFormation
                       already has it. A reused stack keeps its data, so a restarted run resumes from
                       the stored cursor, and is never changed: an --api-url other than the one the
                       stack was deployed with is applied by overriding PARTNER_BASE_URL in this process.
                       Omitted: moto is started on a free loopback port and stopped on exit, except
                       after exit 1, 3, 5 or 75: then it is left running with the run's data, and the
                       summary prints its pid and the command that resumes against it.
                       Needs no AWS credentials (dummy ones and us-east-1 when none are set).
  --reset-data         before running, empty the orders and cursor tables, purge the queues and delete
                       the quarantined objects (emulator only). A reused stack otherwise keeps an earlier
                       run's data, which the end-of-run check counts too.
  --subscriber NAME    deploy a downstream subscriber queue NAME (orderFeed.downstreamSubscribers;
                       repeatable) that nothing here drains: it keeps every message the poller publishes,
                       and the summary prints the command that reads them (needs a fresh emulator)

Run
  --watch              keep polling after catching up, until Ctrl-C; without it the run ends once the
                       partner has nothing more (a poll reached the end of the stream and nothing came
                       after the stored cursor) and the orders queue is empty
  --give-up-after D    a partner that fails (unreachable, 5xx, unreadable answers, rate-limiting) is
                       waited for, its runs retried after 1, 2, 4… s (at most 30 s apart), until nothing
                       progressed (no page committed, no version applied) for D: 90s, 15m, 2h (1s to 24h;
                       default ${DEFAULT_GIVE_UP_AFTER_MS / 60_000}m; with --watch, never unless given). The progress line names what
                       the poller last reported, when the next run starts and when local mode gives up.
  --summary-json PATH  write the end-of-run summary as JSON
  --verbose            handler logs at the deployed level (INFO), metrics output, cdk's output
  --help               this text

Lambda, emulated from the deployed configuration
  schedule      the rule's ScheduleExpression (rate(1 minute)) is shortened: the next poller run starts
                as soon as the previous one ended and the orders queue holds fewer than
                ${T.shallowQueueDepth} messages; after a run that found nothing new (--watch), ${T.idlePollIntervalMs / 1000} s later. Each run
                fetches at most ${T.maxPagesPerRun} page(s) here (MAX_PAGES_PER_RUN), since moto's SQS slows as a queue fills.
  event source  the mapping's BatchSize and FunctionResponseTypes, ${T.consumerConcurrency} batches at once; failed records
                return after ${T.retryDelaySeconds} s and the queue's RedrivePolicy dead-letters them after maxReceiveCount
                receives. Received messages stay invisible ${T.visibilityTimeoutSeconds} s (not the queue's VisibilityTimeout),
                so those of a killed run come back quickly. moto's own copy of the mapping is disabled.
  dispatcher    with --feeds: the dispatcher's handler at its rule's rate and on each poller's dispatch
                request; each batch it starts is the poller's handler run here at once, beside the others
                (without --feeds: a scheduler per deployed feed invokes the poller with a batch of that feed)
  environment   each function's Environment.Variables and Timeout as deployed, plus
                POWERTOOLS_LOG_LEVEL=SILENT and POWERTOOLS_METRICS_DISABLED=true unless --verbose:
                then each warning or error a handler logs is one line of local mode's (its message,
                the first time it comes), not the handler's JSON.

Exit status: 0 drained; 2 bad usage; 3 the partner API rejected the token (401); 4 drained, but the table
or ledger differs from the built-in simulator's expected state (Check: MISMATCH); 5 the feed stopped in a
way it cannot get past by itself (e.g. a cursor cycle: the summary names the poller's outcome, the runbook
the command that resumes); 75 gave up waiting for the partner (nothing progressed for --give-up-after;
sysexits' EX_TEMPFAIL: try again later); 130 / 143 stopped by SIGINT / SIGTERM (the current invocations
finish and the summary is still written); 1 any other error, a missing moto_server included. Every exit
after the start writes --summary-json; 1, 3, 5 and 75 also print the command that resumes.`;

/** Drained, but the table or ledger is not what the built-in simulator expects. */
export const EXIT_MISMATCH = 4;
/** The feed stopped in a documented way (tools/RUNBOOK.md): local mode ends instead of polling on. */
export const EXIT_FEED_STOPPED = 5;
/** Nothing progressed for --give-up-after (the partner was down): sysexits.h's EX_TEMPFAIL, "try again later". */
export const EXIT_GAVE_UP = 75;

export interface Cli {
  options: LocalRunOptions;
  summaryJson: string | undefined;
  /** --token-file as given: the resume command names the file, never the token. */
  tokenFile: string | undefined;
  /** --give-up-after as given. */
  giveUpAfter: string | undefined;
  help: boolean;
}

const DURATION_UNITS_MS = { s: 1000, m: 60_000, h: 3_600_000 } as const;

/** A duration flag (`90s`, `15m`, `2h`), from 1 s to 24 h, in milliseconds (`npm start`'s and verify's --give-up-after). */
export function durationFlag(flag: string, raw: string): number {
  const match = /^(\d{1,6})(s|m|h)$/.exec(raw);
  const ms = match
    ? Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]
    : Number.NaN;
  if (!(ms >= 1000 && ms <= 24 * 3_600_000)) {
    throw new UsageError(`${flag} must be a duration from 1s to 24h, e.g. 90s, 15m or 2h (got "${raw}")`);
  }
  return ms;
}

function integerFlag(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^-?\d+$/.test(raw)) throw new LocalUsageError(`--${name} must be an integer (got "${raw}")`);
  return Number(raw);
}

const FLAGS = {
  'api-url': { type: 'string' },
  scenario: { type: 'string' },
  'token-file': { type: 'string' },
  'aws-endpoint': { type: 'string' },
  'summary-json': { type: 'string' },
  watch: { type: 'boolean' },
  'give-up-after': { type: 'string' },
  'reset-data': { type: 'boolean' },
  orders: { type: 'string' },
  seed: { type: 'string' },
  shards: { type: 'string' },
  'token-rate-limit': { type: 'string' },
  feeds: { type: 'string' },
  'revoked-token-feeds': { type: 'string' },
  'overlapping-feeds': { type: 'string' },
  subscriber: { type: 'string', multiple: true },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** node's parseArgs over FLAGS; an unknown flag close to a known one gets "did you mean". */
function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, strict: true, allowPositionals: true, options: FLAGS });
  } catch (error) {
    throw new LocalUsageError(usageErrorOf(error, Object.keys(FLAGS)).message);
  }
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv = process.env): Cli {
  const { values, positionals } = parseFlags(argv);
  if (positionals.length > 0) throw new LocalUsageError(`unexpected argument "${positionals[0]}"`);
  let token = env.PARTNER_API_TOKEN?.trim() || undefined;
  if (values['token-file'] !== undefined) {
    try {
      token = readFileSync(values['token-file'], 'utf8').trim();
    } catch (error) {
      throw new LocalUsageError(
        `--token-file: cannot read ${values['token-file']} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    if (token === '') throw new LocalUsageError('--token-file: the file is empty');
  }
  const options: LocalRunOptions = {
    ...(values['api-url'] === undefined ? {} : { apiUrl: values['api-url'] }),
    ...(values.scenario === undefined ? {} : { scenario: values.scenario }),
    ...(token === undefined ? {} : { token }),
    ...(values['aws-endpoint'] === undefined ? {} : { awsEndpoint: values['aws-endpoint'] }),
    ...(values.subscriber === undefined ? {} : { subscribers: values.subscriber }),
    resetData: values['reset-data'] ?? false,
    watch: values.watch ?? false,
    verbose: values.verbose ?? false,
  };
  const orders = integerFlag('orders', values.orders);
  const seed = integerFlag('seed', values.seed);
  if (orders !== undefined) options.orders = orders;
  if (seed !== undefined) options.seed = seed;
  const shards = integerFlag('shards', values.shards);
  if (shards !== undefined) options.shards = shards;
  const tokenRateLimit = integerFlag('token-rate-limit', values['token-rate-limit']);
  if (tokenRateLimit !== undefined) {
    if (tokenRateLimit < 1) throw new LocalUsageError('--token-rate-limit must be a positive integer');
    if (options.apiUrl !== undefined) {
      throw new LocalUsageError('--token-rate-limit limits the built-in simulator: not with --api-url');
    }
    options.tokenRateLimit = tokenRateLimit;
  }
  const overlapping = integerFlag('overlapping-feeds', values['overlapping-feeds']);
  if (overlapping !== undefined) {
    if (overlapping < 1 || overlapping > MAX_OVERLAPPING_FEEDS) {
      throw new LocalUsageError(`--overlapping-feeds must be an integer from 1 to ${MAX_OVERLAPPING_FEEDS}`);
    }
    options.feeds = overlappingFeeds(overlapping);
  }
  const fleet = integerFlag('feeds', values.feeds);
  const revoked = integerFlag('revoked-token-feeds', values['revoked-token-feeds']);
  if (revoked !== undefined && fleet === undefined) {
    throw new LocalUsageError('--revoked-token-feeds adds feeds to a fleet: give --feeds N too');
  }
  if (fleet !== undefined) options.fleet = { feeds: fleet, revokedTokenFeeds: revoked ?? 0 };
  const giveUpAfter = values['give-up-after'];
  if (giveUpAfter !== undefined) options.giveUpAfterMs = durationFlag('--give-up-after', giveUpAfter);
  return {
    options,
    summaryJson: values['summary-json'],
    tokenFile: values['token-file'],
    giveUpAfter,
    help: values.help ?? false,
  };
}

/** A word for a POSIX shell: as it is when it is safe, else single-quoted. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * This run's command against `awsEndpoint`: what resumes it against the emulator that kept its data, and what
 * stores its data again in one that outlives the run (the summary's history hint). The same partner (never the
 * token: --token-file names the file; PARTNER_API_TOKEN stays in the environment), scenario, feeds,
 * subscribers and run flags, and never --reset-data, which would empty what it resumes from.
 */
export function resumeCommand(cli: Cli, awsEndpoint: string): string {
  const { options } = cli;
  const flags: Array<[string, string | number | undefined]> = [
    ['--aws-endpoint', awsEndpoint],
    ['--api-url', options.apiUrl],
    ['--token-file', cli.tokenFile],
    ['--scenario', options.scenario],
    ['--orders', options.orders],
    ['--seed', options.seed],
    ['--token-rate-limit', options.tokenRateLimit],
    ['--shards', options.shards],
    ['--overlapping-feeds', options.feeds?.length],
    ['--feeds', options.fleet?.feeds],
    ['--revoked-token-feeds', options.fleet?.revokedTokenFeeds || undefined],
    ...(options.subscribers ?? []).map((name): [string, string] => ['--subscriber', name]),
    ['--give-up-after', cli.giveUpAfter],
    ['--summary-json', cli.summaryJson],
  ];
  const words = flags.flatMap(([flag, value]) =>
    value === undefined ? [] : [flag, shellWord(String(value))],
  );
  if (options.watch) words.push('--watch');
  return `npm start -- ${words.join(' ')}`;
}

const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

async function main(): Promise<number> {
  let cli: Cli;
  try {
    cli = parseCli(process.argv.slice(2));
  } catch (error) {
    return usageError(error);
  }
  if (cli.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Loaded once the flags parsed (the AWS SDK, the handlers): --help and a bad flag answer without it.
  const {
    AUTH_FAILED_MESSAGE,
    checkLocalRunOptions,
    LocalRunError,
    runLocal,
    subscriberQueues,
    worthResuming,
  } = await import('./runtime.js');
  try {
    // Option combinations (e.g. --scenario with --api-url) are usage errors too.
    checkLocalRunOptions(cli.options);
    if (cli.options.subscribers) await checkSubscriberNames(cli.options.subscribers);
  } catch (error) {
    return usageError(error);
  }
  if (!cli.options.verbose) quietSdkNodeVersionWarning();

  // Plain lines, one progress line every 2 s: the same on a terminal as in a log.
  const line = (text: string) => process.stdout.write(`${text}\n`);
  let subscribers: Record<string, string> = {};
  const run = runLocal(
    { ...cli.options, keepEmulatorOnFailure: true },
    {
      note: (message) => line(`· ${message}`),
      ...(cli.options.verbose ? { cdkLog: (chunk: string) => process.stderr.write(chunk) } : {}),
      onReady: (ready) => {
        const queues = subscriberQueues(ready.deployment);
        subscribers = Object.fromEntries(
          (cli.options.subscribers ?? []).map((name) => [name, queues[name] ?? '']),
        );
        for (const text of formatBanner(ready)) line(text);
        line(cli.options.watch ? 'Polling until Ctrl-C…' : 'Running until drained (Ctrl-C stops)…');
      },
      onProgress: (snapshot) => line(formatProgress(snapshot)),
    },
  );

  let signal: keyof typeof SIGNAL_EXIT | undefined;
  for (const name of ['SIGINT', 'SIGTERM'] as const) {
    process.on(name, () => {
      if (signal !== undefined) {
        // A second signal: give up on a graceful stop, but do not leave the emulator running.
        process.stderr.write(`\n${name} again: exiting without waiting for the invocations\n`);
        void run.abort().finally(() => process.exit(SIGNAL_EXIT[name]));
        return;
      }
      signal = name;
      line(`${name}: stopping the schedule, letting the current invocations finish…`);
      run.stop();
    });
  }

  let summary: LocalSummary;
  try {
    summary = await run.done;
  } catch (error) {
    if (!(error instanceof LocalRunError)) throw error;
    summary = error.summary;
  }
  // An error before the stack was there (e.g. no moto_server, a failed deploy) has nothing to show but itself.
  const reachedTheStack = summary.stackName !== '';
  const emulatorKept = cli.options.awsEndpoint !== undefined || summary.keptEmulator !== undefined;
  if (reachedTheStack || summary.outcome !== 'error') {
    const summaryLines = [
      ...formatSummary(summary, emulatorKept, cli.options.resetData, resumeCommand(cli, KEPT_EMULATOR)),
      ...formatSubscribers(subscribers, summary, emulatorKept),
    ];
    process.stdout.write(`${summaryLines.join('\n')}\n`);
  }
  if (cli.summaryJson !== undefined) {
    const path = resolve(cli.summaryJson);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${JSON.stringify(summary, null, 2)}\n`);
    process.stdout.write(`Summary written to ${path}\n`);
  }
  // Only where the data outlives this process (an emulator that died with the run took it along).
  if (reachedTheStack && emulatorKept && worthResuming(summary.outcome)) {
    const lines = formatResume(summary, resumeCommand(cli, summary.awsEndpoint), {
      tokenFromEnvironment: cli.options.apiUrl !== undefined && cli.tokenFile === undefined,
    });
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (summary.outcome === 'error') {
    process.stderr.write(`error: ${summary.detail ?? 'local mode failed'}\n`);
    return signal === undefined ? 1 : SIGNAL_EXIT[signal];
  }
  if (summary.outcome === 'auth-failed') {
    process.stderr.write(`error: ${summary.detail ?? AUTH_FAILED_MESSAGE}: check the token\n`);
    return 3;
  }
  if (signal !== undefined) return SIGNAL_EXIT[signal];
  if (summary.outcome === 'gave-up') {
    process.stderr.write(`error: ${summary.detail ?? 'gave up waiting for the partner'}\n`);
    return EXIT_GAVE_UP;
  }
  if (summary.outcome === 'feed-stopped') {
    // The summary's headline said why and where the runbook is: once is enough.
    process.stderr.write(
      `error: the feed stopped (${summary.stoppedBy ?? 'a documented stop'}): see the summary above\n`,
    );
    return EXIT_FEED_STOPPED;
  }
  if (summary.outcome !== 'drained') return 1;
  const check = summary.matchesExpected;
  return check === undefined || (check.orders && check.sales) ? 0 : EXIT_MISMATCH;
}

/** A usage error: its message and the usage on stderr, exit 2. */
function usageError(error: unknown): number {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`error: ${message}\n\n${USAGE}\n`);
  return 2;
}

/** `--subscriber` names by the configuration's own rule, before anything starts (cdk would say it late). */
async function checkSubscriberNames(names: readonly string[]): Promise<void> {
  // Loaded only here: infra/config.ts pulls in aws-cdk-lib, which --help need not wait for.
  const [{ SETTINGS }, z] = await Promise.all([import('../../infra/config.js'), import('zod/mini')]);
  const result = z.safeParse(SETTINGS.downstreamSubscribers.rule, names);
  if (!result.success) {
    throw new LocalUsageError(`--subscriber ${result.error.issues[0]?.message ?? 'is invalid'}`);
  }
}

// Run only as the entry point (tests import parseCli and USAGE).
if (isMain(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(
        `error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    },
  );
}
