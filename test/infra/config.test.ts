// The deployment configuration as a unit (infra/config.ts): defaults, every rule naming its key, the initial
// set of feeds and its text for the dispatcher, the CDK context forms, and the size of a function's
// environment. What synth makes of it is in stack.test.ts.
import { fileURLToPath } from 'node:url';
import { Lazy } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { parseInitialFeeds } from '../../functions/core/fleet/feed-config.js';
import {
  ConfigError,
  type ContextReader,
  downstreamQueueUrlsCharacters,
  FEED_KEYS,
  initialFeedsTextOf,
  KEYS,
  MAX_GROWING_VARIABLE_BYTES,
  parseConfig,
  projectContextObject,
  readContext,
} from '../../infra/config.js';
import { environmentBytesAtMost } from '../../infra/constructs/lambda-environment.js';
import { FEEDS_CONFIG, FULL_CONFIG, REQUIRED_CONFIG } from '../support/stack-configs.js';

/** The issues a configuration raises, as `key: message` lines (empty when valid). */
function issuesOf(raw: Record<string, unknown>): string[] {
  try {
    parseConfig(raw);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((issue) => `${issue.key}: ${issue.message}`);
  }
}

/** CDK context as the app's node gives it (every key, whether or not the app asks for it). */
function contextOf(values: Record<string, unknown>) {
  return { tryGetContext: (key: string) => values[key], getAllContext: () => values };
}

describe('parseConfig', () => {
  it('applies the documented defaults when only the required keys are given', () => {
    // Act
    const config = parseConfig(REQUIRED_CONFIG);

    // Assess: every key at its SETTINGS default (unset where it has none); the feed keys in the one feed.
    const { feeds } = config;
    const feedKeys: readonly string[] = FEED_KEYS;
    for (const key of Object.keys(KEYS) as (keyof typeof KEYS)[]) {
      if (['feeds', 'feedId', 'schedule', 'subscriberMaxAgeHours'].includes(key)) continue;
      const given = (REQUIRED_CONFIG as Record<string, unknown>)[key] ?? KEYS[key];
      const parsed = feedKeys.includes(key)
        ? feeds[0]?.[key as (typeof FEED_KEYS)[number]]
        : (config as unknown as Record<string, unknown>)[key];
      expect(parsed, key).toEqual(given);
    }
    expect([feeds.length, feeds[0]?.id, config.feedsListed]).toEqual([1, KEYS.feedId, false]);
    // Derived: half the subscriber retention, the default rate(1 minute) as minutes; the consumer's 50 whatever
    // the number of feeds, the pollers' budget of 10, the token path.
    expect([
      config.subscriberMaxAgeHours,
      feeds[0]?.schedule,
      config.consumerMaxConcurrency,
      config.maxConcurrentPollers,
      config.tokenParameterPath,
    ]).toEqual([168, 1, 50, 10, '/order-feed-ingester/']);
  });

  it('names every missing required key (no configuration at all)', () => {
    expect(issuesOf({})).toEqual([
      expect.stringMatching(/^orderFeed\.partnerBaseUrl: is required/),
      expect.stringMatching(/^orderFeed\.tokenParameterName: is required/),
    ]);
  });

  it.each([
    ['not a URL', 'partner.example.com', /orderFeed\.partnerBaseUrl: must be an absolute URL/],
    [
      'plain http to a public host',
      'http://partner.example.com',
      /orderFeed\.partnerBaseUrl: must use https/,
    ],
    [
      'credentials in the URL',
      'https://user:secret@partner.example.com',
      /orderFeed\.partnerBaseUrl: must not carry credentials/,
    ],
    [
      'a query string',
      'https://partner.example.com/?token=x',
      /orderFeed\.partnerBaseUrl: must not have a query/,
    ],
    ['an ftp URL', 'ftp://partner.example.com', /orderFeed\.partnerBaseUrl: must be an https URL/],
  ])('rejects a partnerBaseUrl with %s', (_case, partnerBaseUrl, expected) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, partnerBaseUrl })).toEqual([expect.stringMatching(expected)]);
  });

  it.each([
    ['partnerBaseUrl', 'http://localhost:4010', 'http://localhost:4010'], // plain http to the loopback host
    ['partnerBaseUrl', 'http://127.0.0.1:4010/test-pagination', 'http://127.0.0.1:4010/test-pagination'],
    ['partnerBaseUrl', 'http://[::1]:8080', 'http://[::1]:8080'],
    ['partnerBaseUrl', 'https://p.example.com/base/', 'https://p.example.com/base'], // trailing slash dropped
    ['tokenParameterName', 'partner-token', 'partner-token'], // a plain parameter name
  ] as const)('accepts the %s %s as %s', (key, value, expected) => {
    expect(parseConfig({ ...REQUIRED_CONFIG, [key]: value }).feeds[0]?.[key]).toBe(expected);
  });

  it.each([
    ['a path without the leading slash', 'order-feed/token', /must be an SSM parameter name/],
    ['an ARN', 'arn:aws:ssm:us-east-1:123456789012:parameter/x', /must be the parameter name, not its ARN/],
    ['what looks like a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc', /looks like a secret value/],
    ['a long opaque string', 'a'.repeat(48), /looks like a secret value/],
    ['the reserved aws prefix', '/aws/reference/x', /.*reserved prefixes/],
  ])('rejects a tokenParameterName that is %s', (_case, tokenParameterName, expected) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, tokenParameterName })).toEqual([
      expect.stringMatching(new RegExp(`^orderFeed\\.tokenParameterName: ${expected.source}`)),
    ]);
  });

  it.each([
    ['tokenParameterName', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc'],
    ['partnerBaseUrl', 'https://user:s3cr3t@partner.example.com'],
  ])('never echoes a rejected %s (it may hold a secret)', (key, value) => {
    const issues = issuesOf({ ...REQUIRED_CONFIG, [key]: value });

    expect(issues).toEqual([expect.stringMatching(new RegExp(`^orderFeed\\.${key}: `))]);
    expect(issues.join('\n')).not.toContain(value.includes('s3cr3t') ? 's3cr3t' : value);
  });

  // Every bound of every key, one step beyond, is refused in stack.test.ts; these pin the message's form.
  it.each<[Record<string, unknown>, string | RegExp]>([
    [{ pageSize: 0 }, 'orderFeed.pageSize: must be an integer from 1 to 100 (got 0)'],
    [{ pageSize: 2.5 }, 'orderFeed.pageSize: must be an integer from 1 to 100 (got 2.5)'],
    [
      { arrayQueryEncoding: 'csv' },
      'orderFeed.arrayQueryEncoding: must be one of "repeat", "comma" (got "csv")',
    ],
    [
      { ...FULL_CONFIG, subscriberRetentionDays: 2, subscriberMaxAgeHours: 48 },
      /^orderFeed\.subscriberMaxAgeHours: must be below the subscriber queues' retention/,
    ],
    // Not echoed: whatever was typed there.
    [{ alarmEmail: 'not an address' }, 'orderFeed.alarmEmail: must be an e-mail address'],
    // A batch above ten needs a batching window (the highest edge in stack.test.ts has one, and synthesizes).
    [
      { consumerBatchSize: 50 },
      /^orderFeed\.consumerBatchSize: above 10 needs consumerMaxBatchingWindowSeconds/,
    ],
    [
      { schedule: 'rate(30 minutes)', alarmLagMinutes: 30 },
      /^orderFeed\.alarmLagMinutes: must exceed the schedule interval \(30 minutes\)/,
    ],
  ])('names the key of an out-of-range value: %j', (override, expected) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, ...override })).toEqual([
      typeof expected === 'string' ? expected : expect.stringMatching(expected),
    ]);
  });

  it.each([
    ['an upper-case letter', ['Billing'], /invalid subscriber name "Billing"/],
    ['a leading digit', ['1st'], /invalid subscriber name "1st"/],
    ['an underscore', ['audit_log'], /invalid subscriber name "audit_log"/],
    ['a repeated name', ['billing', 'billing'], /must not repeat a subscriber name/],
    [
      'names colliding once dashes are dropped',
      ['audit-log', 'auditlog'],
      /must not repeat a subscriber name/,
    ],
  ])('rejects downstreamSubscribers with %s', (_case, downstreamSubscribers, expected) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, downstreamSubscribers })).toEqual([
      expect.stringMatching(new RegExp(`^orderFeed\\.downstreamSubscribers: .*${expected.source}`)),
    ]);
  });

  it.each([
    ['rate(1 minute)', 1],
    ['rate(10 minutes)', 10],
    ['rate(1 hour)', 60],
    [15, 15],
    ['15', 15],
  ])('reads the schedule %j as %i minutes', (schedule, minutes) => {
    expect(parseConfig({ ...REQUIRED_CONFIG, schedule, alarmLagMinutes: 120 }).feeds[0]?.schedule).toBe(
      minutes,
    );
  });

  it.each([
    'cron(0/5 * * * ? *)',
    'rate(5 minute)',
    'rate(1 minutes)',
    'rate(0 minutes)',
    'rate(2 hours)',
    0,
  ])('rejects the schedule %j', (schedule) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, schedule })).toEqual([
      expect.stringMatching(/^orderFeed\.schedule: /),
    ]);
  });

  it('rejects unknown keys, naming them and the nearest accepted key', () => {
    expect(issuesOf({ ...REQUIRED_CONFIG, pagesize: 10, tokenParamterName: '/x', colour: 'red' })).toEqual([
      expect.stringMatching(/^orderFeed\.pagesize: unknown key \(did you mean orderFeed\.pageSize\?\)/),
      expect.stringMatching(
        /^orderFeed\.tokenParamterName: unknown key \(did you mean orderFeed\.tokenParameterName\?\)/,
      ),
      expect.stringMatching(/^orderFeed\.colour: unknown key \(accepted: partnerBaseUrl, /),
    ]);
  });

  it('names a key that is gone with what replaced it, rather than as unknown', () => {
    expect(issuesOf({ ...REQUIRED_CONFIG, maxContinuations: 10 })).toEqual([
      expect.stringMatching(/^orderFeed\.maxContinuations: is no longer a setting: .*the dispatcher/),
    ]);
  });

  it.each([
    ['the root alone (every parameter of the account)', '/'],
    ['a path without the trailing slash', '/order-feed-ingester'],
    ['a path without the leading slash', 'order-feed-ingester/'],
    ['the reserved aws prefix', '/aws/tokens/'],
  ])('rejects a tokenParameterPath that is %s', (_case, tokenParameterPath) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, tokenParameterPath })).toEqual([
      expect.stringMatching(/^orderFeed\.tokenParameterPath: must /),
    ]);
  });

  it('reports every problem at once', () => {
    expect(issuesOf({ partnerBaseUrl: 'http://partner.example.com', pageSize: 0 })).toHaveLength(3);
  });
});

/** What the app does with CDK context: read it, then validate it. */
const loadConfig = (context: ContextReader) => parseConfig(readContext(context));

describe('readContext then parseConfig', () => {
  it("reads the orderFeed object, or the whole object as a JSON string (-c orderFeed='{…}')", () => {
    expect(
      loadConfig(contextOf({ orderFeed: { ...REQUIRED_CONFIG, pageSize: 25 } })).feeds[0]?.pageSize,
    ).toBe(25);
    const fromJson = loadConfig(
      contextOf({ orderFeed: JSON.stringify({ ...REQUIRED_CONFIG, feedId: 'f1' }) }),
    );
    expect(fromJson.feeds.map((feed) => feed.id)).toEqual(['f1']);
  });

  it('lets -c orderFeed.<key>=<string> override single keys, parsing numbers and lists', () => {
    // What `cdk synth -c orderFeed.pageSize=7 -c orderFeed.downstreamSubscribers=a,b` passes
    const config = loadConfig(
      contextOf({
        orderFeed: REQUIRED_CONFIG,
        'orderFeed.pageSize': '7',
        'orderFeed.downstreamSubscribers': 'billing, audit-log',
        'orderFeed.vendorIds': '["v1","v2"]',
      }),
    );

    expect([config.feeds[0]?.pageSize, config.downstreamSubscribers, config.feeds[0]?.vendorIds]).toEqual([
      7,
      ['billing', 'audit-log'],
      ['v1', 'v2'],
    ]);
  });

  it("merges -c orderFeed='{…}' over cdk.json's object key by key, and leaves an object from cdk.json itself alone", () => {
    // The CLI passes the -c string in place of cdk.json's object, which the app reads itself.
    const project = { ...REQUIRED_CONFIG, pageSize: 25, feedId: 'from-cdk-json' };
    const merged = parseConfig(
      readContext(contextOf({ orderFeed: JSON.stringify({ feedId: 'f1', alarmEmail: null }) }), project),
    );

    // Each key comes from the -c object if it names it (null unsets), else from cdk.json.
    expect(merged.feeds[0]).toMatchObject({
      id: 'f1',
      partnerBaseUrl: REQUIRED_CONFIG.partnerBaseUrl,
      pageSize: 25,
    });
    expect(merged.alarmEmail).toBeUndefined();
    expect(readContext(contextOf({ orderFeed: { feedId: 'f1' } }), { ...REQUIRED_CONFIG })).toEqual({
      feedId: 'f1',
    });
    expect(projectContextObject(fileURLToPath(new URL('../..', import.meta.url)))).toMatchObject(
      REQUIRED_CONFIG,
    );
    expect(projectContextObject(fileURLToPath(new URL('.', import.meta.url)))).toBeUndefined();
  });

  it.each([
    [
      'a mistyped -c orderFeed.<key>, naming it and the nearest key, as in the object form',
      { orderFeed: REQUIRED_CONFIG, 'orderFeed.pagesize': '50', 'orderFeed.tokenParamterName': '/x' },
      /orderFeed\.pagesize: unknown key \(did you mean orderFeed\.pageSize\?\)[\s\S]*orderFeed\.tokenParamterName: unknown key \(did you mean orderFeed\.tokenParameterName\?\)/,
    ],
    ['an orderFeed value that is not an object', { orderFeed: '[1,2]' }, /orderFeed: must be an object/],
  ])('rejects %s', (_case, context, expected) => {
    expect(() => loadConfig(contextOf(context))).toThrow(expected);
  });
});

describe('orderFeed.feeds', () => {
  const FEED_ONE = { ...REQUIRED_CONFIG, feeds: [{ id: 'one' }] };
  const feed = (id: string, own: Record<string, unknown>) => ({
    id,
    partnerBaseUrl: 'https://partner.example.com',
    tokenParameterName: '/order-feed-ingester/partner-token',
    tokenKmsKeyArn: undefined,
    vendorIds: undefined,
    minAgeMinutes: 30,
    pageSize: 100,
    schedule: 1,
    enabled: true,
    ...own,
  });

  it('gives each feed the top-level keys as defaults and its own keys over them', () => {
    const config = parseConfig(FEEDS_CONFIG);

    expect(config.feedsListed).toBe(true);
    expect(config.feeds).toEqual([
      feed('eu', { vendorIds: ['vendor-eu-1', 'vendor-eu-2'] }),
      feed('uk', { vendorIds: ['vendor-uk-1'], minAgeMinutes: 5 }),
      feed('us.second-account', {
        partnerBaseUrl: 'https://us.partner.example.com',
        tokenParameterName: '/order-feed-ingester/us-token',
        tokenKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555',
        enabled: false,
      }),
    ]);
  });

  it('makes one feed of the top-level keys without feeds', () => {
    const config = parseConfig({ ...REQUIRED_CONFIG, feedId: 'partner', enabled: 'false' });

    expect(config.feedsListed).toBe(false);
    expect(config.feeds.map((f) => [f.id, f.enabled])).toEqual([['partner', false]]);
  });

  it('accepts the list as JSON text (-c orderFeed.feeds=…) and needs no top-level URL when every feed has one', () => {
    const config = parseConfig({
      feeds: JSON.stringify([
        { id: 'a', partnerBaseUrl: 'https://a.example.com', tokenParameterName: '/a' },
        { id: 'b', partnerBaseUrl: 'https://b.example.com', tokenParameterName: '/b' },
      ]),
    });

    expect(config.feeds.map((f) => f.partnerBaseUrl)).toEqual([
      'https://a.example.com',
      'https://b.example.com',
    ]);
  });

  const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc';
  it.each([
    ['an empty list', { feeds: [] }, /^orderFeed\.feeds: must be a list of at least one feed object/],
    ['an object instead of a list', { feeds: { id: 'eu' } }, /^orderFeed\.feeds: must be a list/],
    [
      'a feed that is not an object',
      { feeds: ['eu'] },
      /^orderFeed\.feeds\[0\]: must be an object with an "id"/,
    ],
    ['a feed without an id', { feeds: [{ vendorIds: ['v'] }] }, /^orderFeed\.feeds\[0\]\.id: is required/],
    ['an invalid id', { feeds: [{ id: 'eu west' }] }, /^orderFeed\.feeds\[0\]\.id: must be letters, digits/],
    [
      'an unknown feed key',
      { feeds: [{ id: 'eu', pagesize: 5 }] },
      /^orderFeed\.feeds\[0\]\.pagesize: unknown feed key \(did you mean pageSize\?\)/,
    ],
    [
      'an invalid feed value',
      { feeds: [{ id: 'eu', minAgeMinutes: 0 }] },
      /^orderFeed\.feeds\[0\]\.minAgeMinutes: must be/,
    ],
    [
      'a repeated id',
      { feeds: [{ id: 'eu' }, { id: 'eu' }] },
      /^orderFeed\.feeds: must not repeat a feed id \("eu"\)/,
    ],
    [
      'a feed whose interval the stale alarm does not exceed',
      { feeds: [{ id: 'eu' }, { id: 'slow', schedule: 30 }], alarmLagMinutes: 30 },
      /^orderFeed\.alarmLagMinutes: must exceed the schedule interval of feed "slow" \(30 minutes\)/,
    ],
    [
      'no partnerBaseUrl on the feed nor at the top',
      { partnerBaseUrl: undefined, feeds: [{ id: 'eu' }] },
      /^orderFeed\.feeds\[0\]\.partnerBaseUrl: is required \(set it on the feed, or as orderFeed\.partnerBaseUrl for every feed\)$/,
    ],
    [
      'a top-level feedId (each feed names itself)',
      { ...FEED_ONE, feedId: 'orders' },
      /^orderFeed\.feedId: is not used with feeds: give each feed its "id"$/,
    ],
    // Never echoed: it may be the token itself.
    [
      'a per-feed token parameter that looks like a token',
      { feeds: [{ id: 'eu', tokenParameterName: token }] },
      /^orderFeed\.feeds\[0\]\.tokenParameterName: looks like(?!.*eyJ)/,
    ],
  ])('names the feed and key at fault for %s', (_case, override, expected) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, ...override })).toEqual([expect.stringMatching(expected)]);
  });

  it('accepts an initial set of any size: a thousand feeds, a feed of 300 vendors (it travels as a file asset)', () => {
    const feeds = Array.from({ length: 1000 }, (_, index) => ({
      id: `merchant-${String(index).padStart(4, '0')}`,
    }));
    const vendorIds = Array.from({ length: 300 }, (_, index) => `vendor-${String(index).padStart(4, '0')}`);

    expect(issuesOf({ ...REQUIRED_CONFIG, feeds })).toEqual([]);
    expect(issuesOf({ ...REQUIRED_CONFIG, vendorIds })).toEqual([]);
  });

  it("refuses more downstream subscribers than the poller's environment can carry the queue URLs of", () => {
    const names = (length: number) =>
      Array.from({ length }, (_, index) => `subscriber-${String(index).padStart(2, '0')}-${'x'.repeat(26)}`);

    expect(downstreamQueueUrlsCharacters(names(15))).toBeLessThanOrEqual(MAX_GROWING_VARIABLE_BYTES);
    expect(issuesOf({ ...REQUIRED_CONFIG, downstreamSubscribers: names(15) })).toEqual([]);
    expect(issuesOf({ ...REQUIRED_CONFIG, downstreamSubscribers: names(16) })).toEqual([
      expect.stringMatching(
        /^orderFeed\.downstreamSubscribers: has 16 subscribers, whose queue URLs take up to 2976 characters/,
      ),
    ]);
  });
});

describe("the initial set as the dispatcher's asset carries it", () => {
  it('is what the dispatcher reads back at cold start: each feed its row, shared values once, defaults left out', () => {
    const config = parseConfig({
      ...FEEDS_CONFIG,
      feeds: [...FEEDS_CONFIG.feeds, { id: 'slow', pageSize: 50, schedule: 'rate(5 minutes)' }],
    });
    const text = initialFeedsTextOf(config.feeds, config.partnerBaseUrl);

    expect(parseInitialFeeds(text)).toEqual([
      {
        feedId: 'eu',
        state: 'enabled',
        config: {
          tokenParameterName: '/order-feed-ingester/partner-token',
          vendorIds: ['vendor-eu-1', 'vendor-eu-2'],
          minAgeMinutes: 30,
          purpose: 'stream',
          pageSize: 100,
          scheduleMinutes: 1,
        },
      },
      expect.objectContaining({ feedId: 'uk', config: expect.objectContaining({ minAgeMinutes: 5 }) }),
      {
        feedId: 'us.second-account',
        state: 'paused',
        config: {
          tokenParameterName: '/order-feed-ingester/us-token',
          partnerBaseUrl: 'https://us.partner.example.com',
          minAgeMinutes: 30,
          purpose: 'stream',
          pageSize: 100,
          scheduleMinutes: 1,
        },
      },
      expect.objectContaining({
        feedId: 'slow',
        config: expect.objectContaining({ pageSize: 50, scheduleMinutes: 5 }),
      }),
    ]);
    // The deployment's URL is the poller's own default (PARTNER_BASE_URL): a row names only another one.
    expect(text).not.toContain('"https://partner.example.com"');
  });

  it('writes a value every feed shares once', () => {
    const config = parseConfig({
      ...REQUIRED_CONFIG,
      vendorIds: ['vendor-1', 'vendor-2'],
      feeds: [{ id: 'a' }, { id: 'b', minAgeMinutes: 5 }],
    });
    const text = initialFeedsTextOf(config.feeds, config.partnerBaseUrl);

    expect(text.match(/vendor-1/g)).toHaveLength(1);
    expect(parseInitialFeeds(text).map((feed) => feed.config.vendorIds)).toEqual([
      ['vendor-1', 'vendor-2'],
      ['vendor-1', 'vendor-2'],
    ]);
  });
});

describe("the size of a function's environment (Lambda's 4 KB, checked at synth)", () => {
  /** A value CloudFormation fills in at deploy time, as a generated resource name is at synth. */
  const deployTime = () => Lazy.string({ produce: () => 'resolved-at-deploy' });

  it('is the JSON Lambda is sent, a deploy-time value counted at the longest stated for it (which it needs)', () => {
    const { total, byVariable } = environmentBytesAtMost(
      { FEED_ID: 'eu', TABLE: deployTime() },
      { TABLE: 255 },
    );

    expect(total).toBe(JSON.stringify({ FEED_ID: 'eu', TABLE: 'x'.repeat(255) }).length);
    expect(byVariable).toEqual([
      ['TABLE', '"TABLE":""'.length + 255],
      ['FEED_ID', '"FEED_ID":"eu"'.length],
    ]);
    expect(() => environmentBytesAtMost({ TABLE: deployTime() }, {})).toThrow(
      /TABLE is only known at deploy time: state the longest it can get/,
    );
  });
});
