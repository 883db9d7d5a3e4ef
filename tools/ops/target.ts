// What the ops commands act on, found from the deployed stack: its outputs (tables, bucket, queues and
// their dead-letter queues, pollers) and a poller's environment (the subscribers' names). Feeds come from
// the cursor table (every item whose key is a feed id) and from the stack: the `FeedPollers` output
// ({ feedId: function name }, which every stack has), or on a stack deployed before it, the FEED_ID of
// `PollerFunctionName`.
import { paginateScan } from '@aws-sdk/client-dynamodb';
import { pascalCase } from '../../infra/config.js';
import type { AwsAt } from '../aws.js';
import { isFeedId } from '../feed-id.js';
import { describeStack, feedPollersOf, readFunction, stackOutputs } from '../stack.js';
import { OpsError } from './errors.js';

/** A queue the stack publishes to, and the dead-letter queue its failed messages go to. */
export interface QueuePair {
  /** `orders`, or the downstream subscriber's name. */
  name: string;
  kind: 'orders' | 'subscriber';
  url: string;
  deadLetterUrl: string | undefined;
}

export interface OpsTarget {
  stackName: string;
  ordersTable: string;
  cursorTable: string;
  quarantineBucket: string;
  /** The orders queue first, then the subscribers' queues sorted by name. */
  queues: QueuePair[];
  /** Feed id → poller function name, as the stack declares them. */
  pollers: Record<string, string>;
}

export async function readTarget(aws: AwsAt, stackName: string): Promise<OpsTarget> {
  let outputs: Record<string, string>;
  try {
    const stack = await describeStack(aws.cloudFormation, stackName);
    if (stack === undefined) {
      throw new OpsError(
        `stack ${stackName} not found${aws.endpoint ? ` at ${aws.endpoint}` : ''} (--stack-name, --aws-endpoint)`,
      );
    }
    outputs = stackOutputs(stack);
  } catch (error) {
    if (error instanceof OpsError) throw error;
    throw new OpsError(`cannot describe stack ${stackName}: ${messageOf(error)}`, { cause: error });
  }
  const pollerNames = declaredPollers(outputs);
  // A poller's environment names the feed (FEED_ID) and the subscribers (DOWNSTREAM_QUEUE_URLS keys).
  const firstPoller = Object.values(pollerNames)[0] ?? outputs.PollerFunctionName;
  let pollerEnv: Record<string, string> = {};
  if (firstPoller !== undefined) {
    try {
      pollerEnv = (await readFunction(aws.lambda, firstPoller)).environment;
    } catch (error) {
      throw new OpsError(`cannot read the configuration of function ${firstPoller}: ${messageOf(error)}`, {
        cause: error,
      });
    }
  }
  if (Object.keys(pollerNames).length === 0 && outputs.PollerFunctionName) {
    pollerNames[pollerEnv.FEED_ID || 'orders'] = outputs.PollerFunctionName;
  }
  return targetFromOutputs(stackName, outputs, pollerNames, subscriberNames(pollerEnv));
}

/** Pure part of readTarget: outputs (plus what the poller's environment says) → target. */
export function targetFromOutputs(
  stackName: string,
  outputs: Record<string, string>,
  pollers: Record<string, string>,
  /** Subscriber name → queue URL, from the poller's DOWNSTREAM_QUEUE_URLS. */
  subscribers: Record<string, string>,
): OpsTarget {
  const required = (key: string): string => {
    const value = outputs[key];
    if (!value) throw new OpsError(`stack ${stackName} has no output ${key}`);
    return value;
  };
  const queues: QueuePair[] = [
    {
      name: 'orders',
      kind: 'orders',
      url: required('OrdersQueueUrl'),
      deadLetterUrl: outputs.OrdersDeadLetterQueueUrl,
    },
  ];
  const prefix = 'DownstreamQueueUrl';
  const downstream: QueuePair[] = [];
  for (const [key, url] of Object.entries(outputs)) {
    if (!key.startsWith(prefix)) continue;
    const suffix = key.slice(prefix.length);
    // The output keys carry the name in PascalCase; the poller's map has it as configured.
    const name =
      Object.entries(subscribers).find(([, subscriberUrl]) => subscriberUrl === url)?.[0] ??
      Object.keys(subscribers).find((candidate) => pascalCase(candidate) === suffix) ??
      suffix.replace(/(?<=[a-z0-9])([A-Z])/g, '-$1').toLowerCase();
    downstream.push({
      name,
      kind: 'subscriber',
      url,
      deadLetterUrl: outputs[`DownstreamDeadLetterQueueUrl${suffix}`],
    });
  }
  downstream.sort((a, b) => a.name.localeCompare(b.name));
  return {
    stackName,
    ordersTable: required('OrdersTableName'),
    cursorTable: required('CursorTableName'),
    quarantineBucket: required('QuarantineBucketName'),
    queues: [...queues, ...downstream],
    pollers,
  };
}

/** The `FeedPollers` output of a multi-feed stack, when present and well-formed (tools/stack.ts). */
export function declaredPollers(outputs: Record<string, string>): Record<string, string> {
  try {
    return feedPollersOf(outputs);
  } catch (error) {
    throw new OpsError(messageOf(error));
  }
}

function subscriberNames(pollerEnv: Record<string, string>): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(pollerEnv.DOWNSTREAM_QUEUE_URLS ?? '{}');
    if (typeof parsed !== 'object' || parsed === null) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
  } catch {
    // The poller would refuse to start with this value; fall back to the output keys' names.
    return {};
  }
}

/** Feed ids: the stack's pollers' and every cursor item whose key is a feed id, sorted. */
export async function discoverFeeds(aws: AwsAt, target: OpsTarget): Promise<string[]> {
  const feeds = new Set(Object.keys(target.pollers));
  const pages = paginateScan(
    { client: aws.dynamo },
    { TableName: target.cursorTable, ProjectionExpression: 'feedId', ConsistentRead: true },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      const feedId = item.feedId?.S;
      // Other keys (e.g. `#backfill/<subscriber>`) can never be feed ids.
      if (feedId !== undefined && isFeedId(feedId)) feeds.add(feedId);
    }
  }
  return [...feeds].sort();
}

/** `--feed`, or the only feed; several feeds and no `--feed` is an error naming them. */
export function resolveFeed(requested: string | undefined, feeds: readonly string[]): string {
  if (requested !== undefined) {
    if (!feeds.includes(requested)) {
      throw new OpsError(
        `unknown feed "${requested}" (known: ${feeds.length > 0 ? feeds.join(', ') : 'none'})`,
      );
    }
    return requested;
  }
  if (feeds.length === 1) return feeds[0] as string;
  if (feeds.length === 0) throw new OpsError('the stack has no feed (no poller and no cursor item)');
  throw new OpsError(`the stack has several feeds (${feeds.join(', ')}): pass --feed ID`);
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
