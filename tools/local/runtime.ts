// Local mode's reusable machinery (the `npm start` CLI in start.ts is a thin layer over `runLocal`;
// the conformance and chaos runners use the same pieces):
//   1. an AWS endpoint: a moto started here, or one given       (moto.ts, aws.ts)
//   2. a partner API: the built-in simulator, or one given
//   3. the stack: found there, or deployed with `cdk deploy`     (deployment.ts: ensureStack, readDeployment)
//   4. the partner token in the emulator's SSM (SecureString)    (deployment.ts: storeToken)
//   5. optionally an empty data set                              (data.ts: resetData)
//   6. the real handlers, driven as Lambda would drive them      (local-pipeline.ts: startLocalPipeline)
//   7. the summary: tables, ledger, quarantine, dead letters     (readSummary)
import { randomBytes } from 'node:crypto';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import { parsePartnerBaseUrl } from '../../functions/core/partner/url-policy.js';
import type { LocalFeed } from '../deploy-local.js';
import { DEFAULT_VENDORS, generatedVendorIds } from '../simulator/generated-feed.js';
import type { AnyScenarioId, RunningSimulator } from '../simulator/index.js';
import { ALL_SCENARIO_IDS } from '../simulator/types.js';
import type { SalesTotal } from '../store/sales-ledger.js';
import { scanOrders } from '../store/stored-order.js';
import { createLocalAwsClients, type LocalAwsClients, parseAwsEndpoint } from './aws.js';
import { queueDepth, readDataWithOrders, readHistoryCount, resetData } from './data.js';
import {
  checkDeployedSubscribers,
  DEFAULT_TOKEN_PARAMETER,
  type Deployment,
  DeploymentError,
  type EnsuredStack,
  ensureStack,
  readDeployment,
  readStoredToken,
  storeToken,
} from './deployment.js';
import {
  acceptedTokens,
  type FleetFeed,
  type FleetFeedEnd,
  type FleetPlan,
  fleetPlan,
  MAX_FLEET_FEEDS,
  registerFleet,
} from './fleet.js';
import {
  emptyCounters,
  type FleetFeedRun,
  fleetFeedRunOf,
  type LocalPipeline,
  type PipelineCounters,
  type ProgressSnapshot,
  type RunOutcome,
  startLocalPipeline,
} from './local-pipeline.js';
import { type RunningMoto, startMoto } from './moto.js';
import {
  DEFAULT_ORDERS,
  DEFAULT_SEED,
  DEFAULT_TUNING,
  type LocalTuning,
  LocalUsageError,
} from './options.js';
import { giveUpAfterOf } from './scheduling.js';

// What the tests and start.ts take from local mode, in one place.
export { createLocalAwsClients, type LocalAwsClients, parseAwsEndpoint } from './aws.js';
export { resetData } from './data.js';
export { DEFAULT_STACK_NAME, readDeployment, subscriberQueues } from './deployment.js';
export { MAX_FLEET_FEEDS } from './fleet.js';
export { AUTH_FAILED_MESSAGE } from './local-pipeline.js';
export {
  DEFAULT_ORDERS,
  DEFAULT_SEED,
  DEFAULT_TUNING,
  type LocalTuning,
  LocalUsageError,
  MAX_OVERLAPPING_FEEDS,
  overlappingFeeds,
} from './options.js';
export { DEFAULT_GIVE_UP_AFTER_MS } from './scheduling.js';

export interface LocalRunOptions {
  /** Partner API base URL (up to, not including, /v1). Omitted: the built-in simulator. */
  apiUrl?: string;
  /** Built-in simulator only: serve this scenario (a spec scenario, or one of the hostile ones). */
  scenario?: string;
  /** Partner token; required with apiUrl. Built-in simulator: random when omitted. */
  token?: string;
  orders?: number;
  seed?: number;
  /** Built-in simulator only: limit each token to this many requests per second (429 + Retry-After beyond). */
  tokenRateLimit?: number;
  /** An AWS-compatible endpoint already running. Omitted: a moto is started and stopped here. */
  awsEndpoint?: string;
  resetData?: boolean;
  watch?: boolean;
  verbose?: boolean;
  /** Give up when nothing progressed for this long (default 10 minutes; never with `watch`). */
  giveUpAfterMs?: number;
  /**
   * When the run ends with an error, a 401, a documented stop or a give-up, leave the emulator this run
   * started running with its data (`keptEmulator` in the summary) instead of stopping it, so the run can be
   * resumed against it. The CLI does; a caller in-process stops everything it started.
   */
  keepEmulatorOnFailure?: boolean;
  tuning?: Partial<LocalTuning>;
  /**
   * Built-in generated feed only: split its vendors over this many feeds (`orderFeed.feeds`, one poller
   * each, run side by side). Omitted: one feed.
   */
  shards?: number;
  /** The feeds to deploy, as they are (tests: overlapping feeds); not with `shards`. */
  feeds?: readonly LocalFeed[];
  /** Downstream subscriber queues to deploy (`--subscriber`): nothing local drains them. */
  subscribers?: readonly string[];
  /**
   * Built-in generated feed only: a fleet (`--feeds N`, fleet.ts) of `feeds` feeds registered at runtime and
   * driven by the dispatcher, plus `revokedTokenFeeds` feeds whose token the simulator refuses (401).
   */
  fleet?: { feeds: number; revokedTokenFeeds: number };
}

export interface LocalRunEvents {
  /** Setup notes and warnings, one line each. */
  note?: (message: string) => void;
  /** cdk's output while deploying. */
  cdkLog?: (chunk: string) => void;
  onReady?: (ready: ReadyInfo) => void;
  onProgress?: (snapshot: ProgressSnapshot) => void;
}

export interface ReadyInfo {
  awsEndpoint: string;
  emulatorStarted: boolean;
  apiUrl: string;
  simulator: { scenario?: string; orders?: number; seed?: number } | undefined;
  stack: EnsuredStack;
  deployment: Deployment;
  tuning: LocalTuning;
  /** Give up after this long without progress; undefined: never. */
  giveUpAfterMs: number | undefined;
  /** Deployed PARTNER_BASE_URL, when this run overrides it. */
  overriddenBaseUrl: string | undefined;
  resetData: boolean;
  /** A fleet's feeds, as registered. */
  fleet?: FleetFeed[];
}

export interface LocalSummary {
  region: string;
  stackName: string;
  ordersTable: string;
  cursorTable: string;
  /** History entries at the end and an order to look at (`npm run ops -- history ID`); absent: history off. */
  history?: { table: string; entries: number; exampleOrderId: string | undefined };
  queueUrl: string;
  deadLetterQueueUrl: string;
  quarantineBucket: string;
  apiUrl: string;
  awsEndpoint: string;
  /** How the run ended; `error`: an error it could not wait out (`detail` says which), what was done so far kept. */
  outcome: SummaryOutcome;
  /** Why the run ended, for auth-failed, feed-stopped, gave-up and error. */
  detail?: string;
  /** The poller's outcome kind that stopped the feed, for feed-stopped (e.g. stuck-cursor). */
  stoppedBy?: string;
  /** The emulator this run started and left running, with its data (keepEmulatorOnFailure). */
  keptEmulator?: { endpoint: string; pid: number };
  elapsedMs: number;
  deploy: { deployed: boolean; ms: number } | undefined;
  sales: SalesTotal[];
  ordersByStatus: Record<string, number>;
  orders: number;
  quarantined: string[];
  deadLettered: number;
  /** Orders queue depth at the end (0 when drained). */
  queueDepth: number;
  counters: PipelineCounters;
  /** Built-in simulator only: does the table and ledger equal what the simulator served? */
  matchesExpected?: { orders: boolean; sales: boolean };
  /** A fleet (`--feeds N`): each feed, in its order; the fields above are the fleet's totals. */
  feeds?: FleetFeedSummary[];
}

/** One feed of a fleet in the summary: its configuration, how it ended, its runs' counts, its row's reason. */
export interface FleetFeedSummary {
  feedId: string;
  vendorIds: string[];
  tokenParameter: string;
  /** Read with a token the simulator refuses (--revoked-token-feeds). */
  revokedToken: boolean;
  /** drained, auth-failed or feed-stopped; `running` when the run ended first (gave up, interrupted). */
  outcome: FleetFeedEnd | 'running';
  /** The poller's outcome of its last run (undefined: never ran). */
  lastRun: string | undefined;
  /** The registry row's state and the reason its last run left (a 401, a documented stop). */
  state: string;
  stopReason?: string;
  /** Stored orders of its vendors. */
  orders: number;
  counters: Omit<FleetFeedRun, 'feedId' | 'end' | 'lastRun'>;
}

export type SummaryOutcome = RunOutcome | 'error';

/** The run ended with an error: `summary` holds what it had done (outcome `error`), `cause` the error. */
export class LocalRunError extends Error {
  override readonly name = 'LocalRunError';
  constructor(
    readonly summary: LocalSummary,
    options: { cause: unknown },
  ) {
    super(summary.detail ?? 'local mode failed', options);
  }
}

/** The ends after which a run is worth resuming against its data: every one but drained and interrupted. */
export function worthResuming(outcome: SummaryOutcome): boolean {
  return (
    outcome === 'gave-up' || outcome === 'auth-failed' || outcome === 'feed-stopped' || outcome === 'error'
  );
}

export interface LocalRun {
  /** The summary; rejects with a LocalRunError (which carries one) on an error the run could not wait out. */
  readonly done: Promise<LocalSummary>;
  /** Stop scheduling, finish the current invocations, then summarise (outcome interrupted). */
  stop(): void;
  /** Stop what this run started (emulator, simulator) right away, for an exit that cannot wait. */
  abort(): Promise<void>;
}

/** Checks option combinations up front (a bad one is a usage error, before anything starts). */
export function checkLocalRunOptions(options: LocalRunOptions): void {
  if (options.apiUrl !== undefined) {
    try {
      parsePartnerBaseUrl(options.apiUrl);
    } catch (error) {
      throw new LocalUsageError(`--api-url: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (/\/v1\/?$/.test(new URL(options.apiUrl).pathname)) {
      throw new LocalUsageError(
        '--api-url must stop before /v1 (e.g. http://127.0.0.1:8080/test-versioning)',
      );
    }
    for (const [flag, value] of [
      ['--scenario', options.scenario],
      ['--orders', options.orders],
      ['--seed', options.seed],
    ] as const) {
      if (value !== undefined)
        throw new LocalUsageError(`${flag} is for the built-in simulator: not with --api-url`);
    }
    if (!options.token) {
      throw new LocalUsageError(
        '--api-url needs the partner token: set PARTNER_API_TOKEN or pass --token-file',
      );
    }
  }
  if (options.scenario !== undefined) {
    if (!(ALL_SCENARIO_IDS as readonly string[]).includes(options.scenario)) {
      throw new LocalUsageError(`--scenario must be one of: ${ALL_SCENARIO_IDS.join(', ')}`);
    }
    if (options.orders !== undefined || options.seed !== undefined) {
      throw new LocalUsageError('--orders and --seed size the generated feed: not with --scenario');
    }
  }
  if (options.shards !== undefined) {
    if (!Number.isSafeInteger(options.shards) || options.shards < 1 || options.shards > DEFAULT_VENDORS) {
      throw new LocalUsageError(
        `--shards must be an integer from 1 to ${DEFAULT_VENDORS} (the generated feed's vendors)`,
      );
    }
    if (options.apiUrl !== undefined || options.scenario !== undefined) {
      throw new LocalUsageError(
        '--shards splits the built-in generated feed by vendor: not with --api-url or --scenario',
      );
    }
    if (options.feeds !== undefined)
      throw new LocalUsageError('--shards and --overlapping-feeds each choose the feeds: give one of them');
  }
  if (options.fleet !== undefined) {
    const { feeds, revokedTokenFeeds } = options.fleet;
    if (!Number.isSafeInteger(feeds) || feeds < 1 || feeds > MAX_FLEET_FEEDS) {
      throw new LocalUsageError(`--feeds must be an integer from 1 to ${MAX_FLEET_FEEDS}`);
    }
    if (!Number.isSafeInteger(revokedTokenFeeds) || revokedTokenFeeds < 0 || revokedTokenFeeds > feeds) {
      throw new LocalUsageError('--revoked-token-feeds must be an integer from 0 to --feeds');
    }
    if (options.apiUrl !== undefined || options.scenario !== undefined) {
      throw new LocalUsageError(
        '--feeds deals the built-in generated feed’s vendors over a fleet: not with --api-url or --scenario ' +
          '(N feeds that each read every vendor of any partner API: --overlapping-feeds N)',
      );
    }
    if (options.shards !== undefined || options.feeds !== undefined) {
      throw new LocalUsageError(
        '--feeds, --shards and --overlapping-feeds each choose the feeds: give one of them',
      );
    }
  }
  if (options.orders !== undefined && (!Number.isSafeInteger(options.orders) || options.orders < 1)) {
    throw new LocalUsageError('--orders must be a positive integer');
  }
  if (options.seed !== undefined && !Number.isSafeInteger(options.seed)) {
    throw new LocalUsageError('--seed must be an integer');
  }
  if (options.awsEndpoint !== undefined) {
    let endpoint: ReturnType<typeof parseAwsEndpoint>;
    try {
      endpoint = parseAwsEndpoint(options.awsEndpoint);
    } catch (error) {
      throw new LocalUsageError(error instanceof Error ? error.message : String(error));
    }
    if (options.resetData && !endpoint.loopback) {
      throw new LocalUsageError(
        '--reset-data works only against an emulator on this machine (a loopback endpoint)',
      );
    }
  }
}

export interface SummaryRun {
  apiUrl: string;
  awsEndpoint: string;
  outcome: SummaryOutcome;
  detail?: string;
  stoppedBy?: string;
  counters: PipelineCounters;
  elapsedMs: number;
  deploy?: { deployed: boolean; ms: number };
}

/** What a run should end with, to compare the stored orders and the ledger against. */
export interface ExpectedEndState {
  orders: readonly { id: number; version: number; status: string }[];
  sales: readonly SalesTotal[];
}

/**
 * Reads the end state of the deployment (orders by status, the ledger from its index, quarantine, dead
 * letters, queue depth) and puts it together with how the run went; compares it with `expected` if given.
 */
export async function readSummary(
  aws: LocalAwsClients,
  deployment: Deployment,
  run: SummaryRun,
  expected?: ExpectedEndState,
): Promise<LocalSummary> {
  // When the run began (elapsedMs was taken just now): the history hint names an order this run stored.
  const runStartedAt = new Date(Date.now() - run.elapsedMs).toISOString();
  const [data, depth, history] = await Promise.all([
    readDataWithOrders(aws, deployment),
    queueDepth(aws, deployment.queueUrl),
    deployment.historyTable ? readHistoryCount(aws, deployment.historyTable, runStartedAt) : undefined,
  ]);
  const summary: LocalSummary = {
    region: deployment.region,
    stackName: deployment.stackName,
    ordersTable: deployment.ordersTable,
    cursorTable: deployment.cursorTable,
    ...(deployment.historyTable && history
      ? {
          history: {
            table: deployment.historyTable,
            entries: history.entries,
            exampleOrderId: history.busiestOrderId,
          },
        }
      : {}),
    queueUrl: deployment.queueUrl,
    deadLetterQueueUrl: deployment.deadLetterQueueUrl,
    quarantineBucket: deployment.quarantineBucket,
    apiUrl: run.apiUrl,
    awsEndpoint: run.awsEndpoint,
    outcome: run.outcome,
    ...(run.detail === undefined ? {} : { detail: run.detail }),
    ...(run.stoppedBy === undefined ? {} : { stoppedBy: run.stoppedBy }),
    elapsedMs: run.elapsedMs,
    deploy: run.deploy,
    sales: data.sales,
    ordersByStatus: data.ordersByStatus,
    orders: data.orders.size,
    quarantined: data.quarantined,
    deadLettered: data.deadLettered,
    queueDepth: depth.total,
    counters: run.counters,
  };
  if (expected !== undefined) {
    summary.matchesExpected = {
      orders:
        data.orders.size === expected.orders.length &&
        expected.orders.every((order) => {
          const stored = data.orders.get(order.id);
          return stored?.version === order.version && stored.status === order.status;
        }),
      sales: JSON.stringify(data.sales) === JSON.stringify(expected.sales),
    };
  }
  return summary;
}

/** `n` feeds `shard-1` … `shard-n` over the generated feed's vendors, dealt round-robin. */
export function shardFeeds(n: number): LocalFeed[] {
  const vendors = generatedVendorIds();
  return Array.from({ length: n }, (_, shard) => ({
    id: `shard-${shard + 1}`,
    vendorIds: vendors.filter((_, index) => index % n === shard),
  }));
}

/** A reused stack must have the feeds this run asked for (local mode never changes a stack it reuses). */
function checkDeployedFeeds(deployment: Deployment, feeds: readonly LocalFeed[] | undefined): void {
  if (feeds === undefined) return;
  const deployed = deployment.pollers.map((poller) => poller.feedId).join(', ');
  const wanted = feeds.map((feed) => feed.id).join(', ');
  if (deployed !== wanted) {
    throw new DeploymentError(
      `the stack at this endpoint runs the feeds ${deployed}, not ${wanted}; local mode never changes a stack it reuses: ` +
        'use a fresh emulator (omit --aws-endpoint)',
    );
  }
}

/** Where a fleet's token parameters live: the deployment's default tokenParameterPath. */
const FLEET_TOKEN_PATH = '/order-feed-ingester/';

/** Each feed of a fleet: its plan, its runs, its row's state and reason, its vendors' stored orders. */
async function fleetSummary(
  aws: LocalAwsClients,
  deployment: Deployment,
  plan: FleetPlan,
  runs: readonly FleetFeedRun[],
): Promise<FleetFeedSummary[]> {
  const registry = new DynamoFeedRegistry(aws.dynamo, deployment.cursorTable);
  const orders = await scanOrders(aws, deployment.ordersTable);
  const ordersByVendor = new Map<string, number>();
  for (const item of orders.values()) {
    const vendor = String(item.vendorId);
    ordersByVendor.set(vendor, (ordersByVendor.get(vendor) ?? 0) + 1);
  }
  const byId = new Map(runs.map((run) => [run.feedId, run]));
  const rows = new Map<string, Record<string, unknown> | undefined>();
  for (let start = 0; start < plan.feeds.length; start += 10) {
    await Promise.all(
      plan.feeds
        .slice(start, start + 10)
        .map(async ({ feedId }) => rows.set(feedId, await registry.item(feedId))),
    );
  }
  return plan.feeds.map(({ feedId, config, revoked }) => {
    const row = rows.get(feedId);
    const vendorIds = config.vendorIds ?? [];
    const { feedId: _, end, lastRun, ...counters } = byId.get(feedId) ?? fleetFeedRunOf(feedId);
    const reason = row?.stopReason ?? row?.stateReason;
    return {
      feedId,
      vendorIds,
      tokenParameter: config.tokenParameterName,
      revokedToken: revoked,
      outcome: end ?? 'running',
      lastRun,
      state: typeof row?.feedState === 'string' ? row.feedState : 'enabled',
      ...(typeof reason === 'string' ? { stopReason: reason } : {}),
      orders: vendorIds.reduce((sum, vendor) => sum + (ordersByVendor.get(vendor) ?? 0), 0),
      counters,
    };
  });
}

interface BuiltInSimulator {
  sim: RunningSimulator;
  scenario: AnyScenarioId | undefined;
  orders: number | undefined;
  seed: number | undefined;
}

async function startBuiltInSimulator(
  options: LocalRunOptions,
  token: string,
  fleet: FleetPlan | undefined,
): Promise<BuiltInSimulator> {
  // Loaded only when used: runs against another partner API never load the simulator.
  const { startSimulator } = await import('../simulator/index.js');
  const scenario = options.scenario as AnyScenarioId | undefined;
  const limit = options.tokenRateLimit;
  const rateLimit = limit === undefined ? {} : { tokenRateLimit: { requestsPerSecond: limit } };
  if (scenario !== undefined) {
    return {
      sim: await startSimulator({ token, ...rateLimit }),
      scenario,
      orders: undefined,
      seed: undefined,
    };
  }
  const orders = options.orders ?? DEFAULT_ORDERS;
  const seed = options.seed ?? DEFAULT_SEED;
  // A fleet reads more vendors than the default five, each token of its own feeds accepted but the revoked one.
  const sim = await startSimulator({
    token,
    feed: { seed, orders, ...(fleet && fleet.vendors !== DEFAULT_VENDORS ? { vendors: fleet.vendors } : {}) },
    ...(fleet ? { additionalTokens: acceptedTokens(fleet) } : {}),
    ...rateLimit,
  });
  return { sim, scenario, orders, seed };
}

/** What the built-in simulator served, as the end state a correct pipeline reaches. */
async function expectedOf(builtIn: BuiltInSimulator): Promise<ExpectedEndState> {
  if (builtIn.scenario !== undefined) {
    const { SCENARIO_EXPECTATIONS } = await import('../simulator/index.js');
    return SCENARIO_EXPECTATIONS[builtIn.scenario];
  }
  const expected = builtIn.sim.expected();
  return { orders: [...expected.orders.values()], sales: expected.sales };
}

/**
 * Runs local mode end to end (steps 1–7 above) and resolves with the summary. Everything it started
 * (emulator, simulator) is stopped before it resolves, except, with keepEmulatorOnFailure, the emulator of a
 * run worth resuming; a given endpoint keeps the stack and its data.
 */
export function runLocal(options: LocalRunOptions, events: LocalRunEvents = {}): LocalRun {
  checkLocalRunOptions(options);
  const note = events.note ?? (() => undefined);
  let stopRequested = false;
  let pipeline: LocalPipeline | undefined;
  let moto: RunningMoto | undefined;
  let builtIn: BuiltInSimulator | undefined;

  const done = (async (): Promise<LocalSummary> => {
    const startedAt = Date.now();
    let aws: LocalAwsClients | undefined;
    let token = options.token;
    let apiUrl = options.apiUrl ?? '';
    let awsEndpoint = options.awsEndpoint ?? '';
    // Known once the stack is found or deployed: from then on the emulator holds data worth keeping.
    let deployment: Deployment | undefined;
    let stack: EnsuredStack | undefined;
    // A run that ended before there was data to read (or could not read it): the names it knows, no data.
    const summaryWithoutData = (outcome: SummaryOutcome, detail?: string): LocalSummary => ({
      region: deployment?.region ?? '',
      stackName: deployment?.stackName ?? '',
      ordersTable: deployment?.ordersTable ?? '',
      cursorTable: deployment?.cursorTable ?? '',
      queueUrl: deployment?.queueUrl ?? '',
      deadLetterQueueUrl: deployment?.deadLetterQueueUrl ?? '',
      quarantineBucket: deployment?.quarantineBucket ?? '',
      apiUrl,
      awsEndpoint,
      outcome,
      ...(detail === undefined ? {} : { detail }),
      elapsedMs: Date.now() - startedAt,
      deploy: undefined,
      sales: [],
      ordersByStatus: {},
      orders: 0,
      quarantined: [],
      deadLettered: 0,
      queueDepth: 0,
      counters: emptyCounters(),
    });

    /** Steps 1–7; resolves with the summary of a run that ended, throws on an error. */
    const run = async (): Promise<LocalSummary> => {
      // A fleet's feeds and tokens (fresh ones each run: the rows and SSM take them).
      const fleet =
        options.fleet &&
        fleetPlan(options.fleet.feeds, options.fleet.revokedTokenFeeds, FLEET_TOKEN_PATH, () =>
          randomBytes(24).toString('base64url'),
        );
      if (options.awsEndpoint === undefined) {
        moto = await startMoto();
        awsEndpoint = moto.endpoint;
      }
      aws = createLocalAwsClients(parseAwsEndpoint(awsEndpoint));
      if (options.apiUrl === undefined) {
        // Built-in simulator without a given token: the one an earlier run stored at this endpoint, so
        // runs sharing an endpoint do not overwrite each other's token; else a random one.
        token ??=
          options.awsEndpoint === undefined ? undefined : await readStoredToken(aws, DEFAULT_TOKEN_PARAMETER);
        token ??= randomBytes(24).toString('base64url');
        builtIn = await startBuiltInSimulator(options, token, fleet);
        apiUrl = builtIn.scenario === undefined ? builtIn.sim.url : `${builtIn.sim.url}/${builtIn.scenario}`;
      }
      if (token === undefined) throw new LocalUsageError('a partner API token is required with --api-url');
      if (stopRequested) return summaryWithoutData('interrupted');
      const feeds = options.feeds ?? (options.shards === undefined ? undefined : shardFeeds(options.shards));
      stack = await ensureStack(
        aws,
        {
          partnerBaseUrl: apiUrl,
          tokenParameterName: DEFAULT_TOKEN_PARAMETER,
          ...(feeds ? { feeds } : {}),
          ...(options.subscribers ? { subscribers: options.subscribers } : {}),
        },
        { note, ...(events.cdkLog ? { log: events.cdkLog } : {}) },
      );
      const found = await readDeployment(aws, stack.stackName);
      checkDeployedFeeds(found, feeds);
      checkDeployedSubscribers(found, options.subscribers);
      deployment = found;
      await storeToken(aws, deployment.tokenParameterName, token);
      if (options.resetData) await resetData(aws, deployment);
      if (fleet) await registerFleet(aws, deployment, fleet);
      if (stopRequested) return summaryWithoutData('interrupted');

      const tuning: LocalTuning = { ...DEFAULT_TUNING, ...options.tuning };
      const giveUpAfterMs = giveUpAfterOf(options.giveUpAfterMs, options.watch ?? false);
      const deployedBaseUrl = deployment.pollers[0]?.function.environment.PARTNER_BASE_URL;
      events.onReady?.({
        awsEndpoint,
        emulatorStarted: moto !== undefined,
        apiUrl,
        simulator: builtIn && { scenario: builtIn.scenario, orders: builtIn.orders, seed: builtIn.seed },
        stack,
        deployment,
        tuning,
        giveUpAfterMs,
        overriddenBaseUrl: deployedBaseUrl !== apiUrl ? deployedBaseUrl : undefined,
        resetData: options.resetData ?? false,
        ...(fleet ? { fleet: fleet.feeds } : {}),
      });
      pipeline = await startLocalPipeline({
        aws,
        deployment,
        partnerBaseUrl: apiUrl,
        watch: options.watch ?? false,
        verbose: options.verbose ?? false,
        ...(giveUpAfterMs === undefined ? {} : { giveUpAfterMs }),
        tuning,
        note,
        ...(events.onProgress ? { onProgress: events.onProgress } : {}),
        ...(fleet ? { fleet: { feedIds: fleet.feeds.map((feed) => feed.feedId) } } : {}),
      });
      if (stopRequested) pipeline.stop();
      const result = await pipeline.done;
      // A fleet whose refused feeds read vendors other feeds read too: the rest must still reach the whole feed.
      const checked =
        result.outcome === 'drained' ||
        result.outcome === 'feed-stopped' ||
        (fleet !== undefined && result.outcome === 'auth-failed');
      const summary = await readSummary(
        aws,
        deployment,
        {
          apiUrl,
          awsEndpoint,
          outcome: result.outcome,
          ...(result.detail === undefined ? {} : { detail: result.detail }),
          ...(result.stoppedBy === undefined ? {} : { stoppedBy: result.stoppedBy }),
          counters: result.counters,
          elapsedMs: Date.now() - startedAt,
          deploy: { deployed: stack.deployed, ms: stack.deployMs },
        },
        // Only a run that drained, or stopped where its scenario documents a stop, is expected to have reached it.
        builtIn && checked ? await expectedOf(builtIn) : undefined,
      );
      if (fleet) summary.feeds = await fleetSummary(aws, deployment, fleet, result.feeds ?? []);
      return summary;
    };

    /** What an error left: the data so far when there is a deployment to read it from. */
    const errorSummary = async (error: unknown): Promise<LocalSummary> => {
      const detail = error instanceof Error ? error.message : String(error);
      if (aws === undefined || deployment === undefined) return summaryWithoutData('error', detail);
      const counters = pipeline?.snapshot().counters ?? emptyCounters();
      const elapsedMs = Date.now() - startedAt;
      const deploy = stack && { deployed: stack.deployed, ms: stack.deployMs };
      const ran = {
        apiUrl,
        awsEndpoint,
        outcome: 'error' as const,
        detail,
        counters,
        elapsedMs,
        ...(deploy ? { deploy } : {}),
      };
      // The emulator itself may be what failed: then the summary says only what this process knows.
      return readSummary(aws, deployment, ran).catch(() => ({
        ...summaryWithoutData('error', detail),
        counters,
        deploy,
      }));
    };

    let summary: LocalSummary;
    let failure: { error: unknown } | undefined;
    try {
      summary = await run();
    } catch (error) {
      // Ctrl-C in a terminal also reaches the cdk child process: its failure is the interruption.
      if (stopRequested && pipeline === undefined) summary = summaryWithoutData('interrupted');
      else {
        failure = { error };
        summary = await errorSummary(error);
      }
    }
    aws?.destroy();
    await builtIn?.sim.close();
    if (moto && options.keepEmulatorOnFailure && deployment && worthResuming(summary.outcome)) {
      if (moto.keep()) summary.keptEmulator = { endpoint: moto.endpoint, pid: moto.pid };
    } else await moto?.stop();
    if (failure) throw new LocalRunError(summary, { cause: failure.error });
    return summary;
  })();

  return {
    done,
    stop() {
      stopRequested = true;
      pipeline?.stop();
    },
    async abort() {
      stopRequested = true;
      await Promise.allSettled([builtIn?.sim.close(), moto?.stop()]);
    },
  };
}
