// The deployed stack, as local mode sees it: make sure it exists (deploy it with `cdk deploy` into the
// emulator, or reuse it), then read back everything the local runtime emulates from it: outputs,
// each function's environment and timeout, the schedule rule, the SQS event source mapping and the
// orders queue's visibility timeout and redrive policy. Nothing here is hard-coded from the stack's
// source: what runs locally is what was deployed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stack } from '@aws-sdk/client-cloudformation';
import { DescribeRuleCommand } from '@aws-sdk/client-eventbridge';
import { ListEventSourceMappingsCommand } from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetParameterCommand, ParameterNotFound, PutParameterCommand } from '@aws-sdk/client-ssm';
import { type InitialFeed, parseInitialFeeds } from '../../functions/core/fleet/feed-config.js';
import { readInitialFeeds } from '../../functions/dispatcher/config.js';
import { parseRateExpression } from '../../infra/schedule-rate.js';
import type { LocalFeed } from '../deploy-local.js';
import {
  describeStack,
  downstreamQueueUrls,
  type FunctionDeployment,
  readFunction,
  stackOutputs,
} from '../stack.js';
import type { LocalAwsClients } from './aws.js';
import { acquireLock } from './deploy-lock.js';

/** `STACK_NAME` of infra/app.ts (not imported from there: that module loads aws-cdk-lib). */
export const DEFAULT_STACK_NAME = 'OrderFeedIngester';
export const DEFAULT_TOKEN_PARAMETER = '/order-feed-ingester/partner-token';

export class DeploymentError extends Error {
  override readonly name = 'DeploymentError';
}

/** The CDK context local mode deploys with (`orderFeed.*`); everything else keeps its default. */
export interface StackContext {
  partnerBaseUrl: string;
  tokenParameterName: string;
  /** Several feeds (`orderFeed.feeds`, e.g. `npm start -- --shards 3`); omitted: one feed. */
  feeds?: readonly LocalFeed[];
  /** `orderFeed.downstreamSubscribers` (`npm start -- --subscriber NAME`): queues nobody local reads. */
  subscribers?: readonly string[];
}

export interface EnsureStackOptions {
  stackName?: string;
  /** cdk's own output (synth, bootstrap, deploy); default: dropped, its tail is kept for errors. */
  log?: (chunk: string) => void;
  /** Progress notes for the user ("deploying…", "waiting for process N…"). */
  note?: (message: string) => void;
}

export interface EnsuredStack {
  stackName: string;
  /** True when this call deployed it; false when it was found and reused. */
  deployed: boolean;
  deployMs: number;
}

type StackState = 'absent' | 'ready' | 'in-progress' | 'broken';

function stateOf(stack: Stack | undefined): StackState {
  const status = stack?.StackStatus;
  if (status === undefined || status === 'DELETE_COMPLETE') return 'absent';
  if (status.endsWith('_IN_PROGRESS')) return 'in-progress';
  if (status === 'ROLLBACK_COMPLETE' || status.endsWith('_FAILED')) return 'broken';
  return 'ready';
}

/** Waits out CREATE_IN_PROGRESS and the like; resolves with the settled stack (or undefined). */
async function settledStack(aws: LocalAwsClients, stackName: string, note: (m: string) => void) {
  let stack = await describeStack(aws.cloudFormation, stackName);
  if (stateOf(stack) === 'in-progress') note(`stack ${stackName} is ${stack?.StackStatus}; waiting for it`);
  const deadline = Date.now() + 10 * 60_000;
  while (stateOf(stack) === 'in-progress') {
    if (Date.now() > deadline) throw new DeploymentError(`stack ${stackName} stayed ${stack?.StackStatus}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    stack = await describeStack(aws.cloudFormation, stackName);
  }
  if (stateOf(stack) === 'broken') {
    throw new DeploymentError(
      `stack ${stackName} is ${stack?.StackStatus} in the emulator (local mode never updates or repairs a stack it reuses): ` +
        'start a fresh emulator, or omit --aws-endpoint',
    );
  }
  return stack;
}

/**
 * Finds the stack at the endpoint or deploys it. Processes racing to deploy serialise on a lock in the
 * emulator: the first deploys, the others wait for it and reuse its stack (a stack created meanwhile
 * by anyone, AlreadyExists, is reused the same way).
 */
export async function ensureStack(
  aws: LocalAwsClients,
  context: StackContext,
  options: EnsureStackOptions = {},
): Promise<EnsuredStack> {
  const stackName = options.stackName ?? DEFAULT_STACK_NAME;
  const note = options.note ?? (() => undefined);
  const started = Date.now();
  const reused = (): EnsuredStack => ({ stackName, deployed: false, deployMs: Date.now() - started });
  if (stateOf(await settledStack(aws, stackName, note)) === 'ready') return reused();

  if (!aws.endpoint.loopback) {
    throw new DeploymentError(
      `no stack ${stackName} at ${aws.endpoint.sdk}; local mode deploys only into an emulator on this machine`,
    );
  }
  if (aws.region !== 'us-east-1') {
    throw new DeploymentError(
      `local deploys go to us-east-1 (AWS_REGION is ${aws.region}): unset AWS_REGION`,
    );
  }
  const lock = await acquireLock(aws.dynamo, `deploy#${stackName}`, {
    onWait: (holder) =>
      note(`another local-mode process (pid ${holder.pid}) is deploying ${stackName}; waiting for it`),
  });
  try {
    if (stateOf(await settledStack(aws, stackName, note)) === 'ready') return reused();
    note(`deploying stack ${stackName} into ${aws.endpoint.deploy} (cdk deploy --method=direct)`);
    await deployWithCdk(aws, stackName, context, options.log);
    return { stackName, deployed: true, deployMs: Date.now() - started };
  } catch (error) {
    // Someone deployed it anyway (a process not using the lock): reuse theirs.
    const stack = await describeStack(aws.cloudFormation, stackName).catch(() => undefined);
    if (stateOf(stack) === 'ready' || stateOf(stack) === 'in-progress') {
      await settledStack(aws, stackName, note);
      return reused();
    }
    throw error;
  } finally {
    await lock.release();
  }
}

async function deployWithCdk(
  aws: LocalAwsClients,
  stackName: string,
  context: StackContext,
  log: ((chunk: string) => void) | undefined,
): Promise<void> {
  // Loaded only when deploying: it pulls in aws-cdk-lib.
  const { deployLocal } = await import('../deploy-local.js');
  // A private cloud assembly per process: two processes never synthesize into the same directory.
  const workDir = mkdtempSync(join(tmpdir(), 'order-feed-local-deploy-'));
  try {
    const outputs = await deployLocal({
      endpoint: aws.endpoint.deploy,
      outputsFile: join(workDir, 'outputs.json'),
      assemblyDir: join(workDir, 'cdk.out'),
      partnerBaseUrl: context.partnerBaseUrl,
      tokenParameterName: context.tokenParameterName,
      ...(context.feeds ? { feeds: context.feeds } : {}),
      ...(context.subscribers ? { subscribers: context.subscribers } : {}),
      // deployLocal puts the tail of cdk's output into its error.
      log: log ?? (() => undefined),
    });
    if (outputs.OrdersTableName === undefined) {
      throw new DeploymentError(`cdk deployed ${stackName} but returned no outputs`);
    }
  } catch (error) {
    if (error instanceof DeploymentError) throw error;
    throw new DeploymentError(
      `cdk deploy of ${stackName} failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** A feed of the deployment's initial set (the dispatcher's asset), and the one poller that polls it. */
export interface FeedDeployment {
  feedId: string;
  /** Its registry row's configuration and state, as the dispatcher seeds it. */
  initial: InitialFeed;
  function: FunctionDeployment;
}

export interface Deployment {
  region: string;
  stackName: string;
  outputs: Record<string, string>;
  ordersTable: string;
  /** The order history; undefined when the stack keeps none (`history: false`). */
  historyTable: string | undefined;
  cursorTable: string;
  quarantineBucket: string;
  queueUrl: string;
  deadLetterQueueUrl: string;
  /** Downstream subscriber queues and their DLQs (published to by the poller; nobody local reads them). */
  downstreamQueueUrls: string[];
  /** The initial set's feeds, in its order (at least one), each with the one poller function. */
  pollers: FeedDeployment[];
  /** The initial set's text, as the dispatcher reads it at cold start (the object INITIAL_FEEDS_OBJECT names). */
  initialFeedsText: string;
  /** The one poller function (every feed's) and the dispatcher its rule runs (and the pollers ask for). */
  poller: FunctionDeployment;
  dispatcher: FunctionDeployment;
  consumer: FunctionDeployment;
  schedule: { ruleName: string; expression: string; state: string; intervalMs: number | undefined };
  eventSource: {
    uuid: string;
    queueArn: string;
    batchSize: number;
    reportBatchItemFailures: boolean;
    maximumConcurrency: number | undefined;
    maximumBatchingWindowSeconds: number;
    /** The mapping's state in the emulator (local mode disables it there, see local-pipeline.ts). */
    enabled: boolean;
  };
  queue: {
    visibilityTimeoutSeconds: number;
    maxReceiveCount: number | undefined;
    deadLetterTargetArn: string;
  };
  tokenParameterName: string;
}

/** Subscriber name → queue URL, as the stack's pollers publish to them (DOWNSTREAM_QUEUE_URLS). */
export function subscriberQueues(deployment: Deployment): Record<string, string> {
  return downstreamQueueUrls(deployment.pollers[0]?.function.environment ?? {});
}

/** A reused stack must have the subscriber queues asked for: moto cannot add them to it. */
export function checkDeployedSubscribers(
  deployment: Deployment,
  wanted: readonly string[] | undefined,
): void {
  const deployed = Object.keys(subscriberQueues(deployment));
  const missing = (wanted ?? []).filter((name) => !deployed.includes(name));
  if (missing.length > 0) {
    throw new DeploymentError(
      `the stack at this endpoint has no subscriber queue ${missing.join(', ')} (its subscribers: ` +
        `${deployed.join(', ') || 'none'}); local mode never changes a stack it reuses: use a fresh emulator (omit --aws-endpoint)`,
    );
  }
}

export async function readDeployment(
  aws: LocalAwsClients,
  stackName = DEFAULT_STACK_NAME,
): Promise<Deployment> {
  const stack = await describeStack(aws.cloudFormation, stackName);
  if (stateOf(stack) !== 'ready') {
    throw new DeploymentError(`stack ${stackName} is not deployed at ${aws.endpoint.sdk}`);
  }
  const outputs = stackOutputs(stack);
  const output = (key: string): string => {
    const value = outputs[key];
    if (value === undefined) throw new DeploymentError(`stack ${stackName} has no output ${key}`);
    return value;
  };
  const [poller, dispatcher, consumer] = await Promise.all([
    readFunction(aws.lambda, output('PollerFunctionName')),
    readFunction(aws.lambda, output('DispatcherFunctionName')),
    readFunction(aws.lambda, output('ConsumerFunctionName')),
  ]);
  const initialFeedsText = (await readInitialFeeds(dispatcher.environment, aws.s3)) ?? '{"feeds":[]}';
  const pollers = initialFeedsOf(initialFeedsText, stackName).map((initial) => ({
    feedId: initial.feedId,
    initial,
    function: poller,
  }));
  // The dispatcher's rule: the one schedule of every feed.
  const ruleName = output('DispatchScheduleRuleName');
  const rule = await aws.events.send(new DescribeRuleCommand({ Name: ruleName }));
  const queueUrl = output('OrdersQueueUrl');
  const { Attributes: queueAttributes = {} } = await aws.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }),
  );
  const queueArn = queueAttributes.QueueArn ?? '';
  const { EventSourceMappings = [] } = await aws.lambda.send(
    new ListEventSourceMappingsCommand({ FunctionName: consumer.name }),
  );
  const mapping = EventSourceMappings.find((candidate) => candidate.EventSourceArn === queueArn);
  if (mapping === undefined) {
    throw new DeploymentError(`no event source mapping from ${queueArn} to ${consumer.name}`);
  }
  const redrive = parseRedrivePolicy(queueAttributes.RedrivePolicy);
  return {
    region: aws.region,
    stackName,
    outputs,
    ordersTable: output('OrdersTableName'),
    historyTable: outputs.HistoryTableName,
    cursorTable: output('CursorTableName'),
    quarantineBucket: output('QuarantineBucketName'),
    queueUrl,
    deadLetterQueueUrl: output('OrdersDeadLetterQueueUrl'),
    downstreamQueueUrls: Object.entries(outputs)
      .filter(
        ([key]) => key.startsWith('DownstreamQueueUrl') || key.startsWith('DownstreamDeadLetterQueueUrl'),
      )
      .map(([, value]) => value),
    pollers,
    initialFeedsText,
    poller,
    dispatcher,
    consumer,
    schedule: {
      ruleName,
      expression: rule.ScheduleExpression ?? '',
      state: rule.State ?? 'UNKNOWN',
      intervalMs: rateToMs(rule.ScheduleExpression),
    },
    eventSource: {
      uuid: mapping.UUID ?? '',
      queueArn,
      batchSize: mapping.BatchSize ?? 10,
      reportBatchItemFailures: (mapping.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
      maximumConcurrency: mapping.ScalingConfig?.MaximumConcurrency,
      maximumBatchingWindowSeconds: mapping.MaximumBatchingWindowInSeconds ?? 0,
      enabled: mapping.State === undefined || /^enabl/i.test(mapping.State),
    },
    queue: {
      visibilityTimeoutSeconds: Number(queueAttributes.VisibilityTimeout ?? 30),
      maxReceiveCount: redrive?.maxReceiveCount,
      deadLetterTargetArn: redrive?.deadLetterTargetArn ?? '',
    },
    tokenParameterName: pollers[0]?.initial.config.tokenParameterName ?? DEFAULT_TOKEN_PARAMETER,
  };
}

/** The deployment's initial set, from the dispatcher's asset (at least one feed). */
function initialFeedsOf(text: string, stackName: string): InitialFeed[] {
  let feeds: InitialFeed[];
  try {
    feeds = parseInitialFeeds(text);
  } catch (error) {
    throw new DeploymentError(
      `stack ${stackName}: the dispatcher's initial set (INITIAL_FEEDS_OBJECT) is invalid (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (feeds.length === 0) throw new DeploymentError(`stack ${stackName} has no initial feed`);
  return feeds;
}

function parseRedrivePolicy(
  raw: string | undefined,
): { maxReceiveCount: number; deadLetterTargetArn: string } | undefined {
  if (!raw) return undefined;
  const parsed = JSON.parse(raw) as { maxReceiveCount?: number | string; deadLetterTargetArn?: string };
  return {
    maxReceiveCount: Number(parsed.maxReceiveCount),
    deadLetterTargetArn: parsed.deadLetterTargetArn ?? '',
  };
}

/** `rate(5 minutes)` → 300000; cron expressions and anything else → undefined. */
export function rateToMs(expression: string | undefined): number | undefined {
  const rate = parseRateExpression(expression ?? '');
  return rate === undefined ? undefined : rate.minutes * 60_000;
}

/** Stores the partner token where the deployed poller reads it: an SSM SecureString. */
export async function storeToken(aws: LocalAwsClients, parameterName: string, token: string): Promise<void> {
  await aws.ssm.send(
    new PutParameterCommand({
      Name: parameterName,
      Value: token,
      Type: 'SecureString',
      Overwrite: true,
      Description: 'Partner API bearer token (local mode)',
    }),
  );
}

/** The token stored by an earlier run, if any (so that runs sharing an endpoint share the token). */
export async function readStoredToken(
  aws: LocalAwsClients,
  parameterName: string,
): Promise<string | undefined> {
  try {
    const { Parameter } = await aws.ssm.send(
      new GetParameterCommand({ Name: parameterName, WithDecryption: true }),
    );
    return Parameter?.Value || undefined;
  } catch (error) {
    if (error instanceof ParameterNotFound) return undefined;
    throw error;
  }
}
