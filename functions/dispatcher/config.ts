import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { ConfigError, DISPATCHER_ENVIRONMENT, type Env, readEnvironment } from '../core/config/settings.js';
import { DISPATCH_DEFAULTS, type DispatchSettings } from '../core/fleet/dispatch.js';
import { FeedConfigError, type InitialFeed, parseInitialFeeds } from '../core/fleet/feed-config.js';

export interface DispatcherConfig {
  cursorTableName: string;
  pollerFunctionName: string;
  /** The deployment's initial set: the rows the dispatcher creates when missing (never overwrites one). */
  initialFeeds: InitialFeed[];
  dispatch: DispatchSettings;
  /** The share of the account's unreserved concurrency the pollers may take at most, below maxConcurrentPollers. */
  accountConcurrencyShare: number;
}

/** The cold start's configuration: the environment, and the initial set from the object it names. */
export async function readDispatcherConfig(env: Env, s3: S3Client): Promise<DispatcherConfig> {
  return loadDispatcherConfig(env, await readInitialFeeds(env, s3));
}

/** The initial set's text, from the object INITIAL_FEEDS_OBJECT names (the stack's asset); unset: none. */
export async function readInitialFeeds(env: Env, s3: S3Client): Promise<string | undefined> {
  const url = readEnvironment(DISPATCHER_ENVIRONMENT, env).INITIAL_FEEDS_OBJECT;
  if (url === undefined) return undefined;
  const [, bucket, key] = /^s3:\/\/([^/]+)\/(.+)$/.exec(url) ?? [];
  try {
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return (await object.Body?.transformToString('utf8')) ?? '';
  } catch (error) {
    const reason = error instanceof Error ? error.name : String(error);
    throw new ConfigError(`configuration error: INITIAL_FEEDS_OBJECT cannot be read (${reason}): ${url}`, {
      cause: error,
    });
  }
}

/** The configuration from the environment and the initial set's text (readInitialFeeds; undefined: none). */
export function loadDispatcherConfig(env: Env, initialFeedsText?: string): DispatcherConfig {
  const read = readEnvironment(DISPATCHER_ENVIRONMENT, env);
  let initialFeeds: InitialFeed[] = [];
  try {
    if (initialFeedsText !== undefined) initialFeeds = parseInitialFeeds(initialFeedsText);
  } catch (error) {
    if (!(error instanceof FeedConfigError)) throw error;
    throw new ConfigError(`configuration error: INITIAL_FEEDS_OBJECT ${error.message}`);
  }
  return {
    cursorTableName: read.CURSOR_TABLE_NAME,
    pollerFunctionName: read.POLLER_FUNCTION_NAME,
    initialFeeds,
    dispatch: {
      ...DISPATCH_DEFAULTS,
      maxConcurrentPollers: read.MAX_CONCURRENT_POLLERS,
      staleAfterMs: read.STALE_AFTER_MINUTES * 60_000,
    },
    accountConcurrencyShare: 0.3,
  };
}
