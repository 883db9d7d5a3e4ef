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

export function loadDispatcherConfig(env: Env): DispatcherConfig {
  const read = readEnvironment(DISPATCHER_ENVIRONMENT, env);
  let initialFeeds: InitialFeed[] = [];
  try {
    if (read.INITIAL_FEEDS !== undefined) initialFeeds = parseInitialFeeds(read.INITIAL_FEEDS);
  } catch (error) {
    if (!(error instanceof FeedConfigError)) throw error;
    throw new ConfigError(`configuration error: INITIAL_FEEDS ${error.message}`);
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
