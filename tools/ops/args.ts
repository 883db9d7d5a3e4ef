// The ops command line: `<command> [subcommand] [flags]`. The words before the first flag name the
// command; the flags are parsed strictly (shared flags plus the command's own), and anything unknown or
// unusable is a UsageError (usage on stderr, exit 2); the exit statuses and the I/O every command writes to.
// Pure: unit-tested without AWS, and light, so that cli.ts answers --help and a bad flag before loading the
// commands.

import * as z from 'zod/mini';
import {
  FEED_CONFIG_RULES,
  type FeedConfig,
  FeedConfigError,
  type FeedConfigKey,
  parseFeedConfig,
} from '../../functions/core/fleet/feed-config.js';
import { type CliIo, flagInteger, flagText, nearestFlag, parseFlags, UsageError } from '../cli-args.js';
import { isFeedId } from '../feed-id.js';
import { parseAwsEndpoint } from '../local/endpoint.js';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
/** Stopped by Ctrl-C at a safe point (the shell's convention for SIGINT); the command can be run again. */
export const EXIT_INTERRUPTED = 130;
export { EXIT_USAGE } from '../cli-args.js';

export interface OpsIo extends CliIo {
  /** Aborted on Ctrl-C: long commands (backfill, redrive) stop at the next batch boundary. */
  signal?: AbortSignal;
  now?: () => number;
}

export const DEFAULT_STACK_NAME = 'OrderFeedIngester';
export const DEFAULT_BACKFILL_RATE = 50;
const MAX_BACKFILL_RATE = 3000;
/** `feeds list --stalest` without a number. */
export const DEFAULT_STALEST = 10;

/**
 * A feed's configuration keys (the registry row's `config`, functions/core/fleet/feed-config.ts) as `feeds add`
 * and `feeds set` flags, and how a flag's text becomes the value the key's rule checks, as synth reads `-c`
 * values (infra/config.ts): digits → a number, a list → comma-separated. A Record over every key, so a key
 * added to the configuration fails tsc here until it has its flag.
 */
export const FEED_CONFIG_FLAGS: Record<FeedConfigKey, { flag: string; spelt: 'text' | 'integer' | 'list' }> =
  {
    // As `budget --token-parameter` names the same parameter.
    tokenParameterName: { flag: 'token-parameter', spelt: 'text' },
    partnerBaseUrl: { flag: 'partner-base-url', spelt: 'text' },
    vendorIds: { flag: 'vendor-ids', spelt: 'list' },
    purpose: { flag: 'purpose', spelt: 'text' },
    orderIds: { flag: 'order-ids', spelt: 'list' },
    fromTimestamp: { flag: 'from-timestamp', spelt: 'text' },
    minAgeMinutes: { flag: 'min-age-minutes', spelt: 'integer' },
    pageSize: { flag: 'page-size', spelt: 'integer' },
    scheduleMinutes: { flag: 'schedule-minutes', spelt: 'integer' },
  };
const CONFIG_KEYS = Object.keys(FEED_CONFIG_FLAGS) as FeedConfigKey[];
const CONFIG_FLAG_OPTIONS = Object.fromEntries(
  CONFIG_KEYS.map((key) => [FEED_CONFIG_FLAGS[key].flag, { type: 'string' }] as const),
) as Record<string, { type: 'string' }>;

export const USAGE = `Usage: npm run ops -- <command> [flags]      (npm run --silent ops -- ... --json for scripts)

Commands:
  status [--feed ID]            every feed counted by state and the stalest few (--feed: that feed
                                in detail and its token's budget), queues (depth, oldest age),
                                quarantined records, the sales ledger's totals
  reset-cursor --feed ID        replay the feed from the start of the partner's stream
  replay --feed ID --from-page PAGE_ID
                                replay the feed from a page (the pageId a message or quarantined
                                record carries)
  clear-auth-backoff --feed ID  let the next poller run call the partner at once after a 401
  redrive [--queue NAME]        move a dead-letter queue's messages back to its source queue
                                (NAME: orders or a subscriber; default: every dead-letter queue)
  backfill --subscriber NAME    send the latest stored version of every order to that subscriber's
                                queue (origin "backfill"); resumable: run it again to go on
  history ORDER_ID              every stored version of the order (ascending): fetchedAt, status,
                                total and what changed from the version before; out-of-order
                                arrivals and gaps in the numbering are marked
  budget [--token-parameter NAME]
                                every token's shared request budget: rate, the 429 hold in force and
                                its end, 429s in the last hour
  budget release --token-parameter NAME
                                end that token's hold at once (drops its budget item: the next request
                                starts it afresh, at partnerRequestsPerSecond or unlimited)
  quarantine list               quarantined records and why
  quarantine retry              validate them again with the current code; publish those that pass
                                to every queue and move them to retried/
  feeds add ID --token-parameter NAME [config flags]
                                a new feed (a row of the registry), polled from its first dispatch
  feeds list [--stalest [N]]    every feed: state, token parameter, vendor ids, schedule, lag, last
                                run, stop reason; --stalest: the N (default ${DEFAULT_STALEST}) furthest behind
  feeds show ID                 one feed: configuration, state, cursor, lease, auth backoff, last run
  feeds set ID [config flags] [--unset FLAG]
                                change a feed's configuration (from its next run; the cursor stays)
  feeds pause ID | feeds resume ID [--reason TEXT]
                                stop polling a feed, or poll it again (a paused, stopped or removed one)
  feeds remove ID [--reason TEXT] [--delete-cursor]
                                stop polling a feed for good, keeping its cursor and data; with
                                --delete-cursor also forget its place in the stream (plan, then --yes)
  reconcile [flags]             compare stored orders with the partner's (GET /v1/orders/{id});
                                --repair republishes (its flags: npm run ops -- reconcile --help)

Shared flags:
  --stack-name NAME             the deployed stack (default ${DEFAULT_STACK_NAME})
  --aws-endpoint URL            an AWS emulator (e.g. http://localhost:5000); default: AWS with the
                                usual credential chain
  --feed ID                     the feed (default: the only one; required when there are several;
                                status: that feed alone, in detail)
  --json                        machine-readable output on stdout
  --yes                         do it: commands that change state only print their plan without it
  --force                       change a cursor even while a poller run holds the feed's lease
  -h, --help                    this help

Command flags:
  redrive     --method move-task|loop   SQS message move task (default on AWS) or a receive, send,
                                        delete loop (default with --aws-endpoint)
  backfill    --rate N                  messages per second, 1 to ${MAX_BACKFILL_RATE} (default ${DEFAULT_BACKFILL_RATE})
              --max-messages N          stop after N messages (run again to go on)
              --restart                 start over instead of resuming an unfinished backfill
              --all-versions            every stored version of every order from the order history,
                                        each order's versions ascending (resumable on its own)
  feeds add, feeds set (config flags; every value checked by the rules synth applies):
              --token-parameter NAME    the SSM SecureString parameter holding the feed's token
              --vendor-ids A,B          only these vendors' orders (default: every vendor)
              --page-size N             orders per page, 1 to 100 (default 100)
              --schedule-minutes N      poll every N minutes, 1 to 60 (default 1)
              --from-timestamp ISO      a first sync starts at this time (e.g. 2026-01-01T00:00:00Z)
              --min-age-minutes N       only versions at least N minutes old (1 to 1440)
              --partner-base-url URL    this feed's partner API (default: the deployment's)
              --purpose stream|reconcile
              --order-ids A,B           a reconcile feed's orders (at most 100)
              --unset FLAG              (set) back to the default, e.g. --unset vendor-ids
              --dry-run                 print what would be written; write nothing
  feeds pause, resume, remove:
              --reason TEXT             why, kept on the row (feeds list shows it)
              --dry-run                 print the change; write nothing
  feeds remove --delete-cursor          prints its plan; with --yes also deletes the cursor (refused
                                        while a run holds the feed's lease, unless --force)

The feeds commands change the registry at once (--dry-run shows the change): each is undone by another,
and none touches a cursor. Commands that change a cursor (reset-cursor, replay, clear-auth-backoff,
feeds remove --delete-cursor) and the others that move data print their plan and act only with --yes.

Exit status: 0 done (or planned, without --yes); 1 failed or refused (the message says why);
2 usage error; 130 stopped by Ctrl-C (backfill: run it again to go on).
`;

export type CommandName =
  | 'status'
  | 'reset-cursor'
  | 'replay'
  | 'clear-auth-backoff'
  | 'redrive'
  | 'backfill'
  | 'history'
  | 'quarantine list'
  | 'quarantine retry'
  | 'budget'
  | 'budget release'
  | 'reconcile'
  | FeedsCommandName;

export type FeedsCommandName =
  | 'feeds add'
  | 'feeds list'
  | 'feeds show'
  | 'feeds set'
  | 'feeds pause'
  | 'feeds resume'
  | 'feeds remove';

export interface SharedOptions {
  stackName: string;
  /** Validated `http(s)://host[:port]`, or undefined for AWS itself. */
  awsEndpoint: string | undefined;
  feed: string | undefined;
  json: boolean;
  yes: boolean;
  force: boolean;
}

export type ParsedCommand =
  | { command: 'help' }
  | { command: 'reconcile'; argv: string[] }
  | {
      command: 'status' | 'reset-cursor' | 'clear-auth-backoff' | 'quarantine list' | 'quarantine retry';
      shared: SharedOptions;
    }
  | { command: 'replay'; shared: SharedOptions; fromPage: string }
  | { command: 'redrive'; shared: SharedOptions; queue: string | undefined; method: 'move-task' | 'loop' }
  | {
      command: 'backfill';
      shared: SharedOptions;
      subscriber: string;
      rate: number;
      maxMessages: number | undefined;
      restart: boolean;
      allVersions: boolean;
    }
  | { command: 'history'; shared: SharedOptions; orderId: string }
  | { command: 'budget'; shared: SharedOptions; tokenParameter: string | undefined }
  | { command: 'budget release'; shared: SharedOptions; tokenParameter: string }
  | FeedsCommand;

/** A feeds command as parsed (tools/ops/feeds.ts carries it out). */
export type FeedsCommand =
  | { command: 'feeds add'; shared: SharedOptions; feedId: string; config: FeedConfig; dryRun: boolean }
  | { command: 'feeds list'; shared: SharedOptions; stalest: number | undefined }
  | { command: 'feeds show'; shared: SharedOptions; feedId: string }
  | {
      command: 'feeds set';
      shared: SharedOptions;
      feedId: string;
      /** The keys given, each checked by its rule; `null`: back to the default (--unset). */
      changes: Partial<Record<FeedConfigKey, unknown>>;
      dryRun: boolean;
    }
  | {
      command: 'feeds pause' | 'feeds resume' | 'feeds remove';
      shared: SharedOptions;
      feedId: string;
      reason: string | undefined;
      dryRun: boolean;
      /** remove only: also delete the cursor (plan, then --yes). */
      deleteCursor: boolean;
    };

const SHARED_FLAGS = {
  'stack-name': { type: 'string' },
  'aws-endpoint': { type: 'string' },
  feed: { type: 'string' },
  json: { type: 'boolean' },
  yes: { type: 'boolean' },
  force: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const COMMAND_FLAGS = {
  status: {},
  'reset-cursor': {},
  replay: { 'from-page': { type: 'string' } },
  'clear-auth-backoff': {},
  redrive: { queue: { type: 'string' }, method: { type: 'string' } },
  backfill: {
    subscriber: { type: 'string' },
    rate: { type: 'string' },
    'max-messages': { type: 'string' },
    restart: { type: 'boolean' },
    'all-versions': { type: 'boolean' },
  },
  history: {},
  'quarantine list': {},
  'quarantine retry': {},
  budget: { 'token-parameter': { type: 'string' } },
  'budget release': { 'token-parameter': { type: 'string' } },
  'feeds add': { ...CONFIG_FLAG_OPTIONS, 'dry-run': { type: 'boolean' } },
  'feeds list': { stalest: { type: 'string' } },
  'feeds show': {},
  'feeds set': {
    ...CONFIG_FLAG_OPTIONS,
    unset: { type: 'string', multiple: true },
    'dry-run': { type: 'boolean' },
  },
  'feeds pause': { reason: { type: 'string' }, 'dry-run': { type: 'boolean' } },
  'feeds resume': { reason: { type: 'string' }, 'dry-run': { type: 'boolean' } },
  'feeds remove': {
    reason: { type: 'string' },
    'dry-run': { type: 'boolean' },
    'delete-cursor': { type: 'boolean' },
  },
} as const;

/** The commands that take one argument after their name, and what it is called in messages. */
const ARGUMENTS: Partial<Record<CommandName, string>> = {
  history: 'ORDER_ID',
  'feeds add': 'ID',
  'feeds show': 'ID',
  'feeds set': 'ID',
  'feeds pause': 'ID',
  'feeds resume': 'ID',
  'feeds remove': 'ID',
};

/** Which commands need `--feed` resolved (the others ignore it or use it as a filter). */
export const FEED_COMMANDS: ReadonlySet<CommandName> = new Set([
  'reset-cursor',
  'replay',
  'clear-auth-backoff',
]);

export function parseOpsArgs(argv: readonly string[]): ParsedCommand {
  const words: string[] = [];
  let index = 0;
  while (index < argv.length && !(argv[index] ?? '').startsWith('-')) words.push(argv[index++] ?? '');
  const rest = argv.slice(index);
  if (words.length === 0) {
    // A flag no command takes is named as such (parseFlags throws), before the missing command.
    if (parseFlags(rest, SHARED_FLAGS).help) return { command: 'help' };
    throw new UsageError('a command is required');
  }
  const name = words.join(' ');
  if (words[0] === 'reconcile') {
    if (words.length > 1) throw new UsageError(`unexpected argument "${words[1]}"`);
    return reconcileCommand(rest);
  }
  if (words[0] === 'quarantine' && words.length === 1) {
    throw new UsageError('quarantine needs a subcommand: list or retry');
  }
  if (words[0] === 'feeds' && words.length === 1) {
    throw new UsageError('feeds needs a subcommand: add, list, show, set, pause, resume or remove');
  }
  // `history ORDER_ID`, `feeds show ID`, …: the word after the command's name is its argument.
  const argumentOf = (command: string) => ARGUMENTS[command as CommandName];
  const takesArgument = words.length >= 2 && argumentOf(words.slice(0, -1).join(' ')) !== undefined;
  const argument = takesArgument ? (words.pop() as string) : undefined;
  if (!(words.join(' ') in COMMAND_FLAGS)) throw new UsageError(`unknown command "${name}"`);
  const command = words.join(' ') as keyof typeof COMMAND_FLAGS;
  const values = parseFlags(command === 'feeds list' ? withStalestValue(rest) : rest, {
    ...SHARED_FLAGS,
    ...COMMAND_FLAGS[command],
  }) as Record<string, string | boolean | string[] | undefined>;
  if (values.help) return { command: 'help' };
  const needed = argumentOf(command);
  if (needed !== undefined && argument === undefined) throw new UsageError(`${command} needs one ${needed}`);
  const shared = sharedOptions(values);
  if (isFeedsCommand(command)) {
    return feedsCommand(command, shared, values, argument === undefined ? '' : feedIdOf(argument));
  }
  switch (command) {
    case 'replay':
      return { command, shared, fromPage: required(values, 'from-page') };
    case 'redrive':
      return {
        command,
        shared,
        queue: optionalText(values, 'queue'),
        method: redriveMethod(optionalText(values, 'method'), shared.awsEndpoint),
      };
    case 'backfill': {
      const maxMessages = optionalText(values, 'max-messages');
      const rate = optionalText(values, 'rate');
      return {
        command,
        shared,
        subscriber: required(values, 'subscriber'),
        rate: rate === undefined ? DEFAULT_BACKFILL_RATE : flagInteger('--rate', rate, 1, MAX_BACKFILL_RATE),
        maxMessages:
          maxMessages === undefined
            ? undefined
            : flagInteger('--max-messages', maxMessages, 1, Number.MAX_SAFE_INTEGER),
        restart: values.restart === true,
        allVersions: values['all-versions'] === true,
      };
    }
    case 'history':
      return { command, shared, orderId: orderIdOf(argument as string) };
    case 'budget':
      return { command, shared, tokenParameter: tokenParameterOf(optionalText(values, 'token-parameter')) };
    case 'budget release':
      return { command, shared, tokenParameter: tokenParameterOf(required(values, 'token-parameter')) };
    default:
      return { command, shared };
  }
}

/**
 * reconcile keeps its own flags (reconcile/command.ts); only the stack and endpoint are shared. The
 * default stack is added unless the operator named a stack or a table of their own.
 */
function reconcileCommand(rest: readonly string[]): ParsedCommand {
  const argv = [...rest];
  const hasFlag = (flag: string) => argv.some((arg) => arg === flag || arg.startsWith(`${flag}=`));
  if (!hasFlag('--stack-name') && !hasFlag('--orders-table')) argv.push('--stack-name', DEFAULT_STACK_NAME);
  return { command: 'reconcile', argv };
}

type FlagValues = Record<string, string | boolean | string[] | undefined>;

function sharedOptions(values: FlagValues): SharedOptions {
  const given = optionalText(values, 'feed');
  const feed = given === undefined ? undefined : feedIdOf(given, '--feed ');
  const endpoint = optionalText(values, 'aws-endpoint');
  let awsEndpoint: string | undefined;
  if (endpoint !== undefined) {
    try {
      awsEndpoint = parseAwsEndpoint(endpoint).sdk;
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
  }
  return {
    stackName: optionalText(values, 'stack-name') ?? DEFAULT_STACK_NAME,
    awsEndpoint,
    feed,
    json: values.json === true,
    yes: values.yes === true,
    force: values.force === true,
  };
}

function isFeedsCommand(command: CommandName): command is FeedsCommandName {
  return command.startsWith('feeds ');
}

/** A feed id as the configuration takes it (never a budget or backfill key, which hold `#` or `/`). */
function feedIdOf(raw: string, what = ''): string {
  if (!isFeedId(raw)) {
    throw new UsageError(`${what}"${raw}" is not a feed id (letters, digits, ".", "_" or "-", 1 to 64)`);
  }
  return raw;
}

/** `--stalest` takes an optional number: `--stalest 20` and `--stalest=20` give 20, a bare one the default. */
function withStalestValue(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index] as string;
    const next = argv[index + 1] ?? '';
    if (arg !== '--stalest') out.push(arg);
    else if (/^\d+$/.test(next)) {
      out.push(`--stalest=${next}`);
      index += 1;
    } else out.push(`--stalest=${DEFAULT_STALEST}`);
  }
  return out;
}

function feedsCommand(
  command: FeedsCommandName,
  shared: SharedOptions,
  values: FlagValues,
  feedId: string,
): FeedsCommand {
  const dryRun = values['dry-run'] === true;
  switch (command) {
    case 'feeds list': {
      const stalest = optionalText(values, 'stalest');
      return {
        command,
        shared,
        stalest: stalest === undefined ? undefined : flagInteger('--stalest', stalest, 1, 100_000),
      };
    }
    case 'feeds show':
      return { command, shared, feedId };
    case 'feeds add':
      return { command, shared, feedId, config: addedConfig(values), dryRun };
    case 'feeds set': {
      const changes = configChanges(values);
      if (Object.keys(changes).length === 0) {
        throw new UsageError('feeds set needs a change: a config flag (e.g. --page-size 50) or --unset FLAG');
      }
      return { command, shared, feedId, changes, dryRun };
    }
    default:
      return {
        command,
        shared,
        feedId,
        reason: optionalText(values, 'reason'),
        dryRun,
        deleteCursor: values['delete-cursor'] === true,
      };
  }
}

/** The config flags given, as the values their keys' rules check (-c's spelling: digits, comma lists). */
function givenConfig(values: FlagValues): Partial<Record<FeedConfigKey, unknown>> {
  const given: Partial<Record<FeedConfigKey, unknown>> = {};
  for (const key of CONFIG_KEYS) {
    const { flag, spelt } = FEED_CONFIG_FLAGS[key];
    const text = optionalText(values, flag);
    if (text === undefined) continue;
    given[key] =
      spelt === 'integer' && /^-?\d+$/.test(text)
        ? Number(text)
        : spelt === 'list'
          ? text
              .split(',')
              .map((entry) => entry.trim())
              .filter((entry) => entry.length > 0)
          : text;
  }
  return given;
}

/** A FeedConfigError as a usage error: each issue names its key and the flag it came from. */
function configUsageError(error: unknown, values: FlagValues): never {
  if (!(error instanceof FeedConfigError)) throw error;
  const problems = error.issues.map(({ key, message }) => {
    const flag = FEED_CONFIG_FLAGS[key as FeedConfigKey]?.flag;
    const text = flag === undefined ? undefined : values[flag];
    return `${key}: ${message}${typeof text === 'string' ? ` (--${flag} "${text}")` : flag ? ` (--${flag})` : ''}`;
  });
  throw new UsageError(problems.join('; '));
}

/** `feeds add`: the whole configuration, defaults applied, checked as the dispatcher's initial set is. */
function addedConfig(values: FlagValues): FeedConfig {
  try {
    return parseFeedConfig(givenConfig(values));
  } catch (error) {
    return configUsageError(error, values);
  }
}

/**
 * `feeds set`: each value given checked by its key's rule here (the whole configuration, with rules across
 * keys, once merged with the stored one: changedFeedConfig); `--unset FLAG` sets the key to null.
 */
function configChanges(values: FlagValues): Partial<Record<FeedConfigKey, unknown>> {
  const changes: Partial<Record<FeedConfigKey, unknown>> = givenConfig(values);
  const issues: Array<{ key: string; message: string }> = [];
  for (const [key, value] of Object.entries(changes) as Array<[FeedConfigKey, unknown]>) {
    const verdict = z.safeParse(FEED_CONFIG_RULES[key] as z.ZodMiniType, value);
    if (!verdict.success) issues.push({ key, message: verdict.error.issues[0]?.message ?? 'is invalid' });
  }
  if (issues.length > 0) configUsageError(new FeedConfigError(issues), values);
  const flags = CONFIG_KEYS.map((key) => FEED_CONFIG_FLAGS[key].flag);
  for (const raw of (values.unset as string[] | undefined) ?? []) {
    const flag = raw.trim().replace(/^--/, '');
    const key = CONFIG_KEYS.find((each) => FEED_CONFIG_FLAGS[each].flag === flag);
    if (key === undefined) {
      const near = nearestFlag(flag, flags);
      throw new UsageError(
        `--unset ${raw}: not a config flag${near === undefined ? ` (${flags.join(', ')})` : `; did you mean ${near}?`}`,
      );
    }
    if (key in changes) throw new UsageError(`--unset ${flag} and --${flag} together`);
    changes[key] = null;
  }
  return changes;
}

/** An order id as its exact decimal text (int64, 0 to 2^63-1, as the partner's ids). */
function orderIdOf(raw: string): string {
  if (!/^(0|[1-9]\d{0,18})$/.test(raw) || BigInt(raw) > 2n ** 63n - 1n) {
    throw new UsageError(`ORDER_ID "${raw}" is not an order id (an integer from 0 to 2^63-1)`);
  }
  return raw;
}

/** An SSM parameter name (the budget item's key is `budget#<name>`): letters, digits, `_.-/`, 1 to 2048. */
function tokenParameterOf<T extends string | undefined>(raw: T): T {
  if (raw !== undefined && !/^[A-Za-z0-9_.\-/]{1,2048}$/.test(raw)) {
    throw new UsageError(`--token-parameter "${raw}" is not an SSM parameter name`);
  }
  return raw;
}

function redriveMethod(raw: string | undefined, endpoint: string | undefined): 'move-task' | 'loop' {
  // Emulators (moto) have no message move tasks; AWS has, and they keep each message's attributes.
  if (raw === undefined) return endpoint === undefined ? 'move-task' : 'loop';
  if (raw !== 'move-task' && raw !== 'loop') {
    throw new UsageError(`--method must be move-task or loop (got "${raw}")`);
  }
  return raw;
}

function optionalText(values: FlagValues, flag: string) {
  const value = values[flag];
  return flagText(`--${flag}`, Array.isArray(value) ? undefined : value);
}

function required(values: FlagValues, flag: string): string {
  const value = optionalText(values, flag);
  if (value === undefined) throw new UsageError(`--${flag} is required`);
  return value;
}
