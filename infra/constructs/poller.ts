// Stateless: the one poller function of every feed. The dispatcher invokes it asynchronously with a batch of
// due feeds; each run reads the feeds' registry rows, takes a feed's lease only when the partner has data,
// reads its token from SSM, pages the partner API, sends every order version to every queue and quarantines
// what it cannot publish, and asks the dispatcher for the next turn when a feed is behind. Its role can do
// exactly that and nothing else (notably it cannot touch the orders table, nor a parameter outside the token
// path and the initial set's own).
import { fileURLToPath } from 'node:url';
import { Duration, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { Grant, Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { CfnBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { PollerEnvironment } from '../../functions/core/config/settings.js';
import { downstreamQueueUrlsCharacters, type OrderFeedConfig } from '../config.js';
import type { CursorTable } from './cursor-table.js';
import { IngesterFunction, observabilityEnvironment } from './ingester-function.js';
import { LONGEST_GENERATED } from './lambda-environment.js';
import type { OrderQueues } from './order-queues.js';
import { QUARANTINE_PREFIX, type QuarantineBucket } from './quarantine-bucket.js';
import type { TokenParameters } from './token-parameters.js';

export const POLLER_ENTRY = fileURLToPath(new URL('../../functions/poller/handler.ts', import.meta.url));
export const POLLER_SERVICE_NAME = 'order-feed-poller';
/** Long enough for a batch's longest slice (90 s) with the page in hand; the handler budgets its work against it. */
export const POLLER_TIMEOUT = Duration.minutes(2);
/**
 * A batch not started within this never starts: the dispatcher counts it as on its way for 2 minutes
 * (inFlightGraceMs), then dispatches its feeds again, so a late start would run them twice at once.
 */
export const POLLER_MAX_EVENT_AGE = Duration.seconds(60);

export interface PollerProps {
  readonly config: OrderFeedConfig;
  readonly cursorTable: CursorTable;
  readonly queues: OrderQueues;
  readonly quarantine: QuarantineBucket;
  readonly tokenParameters: TokenParameters;
  /** The `Ingester` dimension of its metrics (OrderFeedIngester.instanceId). */
  readonly instanceId: string;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export class Poller extends Construct {
  readonly function: IngesterFunction;

  constructor(scope: Construct, id: string, props: PollerProps) {
    super(scope, id);
    const { cursorTable, queues, quarantine } = props;

    this.function = new IngesterFunction(this, 'Function', {
      entry: POLLER_ENTRY,
      bundle: 'poller',
      description: 'order-feed-ingester poller: the partner Order Feed API to SQS, a batch of feeds per run',
      timeout: POLLER_TIMEOUT,
      memorySize: pollerMemoryMb(props.config.maxPageBodyBytes),
      // No reserved concurrency: Lambda keeps at least 100 of the account's concurrent executions unreserved
      // (UnreservedConcurrentExecutions minimum), so reserving even one fails the deploy on an account whose
      // quota is below 100 + the reservations (new accounts often have 10). The dispatcher keeps the pollers
      // within maxConcurrentPollers, and a feed's lease allows one run of it at a time.
      environment: pollerEnvironment(Stack.of(this), props.config, props),
      longestDeployTimeValues: longestPollerDeployTimeValues(props.config),
      logRetention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    // Lambda's own async queue: a failed run is not retried (the feed's next turn is the dispatcher's), and a
    // batch that waited too long is dropped rather than run beside its feeds' next dispatch.
    this.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: POLLER_MAX_EVENT_AGE });
    const role = this.function.executionRole;

    cursorTable.grantPoll(role);
    quarantine.grantPutQuarantined(role);
    // SendMessage also authorises SendMessageBatch.
    Grant.addToPrincipal({
      grantee: role,
      actions: ['sqs:SendMessage'],
      resourceArns: queues.publishTargets.map((queue) => queue.queueArn),
    });
    props.tokenParameters.grantRead(role, { decrypt: true });

    const bucketLogicalId = Stack.of(this).resolve(
      (quarantine.bucket.node.defaultChild as CfnBucket).logicalId,
    );
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketLogicalId}.Arn>/${QUARANTINE_PREFIX}*]`,
      reason:
        'Object keys are generated per quarantined record, so PutObject needs a key wildcard; it is confined to the ' +
        `${QUARANTINE_PREFIX} prefix of the one quarantine bucket.`,
    });
  }

  /**
   * A poller asks the dispatcher for the next dispatch (a feed behind, feeds left waiting): the dispatcher's ARN
   * travels in the batch event. A policy of its own, attached to the role: in the role's default policy the
   * dispatcher's ARN would make a cycle (the dispatcher names the poller, and a function waits for its role's
   * default policy).
   */
  allowDispatchRequests(dispatcher: IFunction): Policy {
    return new Policy(this, 'DispatchRequests', {
      roles: [this.function.executionRole],
      statements: [
        new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [dispatcher.functionArn] }),
      ],
    });
  }
}

/**
 * The poller's memory for a page body cap: a page's worst case stays under 36 × the cap (a body of empty objects:
 * the body, its text, ~23 × parsed; one slice's messages and the quarantine bookkeeping, each at most ~2 × the
 * cap; functions/README.md, "Memory and time per page") beside ~160 MB of runtime. 512 MB up to the default
 * 8 MiB cap; more, in 64 MB steps, above it. The feeds of a batch parse one page at a time.
 */
export function pollerMemoryMb(maxPageBodyBytes: number): number {
  const needed = 160 + (36 * maxPageBodyBytes) / 1024 / 1024;
  return Math.max(512, Math.ceil(needed / 64) * 64);
}

/** The longest the poller's deploy-time values get: generated names, and the queue URLs' JSON. */
function longestPollerDeployTimeValues(
  config: OrderFeedConfig,
): Partial<Record<keyof PollerEnvironment, number>> {
  return {
    CURSOR_TABLE_NAME: LONGEST_GENERATED.tableName,
    ORDERS_QUEUE_URL: LONGEST_GENERATED.queueUrl,
    QUARANTINE_BUCKET_NAME: LONGEST_GENERATED.bucketName,
    // {"name":"url",…}, each URL at its longest, plus the escaping of its four quotes inside Lambda's JSON.
    DOWNSTREAM_QUEUE_URLS:
      2 +
      downstreamQueueUrlsCharacters(config.downstreamSubscribers) +
      4 * config.downstreamSubscribers.length,
  };
}

/**
 * The poller's environment: the deployment-wide settings from the validated configuration and the resources'
 * names, typed by the variables the poller reads (functions/core/config/settings.ts); each feed's own settings
 * are on its registry row.
 */
export function pollerEnvironment(
  stack: Stack,
  config: OrderFeedConfig,
  resources: Pick<PollerProps, 'cursorTable' | 'queues' | 'quarantine' | 'instanceId'>,
): PollerEnvironment {
  const downstreamQueueUrls: Record<string, string> = {};
  for (const [name, pair] of resources.queues.subscribers) downstreamQueueUrls[name] = pair.queue.queueUrl;
  const text = (value: number | undefined) => (value === undefined ? undefined : String(value));
  return {
    PARTNER_BASE_URL: config.partnerBaseUrl,
    MAX_PAGES_PER_RUN: text(config.maxPagesPerRun),
    MAX_PAGE_BODY_BYTES: String(config.maxPageBodyBytes),
    ARRAY_QUERY_ENCODING: config.arrayQueryEncoding,
    CURSOR_RECOVERY_LOOKBACK_MINUTES: text(config.cursorRecoveryLookbackMinutes),
    PARTNER_REQUESTS_PER_SECOND: text(config.partnerRequestsPerSecond),
    CURSOR_TABLE_NAME: resources.cursorTable.table.tableName,
    ORDERS_QUEUE_URL: resources.queues.orders.queue.queueUrl,
    // Queue URLs are deploy-time tokens: let CloudFormation render the JSON.
    DOWNSTREAM_QUEUE_URLS: stack.toJsonString(downstreamQueueUrls),
    QUARANTINE_BUCKET_NAME: resources.quarantine.bucket.bucketName,
    ...observabilityEnvironment(POLLER_SERVICE_NAME, config, resources.instanceId),
  };
}
