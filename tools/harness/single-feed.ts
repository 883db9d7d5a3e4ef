// One feed polled in this process by the fleet's poller (functions/poller/build-poller.ts): what local mode,
// the integration harness and the bench used to do with a per-feed poller. The feed's row is written from a
// poller environment of before the fleet (FEED_ID, PARTNER_TOKEN_PARAMETER, VENDOR_IDS, PAGE_SIZE,
// MIN_AGE_MINUTES, FEED_ENABLED: what a deployed per-feed poller still carries), and each call runs the
// poller on a batch of that one feed, as the dispatcher would send it.

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import { DEFAULTS } from '../../functions/core/config/settings.js';
import type { BatchEvent } from '../../functions/core/fleet/dispatch.js';
import { type FeedConfig, parseFeedConfig } from '../../functions/core/fleet/feed-config.js';
import {
  buildPoller,
  type FeedRunResult,
  type PollerClients,
  type PollerOverrides,
  PollRunFailedError,
} from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';

/** A feed's id, configuration and state from a per-feed poller environment (its checks: the registry's). */
export function feedOfEnvironment(env: Readonly<Record<string, string | undefined>>): {
  feedId: string;
  config: FeedConfig;
  state: 'enabled' | 'paused';
} {
  const list = env.VENDOR_IDS?.trim();
  const config = parseFeedConfig({
    tokenParameterName: env.PARTNER_TOKEN_PARAMETER,
    vendorIds: list ? list.split(',').map((id) => id.trim()) : undefined,
    minAgeMinutes: env.MIN_AGE_MINUTES ? Number(env.MIN_AGE_MINUTES) : undefined,
    pageSize: env.PAGE_SIZE ? Number(env.PAGE_SIZE) : undefined,
  });
  return {
    feedId: env.FEED_ID?.trim() || DEFAULTS.feedId,
    config,
    state: env.FEED_ENABLED?.trim() === 'false' ? 'paused' : 'enabled',
  };
}

/** Writes the feed's row: created when missing, its configuration and state replaced when present. */
export async function writeFeedRow(
  dynamo: DynamoDBClient,
  tableName: string,
  feed: ReturnType<typeof feedOfEnvironment>,
  now = Date.now(),
): Promise<void> {
  const registry = new DynamoFeedRegistry(dynamo, tableName);
  if (await registry.register(feed.feedId, feed.config, feed.state, now)) return;
  await registry.update(
    feed.feedId,
    'SET #config = :config, #state = :state',
    'attribute_exists(#config)',
    { ':config': feed.config, ':state': feed.state },
    `feed "${feed.feedId}" has no row`,
  );
}

/** The batch event of one feed, as the dispatcher sends it (no dispatcher to ask: the caller schedules). */
export function singleFeedBatch(feedId: string, sliceMs: number, now = Date.now()): BatchEvent {
  return { batch: { batchId: `local-${now.toString(36)}`, dispatchedAt: now, sliceMs, feedIds: [feedId] } };
}

export interface SingleFeedPoller {
  feedId: string;
  /** Writes the feed's row (once, before the first run; again to take a changed environment). */
  register(): Promise<void>;
  /** One run of the feed; a failed run (a 401, a lost lease, an error) throws PollRunFailedError. */
  poll(context: Context): Promise<FeedRunResult>;
}

/**
 * The poller for the feed of `env` (a per-feed poller environment: the deployment's variables and the
 * feed's), its slice the whole invocation. The row is written at the first run.
 */
export function singleFeedPoller(
  clients: PollerClients,
  env: Record<string, string>,
  overrides: PollerOverrides = {},
): SingleFeedPoller {
  const config = loadPollerConfig(env);
  const feed = feedOfEnvironment(env);
  const handler = buildPoller(clients, config, overrides);
  let registered: Promise<void> | undefined;
  const register = () => {
    registered = writeFeedRow(clients.dynamo, config.cursorTableName, feed);
    return registered;
  };
  return {
    feedId: feed.feedId,
    register,
    async poll(context) {
      await (registered ?? register());
      const event = singleFeedBatch(feed.feedId, context.getRemainingTimeInMillis());
      const result = await handler(event, context);
      const [run] = result.feeds;
      if (run === undefined) throw new Error(`the poller ran no feed for ${feed.feedId}`);
      return run;
    },
  };
}

/** The one feed's run of a failed batch (PollRunFailedError), for callers that report it. */
export function failedRunOf(error: unknown): FeedRunResult | undefined {
  return error instanceof PollRunFailedError ? error.result.feeds[0] : undefined;
}
