// Several feeds in one deployment (`orderFeed.feeds`): how the configuration resolves each feed, and what the
// stack builds per feed (poller, schedule, token grant, lag alarm, dashboard row, outputs). Without `feeds` the
// single feed's resources keep the logical ids an existing deployment has (fixture taken before feeds existed).
import { readFileSync } from 'node:fs';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, downstreamQueueUrlsCharacters, MAX_FEEDS, parseConfig } from '../../infra/config.js';
import { FEEDS_CONFIG, REQUIRED_CONFIG, synthStack } from './synth.js';

type Resource = { Type: string; Properties: Record<string, unknown> };
type Statement = { Action: string | string[]; Resource: unknown };

function issuesOf(raw: Record<string, unknown>): string[] {
  try {
    parseConfig(raw);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((issue) => `${issue.key}: ${issue.message}`);
  }
}

const FEED_ONE = { ...REQUIRED_CONFIG, feeds: [{ id: 'one' }] };

describe('orderFeed.feeds in the configuration', () => {
  it('gives each feed the top-level keys as defaults and its own keys over them', () => {
    const config = parseConfig(FEEDS_CONFIG);

    expect(config.feedsListed).toBe(true);
    expect(config.feeds).toEqual([
      {
        id: 'eu',
        partnerBaseUrl: 'https://partner.example.com',
        tokenParameterName: '/order-feed-ingester/partner-token',
        tokenKmsKeyArn: undefined,
        vendorIds: ['vendor-eu-1', 'vendor-eu-2'],
        minAgeMinutes: 30,
        enabled: true,
      },
      {
        id: 'uk',
        partnerBaseUrl: 'https://partner.example.com',
        tokenParameterName: '/order-feed-ingester/partner-token',
        tokenKmsKeyArn: undefined,
        vendorIds: ['vendor-uk-1'],
        minAgeMinutes: 5,
        enabled: true,
      },
      {
        id: 'us.second-account',
        partnerBaseUrl: 'https://us.partner.example.com',
        tokenParameterName: '/order-feed-ingester/us-token',
        tokenKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555',
        vendorIds: undefined,
        minAgeMinutes: 30,
        enabled: false,
      },
    ]);
  });

  it('makes one feed of the top-level keys without feeds', () => {
    const config = parseConfig({ ...REQUIRED_CONFIG, feedId: 'partner', enabled: 'false' });

    expect(config.feedsListed).toBe(false);
    expect(config.feeds.map((feed) => [feed.id, feed.enabled])).toEqual([['partner', false]]);
  });

  it('accepts the list as JSON text (-c orderFeed.feeds=…) and needs no top-level URL when every feed has one', () => {
    const config = parseConfig({
      feeds: JSON.stringify([
        { id: 'a', partnerBaseUrl: 'https://a.example.com', tokenParameterName: '/a' },
        { id: 'b', partnerBaseUrl: 'https://b.example.com', tokenParameterName: '/b' },
      ]),
    });

    expect(config.feeds.map((feed) => feed.partnerBaseUrl)).toEqual([
      'https://a.example.com',
      'https://b.example.com',
    ]);
  });

  it.each([
    ['an empty list', [], /^orderFeed\.feeds: must be a list of 1 to 20 feed objects/],
    [
      'too many feeds',
      Array.from({ length: MAX_FEEDS + 1 }, (_, index) => ({ id: `f${index}` })),
      /^orderFeed\.feeds: must be a list of 1 to 20/,
    ],
    ['an object instead of a list', { id: 'eu' }, /^orderFeed\.feeds: must be a list/],
    ['a feed that is not an object', ['eu'], /^orderFeed\.feeds\[0\]: must be an object with an "id"/],
    ['a feed without an id', [{ vendorIds: ['v'] }], /^orderFeed\.feeds\[0\]\.id: is required/],
    ['an invalid id', [{ id: 'eu west' }], /^orderFeed\.feeds\[0\]\.id: must be letters, digits/],
    [
      'an unknown feed key',
      [{ id: 'eu', pageSize: 5 }],
      /^orderFeed\.feeds\[0\]\.pageSize: unknown feed key/,
    ],
    [
      'an invalid feed value',
      [{ id: 'eu', minAgeMinutes: 0 }],
      /^orderFeed\.feeds\[0\]\.minAgeMinutes: must be/,
    ],
    ['a repeated id', [{ id: 'eu' }, { id: 'eu' }], /^orderFeed\.feeds: must not repeat a feed id/],
    [
      'ids that differ only by punctuation (same construct ids)',
      [{ id: 'eu-west' }, { id: 'eu.west' }],
      /^orderFeed\.feeds: must not repeat a feed id \("eu-west" and "eu\.west" collide/,
    ],
  ])('names the feed and key at fault for %s', (_case, feeds, expected) => {
    expect(issuesOf({ ...REQUIRED_CONFIG, feeds })).toEqual([expect.stringMatching(expected)]);
  });

  it("refuses a vendor list too long for Lambda's 4 KB environment, naming the feed", () => {
    const vendorIds = Array.from({ length: 300 }, (_, index) => `vendor-${String(index).padStart(4, '0')}`);

    expect(issuesOf({ ...REQUIRED_CONFIG, feeds: [{ id: 'eu' }, { id: 'all', vendorIds }] })).toEqual([
      expect.stringMatching(
        /^orderFeed\.feeds\[1\]\.vendorIds: is 3599 characters as the poller's VENDOR_IDS; at most 2800/,
      ),
    ]);
    expect(issuesOf({ ...REQUIRED_CONFIG, vendorIds })).toEqual([
      expect.stringMatching(/^orderFeed\.vendorIds: is 3599 characters/),
    ]);
  });

  it('leaves the vendor list less room beside the downstream queue URLs every poller carries', () => {
    // 200 vendors: 2399 characters, which fit alone (2800) but not beside three subscribers' URLs.
    const vendorIds = Array.from({ length: 200 }, (_, index) => `vendor-${String(index).padStart(4, '0')}`);
    const downstreamSubscribers = ['analytics', 'billing', 'search'];
    const room = 2800 - downstreamQueueUrlsCharacters(downstreamSubscribers);

    expect(issuesOf({ ...REQUIRED_CONFIG, vendorIds })).toEqual([]);
    expect(issuesOf({ ...REQUIRED_CONFIG, vendorIds, downstreamSubscribers })).toEqual([
      `orderFeed.vendorIds: is 2399 characters as the poller's VENDOR_IDS; at most ${room} fit in Lambda's 4 KB environment beside the 3 downstream queue URLs (split the vendors over more feeds)`,
    ]);
  });

  it("refuses more downstream subscribers than the poller's environment can carry the queue URLs of", () => {
    const name = (index: number) => `subscriber-${String(index).padStart(2, '0')}-${'x'.repeat(26)}`;
    const fits = Array.from({ length: 15 }, (_, index) => name(index));
    const tooMany = Array.from({ length: 16 }, (_, index) => name(index));

    expect(downstreamQueueUrlsCharacters(fits)).toBeLessThanOrEqual(2800);
    expect(issuesOf({ ...REQUIRED_CONFIG, downstreamSubscribers: fits })).toEqual([]);
    expect(issuesOf({ ...REQUIRED_CONFIG, downstreamSubscribers: tooMany })).toEqual([
      expect.stringMatching(
        /^orderFeed\.downstreamSubscribers: has 16 subscribers, whose queue URLs take up to 2976 characters/,
      ),
    ]);
  });

  it('asks for partnerBaseUrl on the feed when there is no top-level default', () => {
    expect(issuesOf({ tokenParameterName: '/t', feeds: [{ id: 'eu' }] })).toEqual([
      'orderFeed.feeds[0].partnerBaseUrl: is required (set it on the feed, or as orderFeed.partnerBaseUrl for every feed)',
    ]);
  });

  it('refuses a top-level feedId next to feeds (each feed names itself)', () => {
    expect(issuesOf({ ...FEED_ONE, feedId: 'orders' })).toEqual([
      'orderFeed.feedId: is not used with feeds: give each feed its "id"',
    ]);
  });

  it('never echoes a rejected per-feed token parameter (it may be the token itself)', () => {
    const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc';
    const issues = issuesOf({ ...REQUIRED_CONFIG, feeds: [{ id: 'eu', tokenParameterName: token }] });

    expect(issues).toEqual([expect.stringMatching(/^orderFeed\.feeds\[0\]\.tokenParameterName: looks like/)]);
    expect(issues.join('\n')).not.toContain(token);
  });
});

describe('a stack with three feeds', () => {
  let template: Template;
  beforeAll(() => {
    template = synthStack(FEEDS_CONFIG).template;
  });

  const functions = () =>
    Object.entries(template.findResources('AWS::Lambda::Function') as Record<string, Resource>);
  const pollerOf = (suffix: string): [string, Resource] => {
    const found = functions().filter(([id]) => id.startsWith(`Poller${suffix}Function`));
    expect(found).toHaveLength(1);
    return found[0] as [string, Resource];
  };
  const variablesOf = (fn: Resource) =>
    (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;

  it('has one poller per feed, each with its own feed settings and no reserved concurrency', () => {
    const pollers = ['Eu', 'Uk', 'UsSecondAccount'].map((suffix) => pollerOf(suffix)[1]);

    expect(pollers.map((fn) => variablesOf(fn).FEED_ID)).toEqual(['eu', 'uk', 'us.second-account']);
    expect(pollers.map((fn) => variablesOf(fn).VENDOR_IDS)).toEqual([
      'vendor-eu-1,vendor-eu-2',
      'vendor-uk-1',
      undefined,
    ]);
    expect(pollers.map((fn) => variablesOf(fn).MIN_AGE_MINUTES)).toEqual(['30', '5', '30']);
    expect(pollers.map((fn) => variablesOf(fn).PARTNER_BASE_URL)).toEqual([
      'https://partner.example.com',
      'https://partner.example.com',
      'https://us.partner.example.com',
    ]);
    expect(pollers.map((fn) => variablesOf(fn).FEED_ENABLED)).toEqual(['true', 'true', 'false']);
    expect(pollers.map((fn) => fn.Properties.ReservedConcurrentExecutions)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    // One consumer for all feeds: they share the orders queue and table.
    expect(functions().filter(([id]) => id.startsWith('ConsumerFunction'))).toHaveLength(1);
  });

  it('schedules each feed with its own rule, the switched-off feed disabled', () => {
    const rules = ['Eu', 'Uk', 'UsSecondAccount'].map((suffix) => {
      const [pollerId] = pollerOf(suffix);
      const found = Object.entries(
        template.findResources('AWS::Events::Rule') as Record<string, Resource>,
      ).filter(([id]) => id.startsWith(`PollSchedule${suffix}Rule`));
      expect(found).toHaveLength(1);
      const [, rule] = found[0] as [string, Resource];
      expect(rule.Properties.Targets).toEqual([
        expect.objectContaining({ Arn: { 'Fn::GetAtt': [pollerId, 'Arn'] } }),
      ]);
      return rule.Properties.State;
    });

    expect(rules).toEqual(['ENABLED', 'ENABLED', 'DISABLED']);
  });

  it("lets each poller read only its own feed's token parameter and invoke only itself", () => {
    const policies = Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Resource>);
    const statementsOf = (suffix: string): Statement[] => {
      const roleId = Object.keys(template.findResources('AWS::IAM::Role')).find((id) =>
        id.startsWith(`Poller${suffix}FunctionRole`),
      );
      return policies
        .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
        .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
    };
    const resourcesFor = (statements: Statement[], action: string) =>
      statements
        .filter((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]).includes(action))
        .map((s) => JSON.stringify(s.Resource));

    const eu = statementsOf('Eu');
    const us = statementsOf('UsSecondAccount');

    expect(resourcesFor(eu, 'ssm:GetParameter').join()).toContain(
      'parameter/order-feed-ingester/partner-token',
    );
    expect(resourcesFor(eu, 'ssm:GetParameter').join()).not.toContain('us-token');
    expect(resourcesFor(us, 'ssm:GetParameter').join()).toContain('parameter/order-feed-ingester/us-token');
    expect(resourcesFor(eu, 'kms:Decrypt')).toEqual([]);
    expect(resourcesFor(us, 'kms:Decrypt')).toHaveLength(1);
    expect(resourcesFor(eu, 'lambda:InvokeFunction')).toEqual([
      JSON.stringify({ 'Fn::GetAtt': [pollerOf('Eu')[0], 'Arn'] }),
    ]);
  });

  it('alarms on the lag of each switched-on feed, by dimension FeedId', () => {
    const lagAlarms = Object.entries(
      template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>,
    )
      .filter(([, alarm]) => alarm.Properties.MetricName === 'SecondsSinceCaughtUp')
      .map(([id, alarm]) => [id.replace(/[0-9A-F]{8}$/, ''), alarm.Properties.Dimensions]);

    expect(lagAlarms).toEqual([
      [
        'MonitoringFeedLagAlarmEu',
        [
          { Name: 'FeedId', Value: 'eu' },
          { Name: 'Ingester', Value: 'OrderFeedIngester/Default' },
          { Name: 'service', Value: 'order-feed-poller' },
        ],
      ],
      [
        'MonitoringFeedLagAlarmUk',
        [
          { Name: 'FeedId', Value: 'uk' },
          { Name: 'Ingester', Value: 'OrderFeedIngester/Default' },
          { Name: 'service', Value: 'order-feed-poller' },
        ],
      ],
    ]);
  });

  it('sums the errors of every poller into the one PollerErrors alarm', () => {
    const alarm = Object.entries(
      template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>,
    ).find(([id]) => id.startsWith('MonitoringPollerErrorsAlarm'))?.[1];
    const metrics = alarm?.Properties.Metrics as { Id: string; Expression?: string }[];

    expect(metrics.find((metric) => metric.Expression)?.Expression).toBe(
      'FILL(e0, 0) + FILL(e1, 0) + FILL(e2, 0)',
    );
  });

  it('keeps every metric-math alarm within CloudWatch’s 10 metrics at the most feeds allowed, each poller in one PollerErrors alarm', () => {
    const feeds = Array.from({ length: MAX_FEEDS }, (_, index) => ({ id: `f${index}` }));
    const { template: most } = synthStack({ ...REQUIRED_CONFIG, feeds });
    const alarms = Object.entries(most.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>);

    for (const [, alarm] of alarms) {
      const metrics = (alarm.Properties.Metrics ?? []) as { MetricStat?: unknown }[];
      expect(metrics.filter((metric) => metric.MetricStat).length).toBeLessThanOrEqual(10);
    }
    const pollerErrors = alarms.filter(([id]) => id.startsWith('MonitoringPollerErrors'));
    const watched = pollerErrors.flatMap(([, alarm]) =>
      (alarm.Properties.Metrics as { MetricStat?: { Metric: { Dimensions: { Value: unknown }[] } } }[])
        .filter((metric) => metric.MetricStat)
        .map((metric) => JSON.stringify(metric.MetricStat?.Metric.Dimensions[0]?.Value)),
    );
    expect(pollerErrors).toHaveLength(Math.ceil(MAX_FEEDS / 10));
    expect(new Set(watched).size).toBe(MAX_FEEDS);
  });

  it('gives each feed a dashboard row', () => {
    const dashboard = Object.values(
      template.findResources('AWS::CloudWatch::Dashboard') as Record<string, Resource>,
    )[0];
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);

    for (const feedId of ['eu', 'uk', 'us.second-account']) {
      expect(body).toContain(`Feed ${feedId}: seconds since caught up`);
    }
  });

  it('outputs each feed’s poller and rule, and the feed → poller map', () => {
    const outputs = Object.keys(template.toJSON().Outputs);

    expect(outputs).toEqual(
      expect.arrayContaining([
        'PollerFunctionNameEu',
        'PollerFunctionNameUk',
        'PollerFunctionNameUsSecondAccount',
        'PollScheduleRuleNameEu',
        'FeedPollers',
      ]),
    );
    expect(outputs).not.toContain('PollerFunctionName');
  });
});

describe('a stack without feeds', () => {
  it('keeps every logical id an existing single-feed deployment has', () => {
    const expected = JSON.parse(
      readFileSync(new URL('../fixtures/single-feed-logical-ids.json', import.meta.url), 'utf8'),
    ) as { resources: string[]; outputs: string[] };
    const template = synthStack(REQUIRED_CONFIG).template.toJSON();

    expect(Object.keys(template.Resources).sort()).toEqual(expected.resources);
    expect(Object.keys(template.Outputs).sort()).toEqual([...expected.outputs, 'FeedPollers'].sort());
  });
});
