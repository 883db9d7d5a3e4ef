// The ops command line: `<command> [subcommand] [flags]`. The words before the first flag name the
// command; the flags are parsed strictly (shared flags plus the command's own), and anything unknown or
// unusable is a UsageError (usage on stderr, exit 2). Pure: unit-tested without AWS.

import { flagInteger, flagText, parseFlags, UsageError } from '../cli-args.js';
import { parseAwsEndpoint } from '../local/aws.js';
import { isFeedId } from '../stack.js';

export const DEFAULT_STACK_NAME = 'OrderFeedIngester';
export const DEFAULT_BACKFILL_RATE = 50;
const MAX_BACKFILL_RATE = 3000;

export const USAGE = `Usage: npm run ops -- <command> [flags]      (npm run --silent ops -- ... --json for scripts)

Commands:
  status                        feeds (cursor, lease, last caught up and lag, auth backoff), queues
                                (depth, oldest age), quarantined records, the sales ledger's totals
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
  reconcile [flags]             compare stored orders with the partner's (GET /v1/orders/{id});
                                --repair republishes (its flags: npm run ops -- reconcile --help)

Shared flags:
  --stack-name NAME             the deployed stack (default ${DEFAULT_STACK_NAME})
  --aws-endpoint URL            an AWS emulator (e.g. http://localhost:5000); default: AWS with the
                                usual credential chain
  --feed ID                     the feed (default: the only one; required when there are several)
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
  | 'reconcile';

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
  | { command: 'budget release'; shared: SharedOptions; tokenParameter: string };

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
} as const;

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
  // history takes the order id as its one argument: `history ORDER_ID [flags]`.
  const orderId = words[0] === 'history' && words.length === 2 ? orderIdOf(words.pop() as string) : undefined;
  if (words[0] === 'quarantine' && words.length === 1) {
    throw new UsageError('quarantine needs a subcommand: list or retry');
  }
  if (!(words.join(' ') in COMMAND_FLAGS)) throw new UsageError(`unknown command "${name}"`);
  const command = words.join(' ') as keyof typeof COMMAND_FLAGS;
  const values = parseFlags(rest, { ...SHARED_FLAGS, ...COMMAND_FLAGS[command] }) as Record<
    string,
    string | boolean | undefined
  >;
  if (values.help) return { command: 'help' };
  const shared = sharedOptions(values);
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
      if (orderId === undefined) throw new UsageError('history needs one ORDER_ID');
      return { command, shared, orderId };
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

function sharedOptions(values: Record<string, string | boolean | undefined>): SharedOptions {
  const feed = optionalText(values, 'feed');
  if (feed !== undefined && !isFeedId(feed)) {
    throw new UsageError(`--feed "${feed}" is not a feed id (letters, digits, ".", "_" or "-", 1 to 64)`);
  }
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

function optionalText(values: Record<string, string | boolean | undefined>, flag: string) {
  return flagText(`--${flag}`, values[flag]);
}

function required(values: Record<string, string | boolean | undefined>, flag: string): string {
  const value = optionalText(values, flag);
  if (value === undefined) throw new UsageError(`--${flag} is required`);
  return value;
}
