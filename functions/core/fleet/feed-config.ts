// A feed's registry row (infra/FLEET.md, "The registry"): its configuration and its state, held on the
// feed's item in the cursor table beside the cursor and the lease. Every value is checked by the settings'
// own rules (config/settings.ts RULES), as synth and cold start check them; an error names its key. Ops
// `feeds add|set` and the dispatcher's initial set are read through parseFeedConfig.
import * as z from 'zod/mini';
import { DEFAULTS, matching, oneOf, RULES } from '../config/settings.js';

export const FEED_STATES = ['enabled', 'paused', 'stopped', 'removed'] as const;
/** enabled: polled at its interval; paused, stopped: kept, not polled; removed: a tombstone (cursor kept). */
export type FeedState = (typeof FEED_STATES)[number];

/** The partner's query string must stay inside an 8 KiB request line: 100 ids of 19 digits are about 3 KiB. */
export const MAX_ORDER_IDS = 100;

const orderIds = z
  .array(
    z.union([z.string(), z.number(), z.bigint()], { error: 'must be a list of order ids' }).check(
      z.refine((id) => /^\d{1,19}$/.test(String(id)) && BigInt(id) < 2n ** 63n, {
        error: (issue) => `has an invalid order id "${String(issue.input)}" (an int64 of 0 or more)`,
      }),
    ),
  )
  .check(
    z.minLength(1, { error: 'must list at least one order id when set' }),
    z.maxLength(MAX_ORDER_IDS, { error: `must list at most ${MAX_ORDER_IDS} order ids` }),
    z.refine((ids) => new Set(ids.map(String)).size === ids.length, { error: 'must not repeat an order id' }),
  );

/** ISO 8601 with an offset (a local time is ambiguous), as the partner's `fromTimestamp` takes it; kept in UTC. */
const fromTimestamp = z.pipe(
  matching(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i,
    'an ISO 8601 date-time with an offset, e.g. 2026-01-01T00:00:00Z',
  ),
  z.transform((text, context) => {
    const ms = Date.parse(text.toUpperCase());
    // Date.parse rolls 2026-02-30 over into March: the date and time must be what they say.
    const [y, mo, d, h, mi] = text.split(/[-T:]/).map(Number) as number[];
    const day = new Date(Date.UTC(y ?? 0, (mo ?? 0) - 1, d ?? 0));
    if (Number.isNaN(ms) || day.getUTCDate() !== d || (h ?? 0) > 23 || (mi ?? 0) > 59) {
      context.issues.push({ code: 'custom', message: 'must be a valid date-time', input: text });
      return z.NEVER;
    }
    return new Date(ms).toISOString();
  }),
);

/** The rules of a feed's configuration, by key: the settings' own where one exists. */
export const FEED_CONFIG_RULES = {
  tokenParameterName: RULES.tokenParameterName,
  partnerBaseUrl: RULES.partnerBaseUrl,
  vendorIds: RULES.vendorIds,
  purpose: oneOf(['stream', 'reconcile']),
  orderIds,
  fromTimestamp,
  minAgeMinutes: RULES.minAgeMinutes,
  pageSize: RULES.pageSize,
  scheduleMinutes: RULES.scheduleMinutes,
};
export type FeedConfigKey = keyof typeof FEED_CONFIG_RULES;
const KEYS = Object.keys(FEED_CONFIG_RULES) as FeedConfigKey[];

/** A feed's stored configuration: every default applied, so a row never depends on a deployment's value. */
export type FeedConfig = { [K in FeedConfigKey]?: z.output<(typeof FEED_CONFIG_RULES)[K]> } & {
  tokenParameterName: string;
  purpose: 'stream' | 'reconcile';
  pageSize: number;
  scheduleMinutes: number;
  orderIds?: string[];
};

const CONFIG_DEFAULTS = {
  purpose: 'stream',
  pageSize: DEFAULTS.pageSize,
  scheduleMinutes: DEFAULTS.scheduleMinutes,
} as const;

export class FeedConfigError extends Error {
  override readonly name = 'FeedConfigError';
  readonly code = 'ERR_FEED_CONFIG';
  constructor(readonly issues: ReadonlyArray<{ key: string; message: string }>) {
    super(issues.map(({ key, message }) => `${key}: ${message}`).join('; '));
  }
}

/**
 * A whole configuration, checked key by key (every issue, each naming its key, `prefix` before it), with
 * defaults applied. `null` or `undefined` leaves a key unset (its default, if it has one).
 */
export function parseFeedConfig(input: unknown, prefix = ''): FeedConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new FeedConfigError([{ key: prefix || 'config', message: 'must be an object' }]);
  }
  const given = input as Record<string, unknown>;
  const issues: Array<{ key: string; message: string }> = [];
  for (const key of Object.keys(given)) {
    if (!(KEYS as string[]).includes(key))
      issues.push({ key: prefix + key, message: `unknown key (accepted: ${KEYS.join(', ')})` });
  }
  const config: Record<string, unknown> = { ...CONFIG_DEFAULTS };
  for (const key of KEYS) {
    const value = given[key];
    if (value === undefined || value === null) continue;
    const result = z.safeParse(FEED_CONFIG_RULES[key] as z.ZodMiniType, value);
    if (result.success)
      config[key] = key === 'orderIds' ? (result.data as unknown[]).map(String) : result.data;
    else issues.push({ key: prefix + key, message: result.error.issues[0]?.message ?? 'is invalid' });
  }
  if (
    config.tokenParameterName === undefined &&
    !issues.some(({ key }) => key === `${prefix}tokenParameterName`)
  )
    issues.push({ key: `${prefix}tokenParameterName`, message: 'is required' });
  // A stream filtered by order id would move its cursor past every other order in its range: only a reconcile
  // feed (a finite re-read of chosen orders) may set it.
  if (config.orderIds !== undefined && config.purpose !== 'reconcile')
    issues.push({ key: `${prefix}orderIds`, message: 'is only for a feed whose purpose is "reconcile"' });
  if (issues.length > 0) throw new FeedConfigError(issues);
  return config as FeedConfig;
}

/** `feeds set`: the stored configuration with `changes` applied (`null` unsets a key), checked whole. */
export function changedFeedConfig(
  stored: FeedConfig,
  changes: Readonly<Record<string, unknown>>,
): FeedConfig {
  const merged: Record<string, unknown> = { ...stored };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return parseFeedConfig(merged);
}

/**
 * The deployment's initial set of feeds (the construct's `feeds`), as the dispatcher's environment carries it:
 * the keys every feed shares once, then each feed's own. Written at synth, read at cold start; rows are
 * created from it when missing, never overwritten (infra/FLEET.md, "The initial set").
 */
export interface InitialFeed {
  feedId: string;
  config: FeedConfig;
  state: Extract<FeedState, 'enabled' | 'paused'>;
}

interface InitialFeedsText {
  shared: Record<string, unknown>;
  feeds: Array<{ id: string; paused?: true } & Record<string, unknown>>;
}

export function initialFeedsText(shared: Record<string, unknown>, feeds: InitialFeedsText['feeds']): string {
  return JSON.stringify({ shared, feeds });
}

/** The initial set from its text; an error names the feed and key (`feeds[1].vendorIds: …`). */
export function parseInitialFeeds(text: string): InitialFeed[] {
  let parsed: InitialFeedsText;
  try {
    parsed = JSON.parse(text) as InitialFeedsText;
  } catch {
    throw new FeedConfigError([{ key: 'feeds', message: 'is not JSON' }]);
  }
  const issues: Array<{ key: string; message: string }> = [];
  const feeds: InitialFeed[] = [];
  const ids = new Set<string>();
  (Array.isArray(parsed?.feeds) ? parsed.feeds : []).forEach(({ id, paused, ...own }, index) => {
    const at = `feeds[${index}].`;
    const feedId = z.safeParse(RULES.feedId, id);
    if (!feedId.success) issues.push({ key: `${at}id`, message: feedId.error.issues[0]?.message ?? '' });
    else if (ids.has(feedId.data)) issues.push({ key: `${at}id`, message: `repeats "${feedId.data}"` });
    else ids.add(feedId.data);
    try {
      const config = parseFeedConfig({ ...parsed.shared, ...own }, at);
      if (feedId.success) feeds.push({ feedId: feedId.data, config, state: paused ? 'paused' : 'enabled' });
    } catch (error) {
      if (!(error instanceof FeedConfigError)) throw error;
      issues.push(...error.issues);
    }
  });
  if (issues.length > 0) throw new FeedConfigError(issues);
  return feeds;
}
