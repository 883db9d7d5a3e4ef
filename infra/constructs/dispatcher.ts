// Stateless: the dispatcher and its schedule. One EventBridge rule runs it every minute (and a poller that
// ends with a feed behind asks it for the next turn); each run takes the dispatch lock in the cursor table,
// scans every feed's row, registers the initial set's missing rows, and invokes the one poller
// asynchronously with batches of due feeds, within maxConcurrentPollers. Its role can do exactly that:
// read and write the cursor table's rows, invoke the poller, read the account's concurrency and the token
// parameters' versions (never their values).
//
// Why a dispatcher and not an EventBridge Scheduler schedule per feed: infra/FLEET.md 1b (four times the
// cost per feed, no concurrency budget of the ingester's own, and moto cannot deploy it). Why no retries and
// no dead-letter queue: a missed tick or request is the next tick's work (the schedule is the retry).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Asset } from 'aws-cdk-lib/aws-s3-assets';
import { DISABLE_ASSET_STAGING_CONTEXT } from 'aws-cdk-lib/cx-api';
import { Construct } from 'constructs';
import type { DispatcherEnvironment } from '../../functions/core/config/settings.js';
import { parseInitialFeeds } from '../../functions/core/fleet/feed-config.js';
import { initialFeedsTextOf, type OrderFeedConfig } from '../config.js';
import type { CursorTable } from './cursor-table.js';
import { IngesterFunction, observabilityEnvironment } from './ingester-function.js';
import { LONGEST_GENERATED } from './lambda-environment.js';
import type { TokenParameters } from './token-parameters.js';

export const DISPATCHER_ENTRY = fileURLToPath(
  new URL('../../functions/dispatcher/handler.ts', import.meta.url),
);
export const DISPATCHER_SERVICE_NAME = 'order-feed-dispatcher';
/** A dispatch runs rounds while pollers ask for one and time is left; the next tick comes a minute later. */
export const DISPATCHER_TIMEOUT = Duration.minutes(1);
/** The dispatcher runs every minute, whatever each feed's own interval (a feed is due at its interval). */
export const DISPATCH_INTERVAL = Duration.minutes(1);

export interface DispatcherProps {
  readonly config: OrderFeedConfig;
  readonly cursorTable: CursorTable;
  readonly poller: IFunction;
  readonly tokenParameters: TokenParameters;
  /** The `Ingester` dimension of its metrics (OrderFeedIngester.instanceId). */
  readonly instanceId: string;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export class Dispatcher extends Construct {
  readonly function: IngesterFunction;
  readonly schedule: Rule;
  /** The initial set as a file asset (the dispatcher reads it at cold start): no resource, whatever its size. */
  readonly initialFeeds: Asset;

  constructor(scope: Construct, id: string, props: DispatcherProps) {
    super(scope, id);
    const { config } = props;
    const initialFeedsText = initialFeedsTextOf(config.feeds, config.partnerBaseUrl);
    // The cold start's own check of the initial set (its rules are the settings'); synth checked every key
    // already, so this fails only if the two ever drift.
    parseInitialFeeds(initialFeedsText);
    // An asset, not a variable: Lambda's environment holds 4 KB, a thousand feeds take about 30 KB. The file
    // goes to the bootstrap bucket with the functions' code (content-addressed: the same set, the same key).
    const directory = mkdtempSync(join(tmpdir(), 'initial-feeds-'));
    writeFileSync(join(directory, 'initial-feeds.json'), initialFeedsText);
    this.initialFeeds = new Asset(this, 'InitialFeeds', { path: join(directory, 'initial-feeds.json') });
    // Staging has copied it into the cloud assembly; without staging (SAM's local tools) the asset is the file.
    if (!this.node.tryGetContext(DISABLE_ASSET_STAGING_CONTEXT)) rmSync(directory, { recursive: true });
    const environment = dispatcherEnvironment(config, { ...props, initialFeeds: this.initialFeeds });

    this.function = new IngesterFunction(this, 'Function', {
      entry: DISPATCHER_ENTRY,
      bundle: 'dispatcher',
      description: 'order-feed-ingester dispatcher: starts the poller with batches of due feeds',
      timeout: DISPATCHER_TIMEOUT,
      // A scan of 10,000 rows (~10 MB) and the plan; the CPU share of 512 MB keeps a dispatch near a second.
      memorySize: 512,
      environment,
      longestDeployTimeValues: {
        CURSOR_TABLE_NAME: LONGEST_GENERATED.tableName,
        POLLER_FUNCTION_NAME: LONGEST_GENERATED.functionName,
        INITIAL_FEEDS_OBJECT: LONGEST_GENERATED.assetObjectUrl,
      },
      logRetention: props.logRetention,
      removalPolicy: props.removalPolicy,
      resourceStarReason:
        'lambda:GetAccountSettings (the account concurrency the dispatcher keeps the pollers below) supports no ' +
        'resource-level permissions either.',
    });
    this.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: DISPATCH_INTERVAL });
    this.schedule = new Rule(this, 'Schedule', {
      description: 'Runs the order feed dispatcher, which polls every due feed',
      schedule: Schedule.rate(DISPATCH_INTERVAL),
    });
    this.schedule.addTarget(
      new LambdaFunction(this.function, {
        // EventBridge → Lambda delivery failures (a throttled Invoke API): retry within the minute only.
        retryAttempts: 2,
        maxEventAge: DISPATCH_INTERVAL,
      }),
    );

    const role = this.function.executionRole;
    props.cursorTable.grantDispatch(role);
    props.tokenParameters.grantRead(role, { decrypt: false });
    // Its one object, read once per cold start (Asset.grantRead would give s3:GetObject*, s3:List* on the bucket).
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:GetObject'],
        resources: [this.initialFeeds.bucket.arnForObjects(this.initialFeeds.s3ObjectKey)],
      }),
    );
    // The asynchronous invoke of the poller by name: its unqualified ARN, no version or alias.
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [props.poller.functionArn] }),
    );
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['lambda:GetAccountSettings'], resources: ['*'] }),
    );
  }
}

/** The dispatcher's environment, typed by the variables it reads (functions/core/config/settings.ts). */
export function dispatcherEnvironment(
  config: OrderFeedConfig,
  resources: Pick<DispatcherProps, 'cursorTable' | 'poller' | 'instanceId'> & { initialFeeds: Asset },
): DispatcherEnvironment {
  return {
    CURSOR_TABLE_NAME: resources.cursorTable.table.tableName,
    POLLER_FUNCTION_NAME: resources.poller.functionName,
    MAX_CONCURRENT_POLLERS: String(config.maxConcurrentPollers),
    STALE_AFTER_MINUTES: String(config.alarmLagMinutes),
    INITIAL_FEEDS_OBJECT: resources.initialFeeds.s3ObjectUrl,
    ...observabilityEnvironment(DISPATCHER_SERVICE_NAME, config, resources.instanceId),
  };
}
