// Deployment configuration: read from CDK context, checked at synth so a bad value fails with its key's name.
//
// Sources, later ones winning:
//   1. cdk.json  "context": { "orderFeed": { "partnerBaseUrl": "https://…", … } }
//   2. -c orderFeed='{"partnerBaseUrl":"https://…",…}'        (JSON; merged key by key over cdk.json's)
//   3. -c orderFeed.pageSize=50                                (one key; lists as JSON or comma-separated)
// Every key is listed in SETTINGS below: the settings the functions read take their rule and default from
// functions/core/config/settings.ts (RULES, DEFAULTS), the deployment-only ones are declared here.
// Unknown keys, in the object or dotted, are rejected so a typo is not silently ignored.
// `feeds` (or the top-level feed keys, for one feed) is the deployment's initial set of feeds: the dispatcher
// registers the rows it lacks (infra/README.md, "A fleet of feeds"); the stack's resources do not depend on it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { checked, DEFAULTS, integer, matching, oneOf, RULES } from '../functions/core/config/settings.js';
import { initialFeedsText } from '../functions/core/fleet/feed-config.js';
import { LONGEST_GENERATED } from './constructs/lambda-environment.js';
import { parseRateExpression } from './schedule-rate.js';

export const CONTEXT_KEY = 'orderFeed';

export interface ConfigIssue {
  /** The context key at fault, e.g. `orderFeed.pageSize`. */
  readonly key: string;
  readonly message: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(
      `Invalid deployment configuration (CDK context "${CONTEXT_KEY}"):\n${issues
        .map((issue) => `  - ${issue.key}: ${issue.message}`)
        .join('\n')}`,
    );
    this.issues = issues;
  }
}

/** Anything with CDK's `tryGetContext` (an `App`'s or a stack's `node`); `getAllContext` finds typos. */
export interface ContextReader {
  tryGetContext(key: string): unknown;
  getAllContext?(): Record<string, unknown>;
}

// CloudWatch Logs accepts only these retention periods (days).
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

/**
 * One key of `orderFeed`: its rule; its default (checked by the rule like a given value) or `required`
 * (neither: unset means "not used"); `redact`: a rejected value is never echoed (it may be a secret);
 * `spelt`: how `-c orderFeed.key=…` spells it as text.
 */
interface Setting {
  readonly rule: z.ZodMiniType;
  readonly default?: unknown;
  readonly required?: true;
  readonly redact?: true;
  readonly spelt?: 'integer' | 'list';
}

/** Every accepted key of `orderFeed`, in the README's order. */
export const SETTINGS = {
  /** Partner API base (https; http only for loopback hosts), without a trailing slash. */
  partnerBaseUrl: { rule: RULES.partnerBaseUrl, required: true, redact: true },
  /** Name of an existing SSM SecureString parameter holding the partner bearer token (never the token). */
  tokenParameterName: { rule: RULES.tokenParameterName, required: true, redact: true },
  /** Customer-managed KMS key of the token parameter; unset: the AWS-managed `alias/aws/ssm` key. */
  tokenKmsKeyArn: {
    rule: matching(/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/, 'a KMS key ARN'),
  },
  /**
   * The SSM path under which the token parameters of feeds added at runtime live: the poller reads (and the
   * dispatcher checks the version of) any parameter under it, and only the initial set's parameters besides.
   */
  tokenParameterPath: { rule: checked(checkParameterPath), default: '/order-feed-ingester/' },
  /** The single feed's id: key of its registry row, `source.feedId` of its messages. */
  feedId: { rule: RULES.feedId, default: DEFAULTS.feedId },
  /**
   * How often a feed is polled: a rate expression or a number of minutes (the registry row's scheduleMinutes).
   * One minute: p99 freshness about 61 s; five minutes misses the 90 s target (infra/README.md).
   */
  schedule: { rule: z.pipe(checked(scheduleMinutes), RULES.scheduleMinutes), default: 'rate(1 minute)' },
  pageSize: { rule: RULES.pageSize, default: DEFAULTS.pageSize, spelt: 'integer' },
  /** Pages one run fetches at most; undefined: no cap (a run ends when caught up or out of time). */
  maxPagesPerRun: { rule: RULES.maxPagesPerRun, spelt: 'integer' },
  /** The largest page body the poller reads (bytes); a larger page is asked again with a smaller page size. */
  maxPageBodyBytes: { rule: RULES.maxPageBodyBytes, default: DEFAULTS.maxPageBodyBytes, spelt: 'integer' },
  /**
   * Poller invocations the dispatcher keeps running at once: the ingester's own share of the account's
   * concurrency (the dispatcher also stays below 30 % of what the account leaves unreserved).
   */
  maxConcurrentPollers: {
    rule: RULES.maxConcurrentPollers,
    default: DEFAULTS.maxConcurrentPollers,
    spelt: 'integer',
  },
  minAgeMinutes: { rule: RULES.minAgeMinutes, spelt: 'integer' },
  vendorIds: { rule: RULES.vendorIds, spelt: 'list' },
  /** False: the feed is registered paused (not polled; its cursor is kept). */
  enabled: { rule: RULES.enabled, default: DEFAULTS.enabled },
  arrayQueryEncoding: { rule: RULES.arrayQueryEncoding, default: DEFAULTS.arrayQueryEncoding },
  cursorRecoveryLookbackMinutes: { rule: RULES.cursorRecoveryLookbackMinutes, spelt: 'integer' },
  /** The partner's published limit per token (requests/s): caps the token's shared request budget. */
  partnerRequestsPerSecond: { rule: RULES.partnerRequestsPerSecond, spelt: 'integer' },
  /** One SQS queue (plus DLQ) each; the poller sends every order version to all of them. */
  downstreamSubscribers: {
    rule: z
      .array(
        // Lower-case letter first, then lower-case letters and digits, single "-" between them, at most 40.
        z.string().check(
          z.regex(/^(?=.{1,40}$)[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/, {
            error: (issue) =>
              `has an invalid subscriber name "${String(issue.input)}" (lower-case letter first, then lower-case letters, digits and single "-", at most 40)`,
          }),
        ),
      )
      .check(
        // Construct ids and output names use the PascalCase form, which must stay unique too.
        z.refine(
          (names: string[]) =>
            new Set(names.map((name) => pascalCase(name).toLowerCase())).size === names.length,
          { error: 'must not repeat a subscriber name (names differing only by "-" also collide)' },
        ),
      ),
    default: [] as string[],
    spelt: 'list',
  },
  /**
   * How long a subscriber queue keeps a message nobody received: SQS allows 60 s to 14 days
   * (MessageRetentionPeriod), and deletes a message at the end of it whether or not anyone read it.
   */
  subscriberRetentionDays: { rule: integer(1, 14), default: 14, spelt: 'integer' },
  /**
   * Alarm when a subscriber queue's oldest message is older than this; unset: half the retention (7 days at the
   * default), below its retention in any case.
   */
  subscriberMaxAgeHours: { rule: integer(1, 335), spelt: 'integer' },
  /** Receives before a message moves to its queue's dead-letter queue. */
  maxReceiveCount: { rule: integer(1, 1000), default: 5, spelt: 'integer' },
  consumerBatchSize: { rule: integer(1, 10_000), default: 10, spelt: 'integer' },
  consumerMaxBatchingWindowSeconds: { rule: integer(0, 300), default: 0, spelt: 'integer' },
  /**
   * The SQS event source allows 2 to 1000 (ScalingConfig.MaximumConcurrency). 50 keeps the consumer ahead of
   * the pollers' own budget (maxConcurrentPollers, 10) draining at once, whatever the fleet's size: one
   * invocation applies ~125 versions/s, one feed draining publishes ~490. Raise it with maxConcurrentPollers.
   */
  consumerMaxConcurrency: { rule: integer(2, 1000), default: 50, spelt: 'integer' },
  /**
   * A feed not caught up for this long is stale (the fleet gauge StaleFeeds and its alarm); at least 2, as it
   * must exceed the schedule interval.
   */
  alarmLagMinutes: { rule: RULES.alarmLagMinutes, default: DEFAULTS.alarmLagMinutes, spelt: 'integer' },
  /** Alarm when the oldest message on the orders queue is older than this. */
  alarmQueueAgeMinutes: { rule: integer(1, 20_160), default: 15, spelt: 'integer' },
  /** An existing SNS topic for ALARM and OK notifications; unset: the stack creates its own. */
  alarmTopicArn: {
    rule: matching(
      /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/,
      'an SNS topic ARN',
    ),
  },
  /** An e-mail address subscribed to the alarm topic (the stack's own, or `alarmTopicArn`). */
  alarmEmail: {
    rule: matching(/^(?=.{3,254}$)[^\s@"',;<>()[\]]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/, 'an e-mail address'),
    redact: true,
  },
  metricsNamespace: { rule: RULES.metricsNamespace, default: DEFAULTS.metricsNamespace },
  logRetentionDays: {
    rule: z.int({ error: 'must be an integer from 1 to 3653' }).check(
      z.refine((days: number) => LOG_RETENTION_DAYS.includes(days), {
        error: `must be one of ${LOG_RETENTION_DAYS.join(', ')}`,
      }),
    ),
    default: 30,
    spelt: 'integer',
  },
  /** What happens to tables, bucket, queues and log groups when the stack is deleted. */
  removalPolicy: { rule: oneOf(['retain', 'destroy']), default: 'retain' },
  /** Days a quarantined record (raw partner data, customer data included) is kept. */
  quarantineRetentionDays: { rule: integer(1, 3650), default: 90, spelt: 'integer' },
  /** Keep every order version once per (orderId, version) in the history table (HistoryTable). */
  history: { rule: RULES.enabled, default: DEFAULTS.history },
  /** Days a history entry is kept (DynamoDB TTL); 0: forever. */
  historyRetentionDays: {
    rule: RULES.historyRetentionDays,
    default: DEFAULTS.historyRetentionDays,
    spelt: 'integer',
  },
  /**
   * The initial set of feeds: checked entry by entry in parseFeeds, so an error names the feed and key at
   * fault. Any number, as far as the dispatcher's environment holds them; more are added at runtime.
   */
  feeds: { rule: z.unknown() },
} as const satisfies Record<string, Setting>;

/** Keys that existed once and mean nothing now: named with what replaced them, rather than as unknown. */
const REMOVED_KEYS: Readonly<Record<string, string>> = {
  maxContinuations:
    'is no longer a setting: a poller no longer invokes itself, the dispatcher gives a feed with a backlog its next turn (remove the key)',
};

export type ConfigKey = keyof typeof SETTINGS;
const KEY_NAMES = Object.keys(SETTINGS) as ConfigKey[];
/** Each key's checked value: undefined only for an optional key left unset. */
type Values = {
  readonly [K in ConfigKey]:
    | z.output<(typeof SETTINGS)[K]['rule']>
    | ((typeof SETTINGS)[K] extends { default: unknown } | { required: true } ? never : undefined);
};

/** One feed of the initial set: its registry row's configuration (`schedule` in minutes) and whether it is on. */
export type FeedConfig = { readonly id: string } & Pick<Values, FeedKey>;

export type OrderFeedConfig = Omit<
  Values,
  FeedKey | 'partnerBaseUrl' | 'feedId' | 'feeds' | 'subscriberMaxAgeHours'
> & {
  /** The deployment's partner base URL: the poller's default for every feed whose row names none. */
  readonly partnerBaseUrl: string;
  /**
   * The initial set of feeds: the top-level feed keys alone make one feed (`feedsListed` false);
   * `orderFeed.feeds` lists any number, the top-level keys being their defaults.
   */
  readonly feeds: readonly FeedConfig[];
  /** True when `orderFeed.feeds` was given. */
  readonly feedsListed: boolean;
  /** As given, or by default half the subscriber queues' retention. */
  readonly subscriberMaxAgeHours: number;
};

/** Every accepted key with its default (undefined: optional or required). */
export const KEYS = Object.fromEntries(KEY_NAMES.map((key) => [key, (SETTINGS[key] as Setting).default])) as {
  readonly [K in ConfigKey]: (typeof SETTINGS)[K] extends { default: infer D } ? D : undefined;
};

/** The keys a feed of `orderFeed.feeds` may set for itself (besides its `id`). */
export const FEED_KEYS = [
  'partnerBaseUrl',
  'tokenParameterName',
  'tokenKmsKeyArn',
  'vendorIds',
  'minAgeMinutes',
  'pageSize',
  'schedule',
  'enabled',
] as const;
type FeedKey = (typeof FEED_KEYS)[number];

/**
 * The share of a 4 KB Lambda environment left to the variable that grows with the configuration:
 * DOWNSTREAM_QUEUE_URLS in the poller's (the others take at most about
 * 1.2 KB together, every generated name at its longest). A first check that names the configuration key at
 * fault; IngesterFunction checks each whole environment at synth (constructs/lambda-environment.ts).
 */
export const MAX_GROWING_VARIABLE_BYTES = 2800;

/** The most DOWNSTREAM_QUEUE_URLS can hold for these subscribers: `"name":"url",` each, URLs at their longest. */
export function downstreamQueueUrlsCharacters(subscribers: readonly string[]): number {
  return subscribers.reduce((total, name) => total + name.length + 6 + LONGEST_GENERATED.queueUrl, 0);
}

/**
 * The raw `orderFeed` configuration from CDK context (the whole object, then `orderFeed.<key>` overrides),
 * not yet validated: the props of the OrderFeedIngester construct. The CDK CLI gives a `-c orderFeed='{…}'`
 * in place of cdk.json's object: a JSON string is therefore laid key by key over `projectObject` (cdk.json's
 * `orderFeed`, see projectContextObject), so it overrides what it names and keeps the rest. Every dotted
 * `orderFeed.<key>` is copied, known or not, so parseConfig rejects a mistyped one like an object key.
 */
export function readContext(
  context: ContextReader,
  projectObject?: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  const whole = context.tryGetContext(CONTEXT_KEY);
  if (whole !== undefined) {
    const object = typeof whole === 'string' ? parseJson(whole) : whole;
    if (object === undefined || typeof object !== 'object' || object === null || Array.isArray(object)) {
      throw new ConfigError([{ key: CONTEXT_KEY, message: 'must be an object (or a JSON object string)' }]);
    }
    if (typeof whole === 'string' && projectObject !== undefined) Object.assign(raw, projectObject);
    Object.assign(raw, object);
  }
  const dotted = context.getAllContext
    ? Object.keys(context.getAllContext()).filter((key) => key.startsWith(`${CONTEXT_KEY}.`))
    : KEY_NAMES.map(qualified);
  for (const name of dotted) {
    const override = context.tryGetContext(name);
    if (override !== undefined) raw[name.slice(CONTEXT_KEY.length + 1)] = override;
  }
  return raw;
}

/**
 * cdk.json's `context.orderFeed` object in `directory` (where the CDK CLI runs the app), for readContext
 * to merge a `-c orderFeed='{…}'` over; undefined without a cdk.json or such an object.
 */
export function projectContextObject(directory = process.cwd()): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(join(directory, 'cdk.json'), 'utf8');
  } catch {
    return undefined;
  }
  const object = (parseJson(text) as { context?: Record<string, unknown> } | undefined)?.context?.[
    CONTEXT_KEY
  ];
  return typeof object === 'object' && object !== null && !Array.isArray(object)
    ? (object as Record<string, unknown>)
    : undefined;
}

/** Validates a raw configuration object (values may be JSON-typed or the strings `-c` passes). */
export function parseConfig(raw: Readonly<Record<string, unknown>>): OrderFeedConfig {
  const issues: ConfigIssue[] = [];
  for (const key of Object.keys(raw)) {
    if (key in SETTINGS) continue;
    const removed = REMOVED_KEYS[key];
    const nearest = nearestName(key, KEY_NAMES);
    issues.push({
      key: qualified(key),
      message:
        removed ??
        `unknown key (${nearest === undefined ? `accepted: ${KEY_NAMES.join(', ')}` : `did you mean ${qualified(nearest)}?`})`,
    });
  }
  const feedsListed = !isUnset(raw.feeds);
  const values: Partial<Record<ConfigKey, unknown>> = {};
  for (const key of KEY_NAMES) {
    const read = readKey(key, raw[key]);
    if (read.ok) values[key] = read.value;
    // With a list of feeds, a feed key unset at the top level is only a missing default: each feed that
    // needs it is told so (parseFeeds).
    else if (!(feedsListed && isUnset(raw[key]) && (FEED_KEYS as readonly string[]).includes(key))) {
      issues.push({ key: qualified(key), message: read.message });
    }
  }
  // Each failure above is an issue; without issues every required or defaulted key has its value.
  const config = values as Values;

  // Rules across keys.
  if (config.consumerBatchSize > 10 && config.consumerMaxBatchingWindowSeconds === 0) {
    issues.push({
      key: qualified('consumerBatchSize'),
      message: 'above 10 needs consumerMaxBatchingWindowSeconds of at least 1 (an SQS event source rule)',
    });
  }
  const retentionHours = (config.subscriberRetentionDays ?? 14) * 24;
  if (config.subscriberMaxAgeHours !== undefined && config.subscriberMaxAgeHours >= retentionHours) {
    issues.push({
      key: qualified('subscriberMaxAgeHours'),
      message: `must be below the subscriber queues' retention (subscriberRetentionDays: ${retentionHours} hours), or SQS deletes the messages before it rings`,
    });
  }
  const feeds = feedsListed
    ? parseFeeds(raw.feeds, config, !isUnset(raw.feedId), issues)
    : [feedOf(config.feedId, {}, config, '', issues)];
  const longest = Math.max(0, ...feeds.map((feed) => feed.schedule ?? 0));
  if (config.alarmLagMinutes !== undefined && longest > 0 && config.alarmLagMinutes <= longest) {
    const which = feedsListed ? ` of feed "${feeds.find((feed) => feed.schedule === longest)?.id}"` : '';
    issues.push({
      key: qualified('alarmLagMinutes'),
      message: `must exceed the schedule interval${which} (${longest} minutes), or it alarms between runs`,
    });
  }
  // Lambda refuses a function whose environment exceeds 4 KB: say so at synth, not at deploy time, naming the
  // key. Every poller carries the downstream queue URLs (the initial set travels as a file asset, any size).
  const subscribers = config.downstreamSubscribers ?? [];
  const queueUrls = downstreamQueueUrlsCharacters(subscribers);
  if (queueUrls > MAX_GROWING_VARIABLE_BYTES) {
    issues.push({
      key: qualified('downstreamSubscribers'),
      message: `has ${subscribers.length} subscribers, whose queue URLs take up to ${queueUrls} characters of the poller's DOWNSTREAM_QUEUE_URLS; at most ${MAX_GROWING_VARIABLE_BYTES} fit in Lambda's 4 KB environment (give subscribers shorter names, or fan out from one queue with SNS or EventBridge)`,
    });
  }
  const partnerBaseUrl = config.partnerBaseUrl ?? feeds[0]?.partnerBaseUrl;

  if (issues.length > 0) throw new ConfigError(issues);
  const {
    feeds: _listed,
    feedId: _feedId,
    partnerBaseUrl: _url,
    tokenParameterName: _token,
    tokenKmsKeyArn: _key,
    vendorIds: _vendors,
    minAgeMinutes: _minAge,
    pageSize: _pageSize,
    schedule: _schedule,
    enabled: _enabled,
    ...rest
  } = config;
  return {
    ...rest,
    partnerBaseUrl: partnerBaseUrl as string,
    feeds,
    feedsListed,
    subscriberMaxAgeHours: config.subscriberMaxAgeHours ?? retentionHours / 2,
  };
}

/**
 * The initial set as the dispatcher's asset carries it (initialFeedsText, read back at cold start by
 * parseInitialFeeds): each value every feed shares once, each feed's own beside its id; a value the registry
 * row takes by default (page size 100, a 1-minute interval, the deployment's partner URL) is left out. Only
 * what a registry row holds: the KMS key is the roles' business, `enabled: false` makes the row paused.
 */
export function initialFeedsTextOf(feeds: readonly FeedConfig[], partnerBaseUrl: string): string {
  const rows = feeds.map((feed) => {
    const row: Record<string, unknown> = {
      tokenParameterName: feed.tokenParameterName,
      partnerBaseUrl: feed.partnerBaseUrl === partnerBaseUrl ? undefined : feed.partnerBaseUrl,
      vendorIds: feed.vendorIds,
      minAgeMinutes: feed.minAgeMinutes,
      pageSize: feed.pageSize === DEFAULTS.pageSize ? undefined : feed.pageSize,
      scheduleMinutes: feed.schedule === DEFAULTS.scheduleMinutes ? undefined : feed.schedule,
    };
    return Object.fromEntries(Object.entries(row).filter(([, value]) => value !== undefined));
  });
  const shared: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rows[0] ?? {})) {
    const text = JSON.stringify(value);
    if (rows.every((row) => JSON.stringify(row[key]) === text)) shared[key] = value;
  }
  return initialFeedsText(
    shared,
    feeds.map((feed, index) => ({
      id: feed.id,
      ...(feed.enabled ? {} : { paused: true as const }),
      ...Object.fromEntries(Object.entries(rows[index] ?? {}).filter(([key]) => !(key in shared))),
    })),
  );
}

/** Whether an SSM parameter is under `path` (a plain name, without a leading "/", never is). */
export function isUnderParameterPath(parameterName: string, path: string): boolean {
  return parameterName.startsWith(path);
}

/**
 * One feed: the keys `fields` sets (checked, issues under `where`), the top-level values for the others.
 * Without `orderFeed.feeds` the one feed is the top-level keys alone.
 */
function feedOf(
  id: string,
  fields: Readonly<Record<string, unknown>>,
  top: Values,
  where: string,
  issues: ConfigIssue[],
): FeedConfig {
  const value = <K extends FeedKey>(key: K): Values[K] => {
    if (isUnset(fields[key])) return top[key];
    const read = readKey(key, fields[key]);
    if (!read.ok) issues.push({ key: `${where}.${key}`, message: read.message });
    return read.value as Values[K];
  };
  return {
    id,
    partnerBaseUrl: value('partnerBaseUrl'),
    tokenParameterName: value('tokenParameterName'),
    tokenKmsKeyArn: value('tokenKmsKeyArn'),
    vendorIds: value('vendorIds'),
    minAgeMinutes: value('minAgeMinutes'),
    pageSize: value('pageSize'),
    schedule: value('schedule'),
    enabled: value('enabled'),
  };
}

/**
 * `orderFeed.feeds`: a list (or its JSON text) of feed objects, at least one, each with a distinct `id` and
 * any of FEED_KEYS; a key a feed leaves out takes the top-level value. Issues name the feed by position.
 */
function parseFeeds(given: unknown, top: Values, feedIdGiven: boolean, issues: ConfigIssue[]): FeedConfig[] {
  const at = qualified('feeds');
  if (feedIdGiven) {
    issues.push({ key: qualified('feedId'), message: 'is not used with feeds: give each feed its "id"' });
  }
  const list = typeof given === 'string' ? parseJson(given) : given;
  if (!Array.isArray(list) || list.length === 0) {
    issues.push({
      key: at,
      message:
        'must be a list of at least one feed object (a JSON array), e.g. [{"id":"eu","vendorIds":["v-1"]}]',
    });
    return [];
  }
  const feeds: FeedConfig[] = [];
  list.forEach((entry: unknown, index) => {
    const where = `${at}[${index}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      issues.push({ key: where, message: 'must be an object with an "id"' });
      return;
    }
    const fields = entry as Record<string, unknown>;
    const before = issues.length;
    for (const key of Object.keys(fields)) {
      if (key !== 'id' && !(FEED_KEYS as readonly string[]).includes(key)) {
        const nearest = nearestName(key, ['id', ...FEED_KEYS]);
        issues.push({
          key: `${where}.${key}`,
          message: `unknown feed key (${nearest === undefined ? `accepted: id, ${FEED_KEYS.join(', ')}` : `did you mean ${nearest}?`})`,
        });
      }
    }
    const id = isUnset(fields.id) ? { ok: false, message: 'is required' } : readKey('feedId', fields.id);
    if (!id.ok) issues.push({ key: `${where}.id`, message: id.message });
    const feed = feedOf(id.value as string, fields, top, where, issues);
    for (const key of ['partnerBaseUrl', 'tokenParameterName'] as const) {
      if (feed[key] === undefined && isUnset(fields[key])) {
        issues.push({
          key: `${where}.${key}`,
          message: `is required (set it on the feed, or as ${qualified(key)} for every feed)`,
        });
      }
    }
    if (issues.length === before) feeds.push(feed);
  });
  const seen = new Set<string>();
  for (const feed of feeds) {
    if (seen.has(feed.id)) issues.push({ key: at, message: `must not repeat a feed id ("${feed.id}")` });
    seen.add(feed.id);
  }
  return feeds;
}

/** `orders-audit` → `OrdersAudit`: the subscriber's part of construct ids and output names. */
export function pascalCase(name: string): string {
  return name
    .split('-')
    .filter((part) => part.length > 0)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** The accepted name closest to a mistyped one (same letters in another case, or at most 2 edits). */
export function nearestName(given: string, names: readonly string[]): string | undefined {
  const lower = given.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(lower, name.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (previous[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = row;
  }
  return previous[b.length] as number;
}

function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/**
 * One key's value: its default when unset, else the given value as `-c` or JSON spells it; checked by the
 * key's rule. A rejected value is quoted in the message unless the key is redacted.
 */
function readKey(key: ConfigKey, given: unknown): { ok: boolean; value?: unknown; message: string } {
  const setting: Setting = SETTINGS[key];
  let value = given;
  if (isUnset(given)) {
    if (setting.required) {
      const message = `is required (set it in cdk.json "context"."${CONTEXT_KEY}" or pass -c ${qualified(key)}=…)`;
      return { ok: false, message };
    }
    if (!('default' in setting)) return { ok: true, value: undefined, message: '' };
    value = setting.default;
  }
  let message: string;
  try {
    const result = z.safeParse(setting.rule, fromContext(setting, value));
    if (result.success) return { ok: true, value: result.data, message: '' };
    message = result.error.issues[0]?.message ?? 'is invalid';
  } catch (error) {
    message = (error as Error).message;
  }
  return { ok: false, message: setting.redact ? message : `${message} (got ${describe(value)})` };
}

/** A context value as its rule takes it: `-c` passes numbers and lists as strings. */
function fromContext(setting: Setting, value: unknown): unknown {
  if (setting.spelt === 'integer') {
    return typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
  }
  if (setting.spelt !== 'list') return value;
  // An array, a JSON array string, or a comma-separated string.
  let list: unknown = value;
  if (typeof value === 'string') {
    const text = value.trim();
    list = text.startsWith('[') ? parseJson(text) : text.split(',');
    if (list === undefined) throw new Error('is not a valid JSON array');
  }
  if (!Array.isArray(list) || !list.every((item) => typeof item === 'string')) {
    throw new Error('must be a list of strings (a JSON array or comma-separated)');
  }
  return list.map((item) => item.trim()).filter((item) => item.length > 0);
}

function qualified(key: string): string {
  return `${CONTEXT_KEY}.${key}`;
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A rate expression or a number of minutes, as minutes (RULES.scheduleMinutes then checks them). */
function scheduleMinutes(value: unknown): number {
  return typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value.trim()))
    ? Number(value)
    : rateMinutes(value);
}

/** An SSM path the roles grant `parameter<path>*` on: `/a/` or `/a/b/`, never `/` alone (every parameter). */
function checkParameterPath(value: unknown): string {
  if (typeof value !== 'string') throw new Error('must be a string');
  const path = value.trim();
  if (!/^(\/[A-Za-z0-9_.-]+)+\/$/.test(path)) {
    throw new Error(
      'must be an SSM parameter path with a leading and a trailing "/", e.g. "/order-feed-ingester/" (letters, digits, "_", ".", "-")',
    );
  }
  if (/^\/(aws|ssm)/i.test(path)) throw new Error('must not start with the reserved prefixes "aws" or "ssm"');
  if (path.length > 1000) throw new Error('must be at most 1000 characters');
  return path;
}

function rateMinutes(value: unknown): number {
  if (typeof value !== 'string') throw new Error('must be a string');
  const rate = parseRateExpression(value.trim());
  if (rate === undefined) {
    throw new Error('must be a rate expression such as "rate(5 minutes)" or a number of minutes');
  }
  if ((rate.amount === 1) !== !rate.unit.endsWith('s')) {
    throw new Error('must use the singular unit for 1 and the plural otherwise, e.g. "rate(1 minute)"');
  }
  return rate.minutes;
}
