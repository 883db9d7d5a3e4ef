// The configuration contract end to end: every setting at the lowest and the highest value its rule allows,
// and at its default, goes through synth (infra/config.ts and the constructs' environment writers) into the
// template; the functions' cold-start loaders must accept exactly what the template carries, and both sides
// must refuse one step beyond each bound. A bound changed on one side only fails here.
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { readEnv } from '../../functions/core/config/env.js';
import type { Setting } from '../../functions/core/config/setting.js';
import {
  CONSUMER_RESOURCES,
  FEED_SETTINGS,
  OBSERVABILITY_SETTINGS,
  POLLER_RESOURCES,
  POLLER_SETTINGS,
  POLLER_TUNING,
} from '../../functions/core/config/settings.js';
import { loadPollerConfig, type PollerConfig } from '../../functions/poller/config.js';
import { type ConfigKey, parseConfig, SETTINGS } from '../../infra/config.js';
import { REQUIRED_CONFIG, synthStack } from './synth.js';

type PollerKey = keyof typeof FEED_SETTINGS | keyof typeof POLLER_SETTINGS;

/** Where the poller's loader puts each configuration key it reads (a new key fails to compile here). */
const POLLER_FIELD: Record<PollerKey, keyof PollerConfig> = {
  feedId: 'feedId',
  partnerBaseUrl: 'partnerBaseUrl',
  tokenParameterName: 'tokenParameterName',
  vendorIds: 'vendorIds',
  minAgeMinutes: 'minAgeMinutes',
  enabled: 'enabled',
  pageSize: 'pageSize',
  maxPagesPerRun: 'maxPagesPerRun',
  maxContinuations: 'maxContinuations',
  arrayQueryEncoding: 'arrayQueryEncoding',
  cursorRecoveryLookbackMinutes: 'recoveryLookbackMinutes',
};
const POLLER_KEYS = Object.keys(POLLER_FIELD) as PollerKey[];
const KEY_NAMES = Object.keys(SETTINGS) as ConfigKey[];

/** Variables a function gets that no setting declares: fixed by the constructs themselves. */
const FIXED_VARIABLES = ['POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_LOG_LEVEL', 'NODE_OPTIONS'];
const DECLARED_VARIABLES = [
  FEED_SETTINGS,
  POLLER_SETTINGS,
  POLLER_TUNING,
  POLLER_RESOURCES,
  CONSUMER_RESOURCES,
  OBSERVABILITY_SETTINGS,
].flatMap((group) => Object.values(group).map((setting: Setting) => setting.env));

/** Every key with extremes set to its lowest (or highest) valid value. */
function atEdge(edge: 'lowest' | 'highest'): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const key of KEY_NAMES) {
    const extremes: readonly unknown[] = SETTINGS[key].extremes;
    if (extremes.length > 0) config[key] = edge === 'lowest' ? extremes[0] : extremes[extremes.length - 1];
  }
  return config;
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
      return key in FEED_SETTINGS
        ? feed?.[key as Exclude<keyof typeof FEED_SETTINGS, 'feedId'>]
        : expected[key as keyof typeof POLLER_SETTINGS];
    };
    for (const key of POLLER_KEYS) expect(loaded[POLLER_FIELD[key]], key).toEqual(synthValue(key));
    expect(Object.keys(loaded.downstreamQueueUrls)).toEqual(expected.downstreamSubscribers);
  });

  it('gives the consumer an environment its cold start accepts', () => {
    const environment = environmentOf(template, 'ConsumerFunction');

    expect(loadConsumerConfig(environment).ordersTableName).toMatch(/^placeholder-OrdersTable/);
  });

  it.each(['PollerFunction', 'ConsumerFunction'])(
    'gives the %s the metrics namespace synth validated',
    (prefix) => {
      const environment = environmentOf(template, prefix);

      expect(readEnv(environment, OBSERVABILITY_SETTINGS.metricsNamespace)).toBe(
        parseConfig(raw).metricsNamespace,
      );
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

describe('one step beyond a bound', () => {
  /** The poller's environment of the default deployment, to change one variable in. */
  let baseEnvironment: Record<string, string>;
  beforeAll(() => {
    baseEnvironment = environmentOf(synthStack(REQUIRED_CONFIG).template, 'PollerFunction');
  });

  const ranged = KEY_NAMES.flatMap((key) => {
    const range = SETTINGS[key].range;
    return range ? [[key, range.min - 1, range.max + 1] as const] : [];
  });
  const chosen = KEY_NAMES.filter((key) => SETTINGS[key].choices !== undefined);

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
      const variable = SETTINGS[key].env as string;
      for (const value of [below, above]) {
        expect(() => loadPollerConfig({ ...baseEnvironment, [variable]: String(value) })).toThrow(
          `configuration error: ${variable} must be between`,
        );
      }
    },
  );

  it.each(chosen.filter((key) => (POLLER_KEYS as string[]).includes(key)))(
    'the poller refuses the variable of %s outside its choices',
    (key) => {
      const variable = SETTINGS[key].env as string;
      expect(() => loadPollerConfig({ ...baseEnvironment, [variable]: 'not-a-choice' })).toThrow(
        `configuration error: ${variable} must be one of`,
      );
    },
  );
});
