// The configuration contract end to end: every setting at the lowest and the highest value its rule allows,
// and at its default, goes through synth (infra/config.ts and the constructs' environment writers) into the
// template; the functions' cold-start loaders must accept exactly what the template carries, and both sides
// must refuse one step beyond each bound. A bound changed on one side only fails here.
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { ENVIRONMENT, type RULES, readMetricsNamespace } from '../../functions/core/config/settings.js';
import { loadPollerConfig, type PollerConfig } from '../../functions/poller/config.js';
import { type ConfigKey, FEED_KEYS, parseConfig } from '../../infra/config.js';
import { REQUIRED_CONFIG, synthStack } from './synth.js';

type PollerKey = Exclude<keyof typeof RULES, 'metricsNamespace' | 'historyRetentionDays'>;

/**
 * Where the poller's loader puts each configuration key it reads, and the variable it reads it from (a new
 * key fails to compile here).
 */
const POLLER_FIELD: Record<PollerKey, [field: keyof PollerConfig, variable: string]> = {
  feedId: ['feedId', 'FEED_ID'],
  partnerBaseUrl: ['partnerBaseUrl', 'PARTNER_BASE_URL'],
  tokenParameterName: ['tokenParameterName', 'PARTNER_TOKEN_PARAMETER'],
  vendorIds: ['vendorIds', 'VENDOR_IDS'],
  minAgeMinutes: ['minAgeMinutes', 'MIN_AGE_MINUTES'],
  enabled: ['enabled', 'FEED_ENABLED'],
  pageSize: ['pageSize', 'PAGE_SIZE'],
  maxPagesPerRun: ['maxPagesPerRun', 'MAX_PAGES_PER_RUN'],
  maxPageBodyBytes: ['maxPageBodyBytes', 'MAX_PAGE_BODY_BYTES'],
  maxContinuations: ['maxContinuations', 'MAX_CONTINUATIONS'],
  arrayQueryEncoding: ['arrayQueryEncoding', 'ARRAY_QUERY_ENCODING'],
  cursorRecoveryLookbackMinutes: ['recoveryLookbackMinutes', 'CURSOR_RECOVERY_LOOKBACK_MINUTES'],
  partnerRequestsPerSecond: ['partnerRequestsPerSecond', 'PARTNER_REQUESTS_PER_SECOND'],
};
const POLLER_KEYS = Object.keys(POLLER_FIELD) as PollerKey[];

/** The lowest and the highest value each bounded key accepts. */
const EDGES: Partial<Record<ConfigKey, readonly [lowest: unknown, highest: unknown]>> = {
  partnerBaseUrl: ['http://127.0.0.1:1', 'https://partner.example.com/test-pagination'],
  tokenParameterName: ['p', `/${'p'.repeat(1010)}`],
  feedId: ['f', `F${'x'.repeat(63)}`],
  schedule: [1, 60],
  pageSize: [1, 100],
  maxPageBodyBytes: [2 * 1024 * 1024, 64 * 1024 * 1024],
  maxPagesPerRun: [1, 100_000],
  maxContinuations: [0, 100_000],
  minAgeMinutes: [1, 1440],
  vendorIds: [['v'], ['v-1', `V${'v'.repeat(127)}`]],
  enabled: [false, true],
  arrayQueryEncoding: ['repeat', 'comma'],
  cursorRecoveryLookbackMinutes: [1, 1_581_120],
  partnerRequestsPerSecond: [1, 10_000],
  downstreamSubscribers: [[], ['a', `s${'-x'.repeat(19)}x`]],
  subscriberRetentionDays: [1, 14],
  subscriberMaxAgeHours: [1, 335],
  maxReceiveCount: [1, 1000],
  consumerBatchSize: [1, 10_000],
  consumerMaxBatchingWindowSeconds: [0, 300],
  consumerMaxConcurrency: [2, 1000],
  alarmLagMinutes: [2, 1440],
  alarmQueueAgeMinutes: [1, 20_160],
  metricsNamespace: ['N', `N${'n'.repeat(254)}`],
  logRetentionDays: [1, 3653],
  removalPolicy: ['retain', 'destroy'],
  quarantineRetentionDays: [1, 3650],
  history: [false, true],
  historyRetentionDays: [0, 3650],
};
const EDGE_KEYS = Object.keys(EDGES) as ConfigKey[];
/** The keys that take one of a few values. */
const CHOSEN: ConfigKey[] = ['enabled', 'arrayQueryEncoding', 'removalPolicy', 'history'];

/** Variables a function gets that no setting declares: fixed by the constructs themselves. */
const FIXED_VARIABLES = ['POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_LOG_LEVEL', 'NODE_OPTIONS'];
const DECLARED_VARIABLES = Object.keys(ENVIRONMENT.shape);

/** Every bounded key at its lowest (or highest) valid value. */
function atEdge(edge: 'lowest' | 'highest'): Record<string, unknown> {
  return Object.fromEntries(EDGE_KEYS.map((key) => [key, EDGES[key]?.[edge === 'lowest' ? 0 : 1]]));
}

const CASES = {
  defaults: { ...REQUIRED_CONFIG },
  lowest: atEdge('lowest'),
  highest: atEdge('highest'),
};

/** A template value as the function would see it: CloudFormation references become placeholder strings. */
function rendered(value: unknown): string {
  if (typeof value === 'string') return value;
  const node = value as Record<string, unknown>;
  if (typeof node.Ref === 'string') return `placeholder-${node.Ref}`;
  if (Array.isArray(node['Fn::GetAtt'])) return `placeholder-${node['Fn::GetAtt'].join('.')}`;
  const join = node['Fn::Join'];
  if (Array.isArray(join)) {
    const [separator, parts] = join as [string, unknown[]];
    return parts.map(rendered).join(separator);
  }
  throw new Error(`no placeholder for ${JSON.stringify(value)}`);
}

/** The environment of the one function whose logical id starts with `prefix`, rendered. */
function environmentOf(template: Template, prefix: string): Record<string, string> {
  const functions = Object.entries(template.findResources('AWS::Lambda::Function')).filter(([id]) =>
    id.startsWith(prefix),
  );
  expect(functions).toHaveLength(1);
  const [, fn] = functions[0] as [
    string,
    { Properties: { Environment: { Variables: Record<string, unknown> } } },
  ];
  return Object.fromEntries(
    Object.entries(fn.Properties.Environment.Variables).map(([name, value]) => [name, rendered(value)]),
  );
}

describe.each(Object.entries(CASES))('synthesized at the %s of every setting', (_edge, raw) => {
  let template: Template;
  beforeAll(() => {
    template = synthStack(raw).template;
  });

  it('gives the poller an environment its cold start accepts, with the values synth validated', () => {
    // Prepare
    const expected = parseConfig(raw);
    const environment = environmentOf(template, 'PollerFunction');

    // Act
    const loaded = loadPollerConfig(environment);

    // Assess
    const feed = expected.feeds[0];
    const synthValue = (key: PollerKey): unknown => {
      if (key === 'feedId') return feed?.id;
      return (FEED_KEYS as readonly string[]).includes(key)
        ? feed?.[key as (typeof FEED_KEYS)[number]]
        : expected[key as Exclude<PollerKey, 'feedId' | (typeof FEED_KEYS)[number]>];
    };
    for (const key of POLLER_KEYS) expect(loaded[POLLER_FIELD[key][0]], key).toEqual(synthValue(key));
    expect(Object.keys(loaded.downstreamQueueUrls)).toEqual(expected.downstreamSubscribers);
  });

  it('gives the consumer an environment its cold start accepts', () => {
    const environment = environmentOf(template, 'ConsumerFunction');

    const loaded = loadConsumerConfig(environment);

    expect(loaded.ordersTableName).toMatch(/^placeholder-OrdersTable/);
    const { history, historyRetentionDays } = parseConfig(raw);
    expect(loaded.history?.tableName ?? 'none').toMatch(history ? /^placeholder-HistoryTable/ : /^none$/);
    if (history) expect(loaded.history?.retentionDays).toBe(historyRetentionDays);
  });

  it('the consumer refuses a history retention one step beyond its bounds', () => {
    const environment = environmentOf(template, 'ConsumerFunction');

    for (const days of ['-1', '3651']) {
      expect(() => loadConsumerConfig({ ...environment, HISTORY_RETENTION_DAYS: days })).toThrow(
        'configuration error: HISTORY_RETENTION_DAYS must be an integer from 0 to 3650',
      );
    }
  });

  it.each(['PollerFunction', 'ConsumerFunction'])(
    'gives the %s the metrics namespace synth validated',
    (prefix) => {
      const environment = environmentOf(template, prefix);

      expect(readMetricsNamespace(environment)).toBe(parseConfig(raw).metricsNamespace);
    },
  );

  it('writes only variables that a setting declares (or the constructs fix)', () => {
    const written = [
      ...Object.keys(environmentOf(template, 'PollerFunction')),
      ...Object.keys(environmentOf(template, 'ConsumerFunction')),
    ];

    expect(
      written.filter((name) => !DECLARED_VARIABLES.includes(name) && !FIXED_VARIABLES.includes(name)),
    ).toEqual([]);
  });
});

describe('no hidden settings', () => {
  it('every variable the functions read is one the stack writes from a documented key', () => {
    // At the highest edge every optional key is set, so every variable a key feeds is written.
    const { template } = synthStack(CASES.highest);
    const written = new Set([
      ...Object.keys(environmentOf(template, 'PollerFunction')),
      ...Object.keys(environmentOf(template, 'ConsumerFunction')),
    ]);

    expect(DECLARED_VARIABLES.filter((name) => !written.has(name))).toEqual([]);
  });
});

describe('one step beyond a bound', () => {
  /** The poller's environment of the default deployment, to change one variable in. */
  let baseEnvironment: Record<string, string>;
  beforeAll(() => {
    baseEnvironment = environmentOf(synthStack(REQUIRED_CONFIG).template, 'PollerFunction');
  });

  const ranged = EDGE_KEYS.flatMap((key) => {
    const [lowest, highest] = EDGES[key] ?? [];
    return typeof lowest === 'number' && typeof highest === 'number'
      ? [[key, lowest - 1, highest + 1] as const]
      : [];
  });
  const chosen = CHOSEN;

  it('covers every integer and every choice the poller reads', () => {
    const covered = [...ranged.map(([key]) => key), ...chosen];

    expect(POLLER_KEYS.filter((key) => !covered.includes(key))).toEqual([
      'feedId',
      'partnerBaseUrl',
      'tokenParameterName',
      'vendorIds',
    ]);
  });

  it.each(ranged)('synth refuses orderFeed.%s at %i and %i', (key, below, above) => {
    for (const value of [below, above]) {
      expect(() => parseConfig({ ...REQUIRED_CONFIG, [key]: value })).toThrow(`orderFeed.${key}: must be`);
    }
  });

  it.each(chosen)('synth refuses orderFeed.%s outside its choices', (key) => {
    expect(() => parseConfig({ ...REQUIRED_CONFIG, [key]: 'not-a-choice' })).toThrow(
      `orderFeed.${key}: must be one of`,
    );
  });

  it.each(ranged.filter(([key]) => (POLLER_KEYS as string[]).includes(key)))(
    'the poller refuses the variable of %s at %i and %i',
    (key, below, above) => {
      const [, variable] = POLLER_FIELD[key as PollerKey];
      for (const value of [below, above]) {
        expect(() => loadPollerConfig({ ...baseEnvironment, [variable]: String(value) })).toThrow(
          `configuration error: ${variable} must be an integer from`,
        );
      }
    },
  );

  it.each(chosen.filter((key) => (POLLER_KEYS as string[]).includes(key)))(
    'the poller refuses the variable of %s outside its choices',
    (key) => {
      const [, variable] = POLLER_FIELD[key as PollerKey];
      expect(() => loadPollerConfig({ ...baseEnvironment, [variable]: 'not-a-choice' })).toThrow(
        `configuration error: ${variable} must be one of`,
      );
    },
  );
});
