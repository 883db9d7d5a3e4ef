// Stateless: the poller function of one feed. Each run takes the feed's lease in the cursor table, reads the
// partner token from SSM, pages the partner API, sends every order version to every queue and
// quarantines what it cannot publish. Its role can do exactly that and nothing else (notably it cannot
// touch the orders table, another feed's token or another poller). A deployment with several feeds has one
// Poller each: its own function, environment and log group.
import { fileURLToPath } from 'node:url';
import { ArnFormat, Duration, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { Grant, Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { RecursiveLoop } from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { CfnBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { PollerEnvironment } from '../../functions/core/config/settings.js';
import { downstreamQueueUrlsCharacters, type FeedConfig, type OrderFeedConfig } from '../config.js';
import type { CursorTable } from './cursor-table.js';
import { IngesterFunction, observabilityEnvironment } from './ingester-function.js';
import { LONGEST_GENERATED } from './lambda-environment.js';
import type { OrderQueues } from './order-queues.js';
import { QUARANTINE_PREFIX, type QuarantineBucket } from './quarantine-bucket.js';

export const POLLER_ENTRY = fileURLToPath(new URL('../../functions/poller/handler.ts', import.meta.url));
export const POLLER_SERVICE_NAME = 'order-feed-poller';
/** Long enough for `maxPagesPerRun` pages with retries; the handler budgets its work against it. */
export const POLLER_TIMEOUT = Duration.minutes(2);

export interface PollerProps {
  readonly config: OrderFeedConfig;
  /** The feed this poller serves (one of `config.feeds`). */
  readonly feed: FeedConfig;
  readonly cursorTable: CursorTable;
  readonly queues: OrderQueues;
  readonly quarantine: QuarantineBucket;
  /** The `Ingester` dimension of its metrics (OrderFeedIngester.instanceId). */
  readonly instanceId: string;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export class Poller extends Construct {
  readonly function: IngesterFunction;

  constructor(scope: Construct, id: string, props: PollerProps) {
    super(scope, id);
    const { feed, cursorTable, queues, quarantine } = props;

    this.function = new IngesterFunction(this, 'Function', {
      entry: POLLER_ENTRY,
      bundle: 'poller',
      description: `order-feed-ingester poller of feed ${feed.id}: partner Order Feed API to SQS`,
      timeout: POLLER_TIMEOUT,
      memorySize: pollerMemoryMb(props.config.maxPageBodyBytes),
      // No reserved concurrency: Lambda keeps at least 100 of the account's concurrent executions unreserved
      // (UnreservedConcurrentExecutions minimum), so reserving even one fails the deploy on an account whose
      // quota is below 100 + the reservations (new accounts often have 10). The lease in the cursor table is
      // what allows one run per feed at a time: a run that finds it held ends at once.
      // Self-continuation is a deliberate loop: without this, Lambda's recursive loop detection (which also
      // follows direct Invoke calls, by the trace header the AWS SDK passes on) drops the 17th run of a chain.
      // The chain is bounded by maxContinuations, and only a run that made progress continues.
      recursiveLoop: RecursiveLoop.ALLOW,
      environment: pollerEnvironment(Stack.of(this), props.config, feed, props),
      longestDeployTimeValues: longestPollerDeployTimeValues(props.config),
      logRetention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    const role = this.function.executionRole;

    cursorTable.grantLeaseAndCommit(role);
    quarantine.grantPutQuarantined(role);
    // SendMessage also authorises SendMessageBatch.
    Grant.addToPrincipal({
      grantee: role,
      actions: ['sqs:SendMessage'],
      resourceArns: queues.publishTargets.map((queue) => queue.queueArn),
    });
    this.grantTokenRead(feed);
    // Self-continuation: the poller invokes itself (asynchronously) when a run ends with more to fetch. A
    // policy of its own, attached to the role: in the role's default policy the function's ARN would make a
    // dependency cycle (the function waits for its default policy).
    new Policy(this, 'SelfContinuation', {
      roles: [role],
      statements: [
        new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.function.functionArn] }),
      ],
    });

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
   * ssm:GetParameter on the one token parameter. With the default AWS-managed `alias/aws/ssm` key no KMS
   * grant is needed (its key policy lets any principal of the account decrypt through SSM); with a
   * customer-managed key, kms:Decrypt on that key, only when called through SSM.
   */
  private grantTokenRead(config: Pick<FeedConfig, 'tokenParameterName' | 'tokenKmsKeyArn'>): void {
    const stack = Stack.of(this);
    const role = this.function.executionRole;
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['ssm:GetParameter'],
        resources: [
          stack.formatArn({
            service: 'ssm',
            resource: 'parameter',
            resourceName: config.tokenParameterName.replace(/^\//, ''),
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ],
      }),
    );
    if (config.tokenKmsKeyArn !== undefined) {
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: [config.tokenKmsKeyArn],
          conditions: { StringEquals: { 'kms:ViaService': `ssm.${stack.region}.amazonaws.com` } },
        }),
      );
    }
  }
}

/**
 * The poller's memory for a page body cap: a page's worst case stays under 36 × the cap (a body of empty objects:
 * the body, its text, ~23 × parsed; one slice's messages and the quarantine bookkeeping, each at most ~2 × the
 * cap; functions/README.md, "Memory and time per page") beside ~160 MB of runtime. 512 MB up to the default
 * 8 MiB cap; more, in 64 MB steps, above it.
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
 * A feed's poller environment: the feed's and the poller's settings from the validated configuration and the
 * resources' names, typed by the variables the poller reads (functions/core/config/settings.ts).
 */
export function pollerEnvironment(
  stack: Stack,
  config: OrderFeedConfig,
  feed: FeedConfig,
  resources: Pick<PollerProps, 'cursorTable' | 'queues' | 'quarantine' | 'instanceId'>,
): PollerEnvironment {
  const downstreamQueueUrls: Record<string, string> = {};
  for (const [name, pair] of resources.queues.subscribers) downstreamQueueUrls[name] = pair.queue.queueUrl;
  const text = (value: number | undefined) => (value === undefined ? undefined : String(value));
  return {
    FEED_ID: feed.id,
    PARTNER_BASE_URL: feed.partnerBaseUrl,
    PARTNER_TOKEN_PARAMETER: feed.tokenParameterName,
    VENDOR_IDS: feed.vendorIds?.join(','),
    MIN_AGE_MINUTES: text(feed.minAgeMinutes),
    FEED_ENABLED: feed.enabled ? 'true' : 'false',
    PAGE_SIZE: String(config.pageSize),
    MAX_PAGES_PER_RUN: text(config.maxPagesPerRun),
    MAX_PAGE_BODY_BYTES: String(config.maxPageBodyBytes),
    MAX_CONTINUATIONS: String(config.maxContinuations),
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
