// What the ops commands act on, found from the deployed stack: its outputs (tables, bucket, queues and
// their dead-letter queues, pollers, the dispatcher) and a poller's environment (the subscribers' names).
// Feeds come from the cursor table (every item whose key is a feed id: the registry's rows) and, on a stack
// of a poller per feed (before the fleet), from the stack: the `FeedPollers` output ({ feedId: function
// name }), or on a stack deployed before it, the FEED_ID of `PollerFunctionName`. A fleet's stack has one
// poller for every feed and a dispatcher (`DispatcherFunctionName`): no feed is named by its outputs.
import { paginateScan } from '@aws-sdk/client-dynamodb';
import { pascalCase } from '../../infra/config.js';
import type { AwsAt } from '../aws.js';
import { CommandError } from '../cli-args.js';
import {
  downstreamQueueUrls,
  feedPollersOf,
  isFeedId,
  readEnvironment,
  readStackOutputs,
  requiredOutput,
} from '../stack.js';

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
  /** The order history table (output HistoryTableName); undefined when history is off for the stack. */
  historyTable: string | undefined;
  /** The orders queue first, then the subscribers' queues sorted by name. */
  queues: QueuePair[];
  /** Feed id → poller function name, as a stack of a poller per feed declares them; {} on a fleet's stack. */
  pollers: Record<string, string>;
  /** The fleet's dispatcher function (output DispatcherFunctionName); undefined on a stack without it. */
  dispatcher: string | undefined;
}

export async function readTarget(aws: AwsAt, stackName: string): Promise<OpsTarget> {
  const outputs = await readStackOutputs(aws, stackName);
  const fleet = Boolean(outputs.DispatcherFunctionName);
  const pollerNames = fleet ? {} : feedPollersOf(outputs);
  // A poller's environment names the subscribers (DOWNSTREAM_QUEUE_URLS keys) and, before the fleet, its
  // feed (FEED_ID).
  const firstPoller = Object.values(pollerNames)[0] ?? outputs.PollerFunctionName;
  const pollerEnv = firstPoller === undefined ? {} : await readEnvironment(aws, firstPoller);
  // The one poller of a stack deployed before FeedPollers reads its feed's variables (a feed `orders` before
  // FEED_ID existed); a fleet's poller reads every feed's from the registry.
  const ownFeed = pollerEnv.FEED_ID !== undefined || pollerEnv.PARTNER_TOKEN_PARAMETER !== undefined;
  if (!fleet && ownFeed && Object.keys(pollerNames).length === 0 && outputs.PollerFunctionName) {
    pollerNames[pollerEnv.FEED_ID || 'orders'] = outputs.PollerFunctionName;
  }
  return targetFromOutputs(stackName, outputs, pollerNames, downstreamQueueUrls(pollerEnv));
}

/** Pure part of readTarget: outputs (plus what the poller's environment says) → target. */
export function targetFromOutputs(
  stackName: string,
  outputs: Record<string, string>,
  pollers: Record<string, string>,
  /** Subscriber name → queue URL, from the poller's DOWNSTREAM_QUEUE_URLS. */
  subscribers: Record<string, string>,
): OpsTarget {
  const required = (key: string) => requiredOutput(outputs, stackName, key);
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
    historyTable: outputs.HistoryTableName || undefined,
    queues: [...queues, ...downstream],
    pollers,
    dispatcher: outputs.DispatcherFunctionName || undefined,
  };
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

/** `--feed`, or the only feed; several feeds and no `--feed` is an error naming them (a fleet's first few). */
export function resolveFeed(requested: string | undefined, feeds: readonly string[]): string {
  const named = (ids: readonly string[]) =>
    ids.length <= 10 ? ids.join(', ') : `${ids.slice(0, 10).join(', ')}, … ${ids.length} in all: feeds list`;
  if (requested !== undefined) {
    if (!feeds.includes(requested)) {
      throw new CommandError(
        `unknown feed "${requested}" (known: ${feeds.length > 0 ? named(feeds) : 'none'})`,
      );
    }
    return requested;
  }
  if (feeds.length === 1) return feeds[0] as string;
  if (feeds.length === 0) throw new CommandError('the stack has no feed (no poller and no cursor item)');
  throw new CommandError(`the stack has several feeds (${named(feeds)}): pass --feed ID`);
}
