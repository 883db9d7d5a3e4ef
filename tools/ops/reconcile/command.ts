// `npm run ops -- reconcile` (alias `npm run reconcile`): the orders table against the partner, by order id
// (tools/ops/README.md, "Reconcile"). Its own flags; ops adds the default stack (args.ts).
// Flow: parse flags → find the table, queues, API and token (stack outputs + the feed's registry row or the
// poller's environment, or explicit flags) → reconcileOrders → print a table or JSON → exit 0 / 1 / 2.

import { readFile } from 'node:fs/promises';
import { GetParameterCommand } from '@aws-sdk/client-ssm';
import { SqsFanoutPublisher } from '../../../functions/core/adapters/sqs-fanout-publisher.js';
import { runCorrelationId } from '../../../functions/core/contract/order-version-message.js';
import {
  type Int64,
  int64FromText,
  isInt64,
  stringifyJsonExact,
} from '../../../functions/core/model/int64.js';
import {
  createPartnerAgent,
  createPartnerClient,
  isBearerTokenShape,
} from '../../../functions/core/partner/client.js';
import { type AwsAt, createAwsClients } from '../../aws.js';
import {
  type CliIo,
  CommandError,
  flagInteger,
  flagText,
  messageOf,
  parseFlags,
  processIo,
  reportUsageError,
  UsageError,
} from '../../cli-args.js';
import {
  downstreamQueueUrls,
  feedPollersOf,
  readEnvironment,
  readStackOutputs,
  requiredOutput,
} from '../../stack.js';
import { FeedRegistryAdmin } from '../feed-registry-admin.js';
import { renderTable } from '../format.js';
import { DynamoStoredOrders } from './dynamo-stored-orders.js';
import {
  RESULT_KINDS,
  ReconcileAuthError,
  type ReconcileReport,
  reconcileOrders,
} from './reconcile-orders.js';

export const USAGE = `Usage: npm run ops -- reconcile [--ids 1,2,3 | --sample N] [--repair] [--json]
         [--stack-name NAME | --orders-table NAME --api-url URL [--queue-url URL]...]
         [--token-file PATH | --token-parameter NAME] [--feed-id ID] [--aws-endpoint URL]
         [--concurrency N]

Compares the orders table with the partner's current state of each order (GET /v1/orders/{id})
and reports, per id: in-sync, behind, ahead, missing, not-found, invalid-id, invalid-record, error.

Which orders (default: --sample 50):
  --ids 1,2,3             these order ids (comma-separated integers)
  --sample N              up to N ids read from the orders table (a stretch of the table
                          starting at a random scan segment; not a uniform random sample)
What to do:
  --repair                publish the partner's version of every behind/missing order to the
                          orders queue and every downstream queue; the consumer applies it
                          through its version guard (this tool never writes the table); the
                          messages carry origin "reconcile" and correlationId reconcile:<runId>
                          (runId: printed, and "runId" in --json)
  --json                  print the report as JSON (use: npm run --silent ops -- reconcile --json)
Where things are:
  --stack-name NAME       read the table, queues (OrdersQueueUrl, DownstreamQueueUrl*), the
                          partner URL and token parameter: on a fleet's stack from the feed's
                          registry row (its partnerBaseUrl, else the poller's PARTNER_BASE_URL),
                          before the fleet from the poller's PARTNER_BASE_URL,
                          PARTNER_TOKEN_PARAMETER and FEED_ID
                          (default OrderFeedIngester, unless --orders-table is given)
  --orders-table NAME     the orders table (overrides the stack's)
  --queue-url URL         a queue for repairs; repeat it for the orders queue AND every downstream
                          queue (overrides the stack's list; required with --repair without a stack)
  --api-url URL           the partner base URL (overrides the stack's)
  --feed-id ID            source.feedId of repair messages (default: the one feed, else the
                          poller's FEED_ID, else "reconcile"), and the feed whose partner URL
                          and token are used: needed on a fleet whose feeds use several tokens
                          or URLs (an order of another account answers 404); before the
                          fleet, on a stack of several feeds, default the first
  --aws-endpoint URL      an AWS emulator's endpoint for every call, plus dummy
                          credentials and region when none are set
Partner token (never printed; the first one found is used):
  --token-file PATH       read from a file
  --token-parameter NAME  read from an SSM SecureString (decrypted)
  PARTNER_API_TOKEN       environment variable
  with --stack-name       the feed's SSM parameter (its row's tokenParameterName; before the
                          fleet, the poller's PARTNER_TOKEN_PARAMETER)
Other:
  --concurrency N         partner calls in flight, 1 to 16 (default 4)
  -h, --help              show this help

Exit status: 0 nothing behind, missing or invalid and no call failed (with --repair: every repair
published); 1 otherwise, or the partner rejected the token (401), or AWS failed; 2 usage error.
`;

const EXIT_OK = 0;
const EXIT_FINDINGS = 1;

const DEFAULT_SAMPLE = 50;
const MAX_SAMPLE = 10_000;
const DEFAULT_FEED_ID = 'reconcile';

export interface CliOptions {
  /** Undefined: sample. */
  ids: Int64[] | undefined;
  sample: number;
  repair: boolean;
  json: boolean;
  help: boolean;
  stackName: string | undefined;
  ordersTable: string | undefined;
  queueUrls: string[];
  apiUrl: string | undefined;
  feedId: string | undefined;
  tokenFile: string | undefined;
  tokenParameter: string | undefined;
  awsEndpoint: string | undefined;
  concurrency: number;
}

const FLAGS = {
  ids: { type: 'string' },
  sample: { type: 'string' },
  repair: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'stack-name': { type: 'string' },
  'orders-table': { type: 'string' },
  'queue-url': { type: 'string', multiple: true },
  'api-url': { type: 'string' },
  'feed-id': { type: 'string' },
  'token-file': { type: 'string' },
  'token-parameter': { type: 'string' },
  'aws-endpoint': { type: 'string' },
  concurrency: { type: 'string' },
} as const;

export function parseCli(argv: readonly string[]): CliOptions {
  const values = parseFlags(argv, FLAGS);
  const options: CliOptions = {
    ids: undefined,
    sample: DEFAULT_SAMPLE,
    repair: values.repair ?? false,
    json: values.json ?? false,
    help: values.help ?? false,
    stackName: flagText('--stack-name', values['stack-name']),
    ordersTable: flagText('--orders-table', values['orders-table']),
    queueUrls: (values['queue-url'] ?? []).map((url) => flagText('--queue-url', url) ?? ''),
    apiUrl: flagText('--api-url', values['api-url']),
    feedId: flagText('--feed-id', values['feed-id']),
    tokenFile: flagText('--token-file', values['token-file']),
    tokenParameter: flagText('--token-parameter', values['token-parameter']),
    awsEndpoint: flagText('--aws-endpoint', values['aws-endpoint']),
    concurrency:
      values.concurrency === undefined ? 4 : flagInteger('--concurrency', values.concurrency.trim(), 1, 16),
  };
  if (options.help) return options;
  if (values.ids !== undefined && values.sample !== undefined) {
    throw new UsageError('--ids and --sample cannot be combined');
  }
  if (values.ids !== undefined) options.ids = parseIds(values.ids);
  if (values.sample !== undefined)
    options.sample = flagInteger('--sample', values.sample.trim(), 1, MAX_SAMPLE);
  if (options.tokenFile !== undefined && options.tokenParameter !== undefined) {
    throw new UsageError('--token-file and --token-parameter cannot be combined');
  }
  if (options.stackName === undefined) {
    const missing = [
      options.ordersTable === undefined ? '--orders-table' : undefined,
      options.apiUrl === undefined ? '--api-url' : undefined,
      options.repair && options.queueUrls.length === 0 ? '--queue-url' : undefined,
    ].filter((flag) => flag !== undefined);
    if (missing.length > 0) {
      throw new UsageError(
        `without --stack-name, ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required`,
      );
    }
  }
  if (options.awsEndpoint !== undefined && !/^https?:\/\/[^/\s]+/.test(options.awsEndpoint)) {
    throw new UsageError(`--aws-endpoint must be an http(s) URL (got "${options.awsEndpoint}")`);
  }
  return options;
}

function parseIds(raw: string): Int64[] {
  const parts = raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (parts.length === 0) throw new UsageError('--ids needs at least one order id');
  return parts.map((part) => {
    const id = /^\d+$/.test(part) ? int64FromText(part) : undefined;
    if (id === undefined || !isInt64(id)) {
      throw new UsageError(`--ids: "${part}" is not an order id (a non-negative int64, up to 2^63 - 1)`);
    }
    return id;
  });
}

interface Target {
  ordersTable: string;
  /** Orders queue first, then the downstream queues. */
  queueUrls: string[];
  apiUrl: string;
  feedId: string;
  /** The poller's SSM token parameter (stack mode only). */
  stackTokenParameter: string | undefined;
  warnings: string[];
}

async function resolveTarget(options: CliOptions, aws: AwsAt): Promise<Target> {
  const warnings: string[] = [];
  if (options.stackName === undefined) {
    return {
      ordersTable: options.ordersTable ?? '',
      queueUrls: options.queueUrls,
      apiUrl: options.apiUrl ?? '',
      feedId: options.feedId ?? DEFAULT_FEED_ID,
      stackTokenParameter: undefined,
      warnings,
    };
  }
  const stack = await readStack(aws, options.stackName, options.feedId);
  const queueUrls = options.queueUrls.length > 0 ? options.queueUrls : stack.queueUrls;
  // The poller publishes to the queues in its own environment: a repair must reach the same ones.
  for (const url of stack.pollerQueueUrls) {
    if (!queueUrls.includes(url)) {
      warnings.push(`the poller also publishes to ${url}, which repairs will not reach`);
    }
  }
  // A fleet's poller serves every feed: the feed's registry row names its partner URL and token.
  const feed = stack.cursorTable === undefined ? undefined : await fleetFeed(aws, stack.cursorTable, options);
  const apiUrl = options.apiUrl ?? feed?.partnerBaseUrl ?? stack.pollerEnv.PARTNER_BASE_URL;
  if (!apiUrl) {
    throw new CommandError(
      `the poller of stack ${options.stackName} has no PARTNER_BASE_URL; pass --api-url`,
    );
  }
  return {
    ordersTable: options.ordersTable ?? stack.ordersTable,
    queueUrls,
    apiUrl,
    feedId: options.feedId ?? feed?.feedId ?? stack.pollerEnv.FEED_ID ?? DEFAULT_FEED_ID,
    stackTokenParameter: feed?.tokenParameterName ?? stack.pollerEnv.PARTNER_TOKEN_PARAMETER,
    warnings,
  };
}

/**
 * On a fleet's stack, the feed whose partner URL and token parameter reconcile uses: --feed-id's registry row,
 * else the one feed, or the token and URL every feed shares (undefined: the registry has no feed). Feeds on
 * several tokens or URLs (merchant accounts) need --feed-id, or both --api-url and a token: the partner answers
 * an order of another account 404.
 */
async function fleetFeed(
  aws: AwsAt,
  cursorTable: string,
  options: CliOptions,
): Promise<{ feedId?: string; tokenParameterName: string; partnerBaseUrl?: string } | undefined> {
  const registry = new FeedRegistryAdmin(aws.dynamo, cursorTable);
  if (options.feedId !== undefined) {
    const config = (await registry.get(options.feedId))?.config;
    if (config === undefined)
      throw new CommandError(`--feed-id ${options.feedId}: the stack has no such feed`);
    return { feedId: options.feedId, ...config };
  }
  const feeds = (await registry.list()).filter((feed) => feed.state !== 'removed');
  const [first, ...others] = feeds.flatMap(({ feedId, config }) => (config ? [{ feedId, ...config }] : []));
  if (first === undefined) return undefined;
  const token = options.tokenParameter !== undefined || options.tokenFile !== undefined;
  const same = others.every(
    (other) =>
      (token || other.tokenParameterName === first.tokenParameterName) &&
      (options.apiUrl !== undefined || other.partnerBaseUrl === first.partnerBaseUrl),
  );
  if (!same) {
    throw new UsageError(
      `the stack's feeds use several partner tokens or URLs: pass --feed-id (feeds: ${feeds.map((feed) => feed.feedId).join(', ')})`,
    );
  }
  return others.length === 0 ? first : { ...first, feedId: undefined };
}

async function readStack(aws: AwsAt, stackName: string, feedId: string | undefined) {
  const outputs = await readStackOutputs(aws, stackName);
  const required = (key: string) => requiredOutput(outputs, stackName, key);
  const ordersTable = required('OrdersTableName');
  const ordersQueueUrl = required('OrdersQueueUrl');
  // A single-feed stack names its poller; a stack of several feeds lists them all (FeedPollers): the
  // poller of --feed-id, else the first, supplies the partner's URL and token parameter.
  const pollerName = pollerOf(outputs, feedId) ?? required('PollerFunctionName');
  const downstream = Object.keys(outputs)
    .filter((key) => key.startsWith('DownstreamQueueUrl'))
    .sort()
    .map((key) => outputs[key] ?? '');
  const pollerEnv = await readEnvironment(aws, pollerName);
  // ORDERS_QUEUE_URL and the values of the DOWNSTREAM_QUEUE_URLS JSON map, as far as they parse.
  const pollerQueueUrls = [
    ...(pollerEnv.ORDERS_QUEUE_URL ? [pollerEnv.ORDERS_QUEUE_URL] : []),
    ...Object.values(downstreamQueueUrls(pollerEnv)),
  ];
  // A fleet's stack (it has a dispatcher) keeps each feed's partner and token on its registry row.
  const cursorTable = outputs.DispatcherFunctionName ? outputs.CursorTableName : undefined;
  return { ordersTable, queueUrls: [ordersQueueUrl, ...downstream], pollerEnv, pollerQueueUrls, cursorTable };
}

/**
 * The poller function of `feedId` (or, without one, the first feed) from a multi-feed stack's `FeedPollers`
 * output. A feed id the stack does not have is an error: another feed's partner and token would be asked.
 */
export function pollerOf(outputs: Record<string, string>, feedId: string | undefined): string | undefined {
  if (outputs.PollerFunctionName) return outputs.PollerFunctionName;
  const pollers = feedPollersOf(outputs);
  if (feedId === undefined) return Object.values(pollers)[0];
  const poller = pollers[feedId];
  if (poller === undefined && Object.keys(pollers).length > 0) {
    throw new CommandError(
      `--feed-id ${feedId}: the stack has no such feed (feeds: ${Object.keys(pollers).join(', ')})`,
    );
  }
  return poller;
}

async function readToken(
  options: CliOptions,
  target: Target,
  env: NodeJS.ProcessEnv,
  aws: AwsAt,
): Promise<string> {
  let token: string;
  let source: string;
  if (options.tokenFile !== undefined) {
    source = `--token-file ${options.tokenFile}`;
    try {
      token = (await readFile(options.tokenFile, 'utf8')).trim();
    } catch (error) {
      throw new CommandError(`cannot read ${source}: ${messageOf(error)}`);
    }
  } else if (options.tokenParameter !== undefined || (!env.PARTNER_API_TOKEN && target.stackTokenParameter)) {
    const name = options.tokenParameter ?? target.stackTokenParameter ?? '';
    source = `SSM parameter ${name}`;
    token = await readParameter(aws, name);
  } else if (env.PARTNER_API_TOKEN) {
    source = 'PARTNER_API_TOKEN';
    token = env.PARTNER_API_TOKEN.trim();
  } else {
    throw new UsageError(
      'no partner token: set PARTNER_API_TOKEN, or pass --token-file or --token-parameter',
    );
  }
  if (!isBearerTokenShape(token)) {
    throw new CommandError(`the token from ${source} is empty or has characters a bearer token cannot have`);
  }
  return token;
}

async function readParameter(aws: AwsAt, name: string): Promise<string> {
  try {
    const output = await aws.ssm.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
    return output.Parameter?.Value?.trim() ?? '';
  } catch (error) {
    throw new CommandError(`cannot read SSM parameter ${name}: ${messageOf(error)}`, { cause: error });
  }
}

function renderReport(report: ReconcileReport): string {
  const rows = report.orders.map((entry) => [
    String(entry.id),
    entry.storedVersion === undefined ? '-' : String(entry.storedVersion),
    entry.partnerVersion === undefined ? '-' : String(entry.partnerVersion),
    entry.result,
    [entry.detail, entry.repair === undefined ? undefined : `repair ${entry.repair}`]
      .filter((part) => part !== undefined)
      .join('; '),
  ]);
  return renderTable(['ID', 'STORED', 'PARTNER', 'RESULT', 'DETAIL'], rows);
}

function renderSummary(report: ReconcileReport): string {
  const counts = RESULT_KINDS.map((kind) => `${report.counts[kind]} ${kind}`).join(', ');
  const { published, failed } = report.repairs;
  const repairs = published + failed > 0 ? `; repairs: ${published} published, ${failed} failed` : '';
  return `${report.orders.length} checked: ${counts}${repairs}; ${report.unresolved} need attention`;
}

/** Runs `ops reconcile`; resolves with the exit status. */
export async function runReconcile(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv);
  } catch (error) {
    return reportUsageError(error, USAGE, 'reconcile: ', io.stderr);
  }
  if (options.help) {
    io.stdout(USAGE);
    return EXIT_OK;
  }
  // --aws-endpoint, else the SDK's own AWS_ENDPOINT_URL (an emulator either way), else AWS.
  const aws = createAwsClients(options.awsEndpoint ?? (io.env.AWS_ENDPOINT_URL || undefined), io.env);
  // Own agent, closed at the end, so no keep-alive socket holds the process open.
  const agent = createPartnerAgent();
  let report: ReconcileReport | undefined;
  try {
    const target = await resolveTarget(options, aws);
    for (const warning of target.warnings) io.stderr(`reconcile: warning: ${warning}\n`);
    const token = await readToken(options, target, io.env, aws);
    let partner: ReturnType<typeof createPartnerClient>;
    try {
      partner = createPartnerClient({ baseUrl: target.apiUrl, token: async () => token, dispatcher: agent });
    } catch (error) {
      throw new UsageError(`--api-url: ${error instanceof Error ? error.message : String(error)}`);
    }
    const stored = new DynamoStoredOrders(aws.dynamo, target.ordersTable);
    const ids = options.ids ?? (await stored.sampleIds(options.sample));
    report = await reconcileOrders(
      { stored, partner, publisher: new SqsFanoutPublisher(aws.sqs, target.queueUrls), now: Date.now },
      { ids, repair: options.repair, feedId: target.feedId, concurrency: options.concurrency },
    );
    print(io, options, report);
    return report.unresolved === 0 ? EXIT_OK : EXIT_FINDINGS;
  } catch (error) {
    if (error instanceof UsageError) {
      return reportUsageError(error, USAGE, 'reconcile: ', io.stderr);
    }
    if (error instanceof ReconcileAuthError) {
      print(io, options, error.partial, 'partner API answered 401 Unauthorized');
      io.stderr(
        `reconcile: ${error.message}. Check the token (PARTNER_API_TOKEN, --token-file, --token-parameter or the stack's parameter).\n`,
      );
      return EXIT_FINDINGS;
    }
    io.stderr(`reconcile: ${error instanceof CommandError ? error.message : messageOf(error)}\n`);
    return EXIT_FINDINGS;
  } finally {
    aws.destroy();
    await agent.close();
  }
}

function print(io: CliIo, options: CliOptions, report: ReconcileReport, aborted?: string): void {
  if (options.json) {
    // Exact: ids and versions beyond 2^53 are written as the partner's digits.
    io.stdout(`${stringifyJsonExact(aborted === undefined ? report : { ...report, aborted }, 2)}\n`);
    return;
  }
  if (report.orders.length > 0) io.stdout(`${renderReport(report)}\n\n`);
  io.stdout(`${renderSummary(report)}${aborted === undefined ? '' : ` (aborted: ${aborted})`}\n`);
  // How to find these repairs later: on the queues, and on the orders table items they update.
  if (report.repairs.published > 0) {
    io.stdout(`repair messages carry correlationId ${runCorrelationId('reconcile', report.runId)}\n`);
  }
}
