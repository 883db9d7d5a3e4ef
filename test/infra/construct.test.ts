// The OrderFeedIngester construct in someone else's CDK app: a platform team's stack, its own construct id
// and props, cdk-nag's AWS Solutions pack clean; and its props stay the configuration contract (the same keys
// as the `orderFeed` context, checked by the same rules).
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { FEATURE_FLAGS } from 'order-feed-ingester/infra/feature-flags';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { STACK_NAME } from '../../infra/app.js';
import { type ConfigKey, type FEED_KEYS, SETTINGS } from '../../infra/config.js';
import { PROP_KEYS } from '../../infra/config-props.js';
import {
  type FeedProps,
  OrderFeedIngester,
  type OrderFeedIngesterProps,
} from '../../infra/order-feed-ingester.js';
import { FEEDS_CONFIG, REQUIRED_CONFIG, synthStack } from './synth.js';

/** A foreign app: its own stack name, and bundling skipped (as `cdk synth --exclusively` would). */
function platformApp() {
  const app = new App({ context: { ...FEATURE_FLAGS, 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'PlatformServices', { env: { account: '123456789012', region: 'eu-west-1' } });
  return { app, stack };
}

function nagViolations(scope: App): string[] {
  return new AwsSolutionsChecks()
    .validateScope(scope)
    .violations.map((v) => `${v.severity} ${v.ruleName} at ${v.violatingResources[0]?.constructPath}`);
}

describe('OrderFeedIngester in a platform team’s own app', () => {
  it('synthesizes beside their resources with cdk-nag clean', () => {
    // Prepare
    const { app, stack } = platformApp();

    // Act
    const ingester = new OrderFeedIngester(stack, 'PartnerOrders', {
      partnerBaseUrl: 'https://partner.example.com',
      tokenParameterName: '/platform/partner-token',
      downstreamSubscribers: ['billing'],
      feeds: [
        { id: 'eu', vendorIds: ['v-eu'] },
        { id: 'uk', vendorIds: ['v-uk'] },
      ],
    });

    // Assess
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 3); // orders, cursor, history
    expect(ingester.feedPollers.map((feed) => feed.feed.id)).toEqual(['eu', 'uk']);
    expect(
      Object.keys(template.findResources('AWS::Lambda::Function')).every((id) =>
        id.startsWith('PartnerOrders'),
      ),
    ).toBe(true);
    expect(nagViolations(app)).toEqual([]);
  });

  it('types the two settings without a default as required props', () => {
    const { stack } = platformApp();

    // @ts-expect-error partnerBaseUrl and tokenParameterName are required
    expect(() => new OrderFeedIngester(stack, 'PartnerOrders', {})).toThrow(/partnerBaseUrl: is required/);
  });

  it('refuses bad props at synth, naming the prop and a Duration’s unit', () => {
    const { stack } = platformApp();

    expect(
      () =>
        new OrderFeedIngester(stack, 'PartnerOrders', {
          partnerBaseUrl: 'https://partner.example.com',
          tokenParameterName: '/t',
          pageSize: 500,
          minAge: Duration.seconds(90),
        }),
    ).toThrow(
      /Invalid OrderFeedIngester props:\n {2}- pageSize: must be an integer from 1 to 100[\s\S]*- minAge \(in minutes\): /,
    );
  });

  it('refuses a prop it does not know, a context key among them (from JavaScript)', () => {
    const { stack } = platformApp();
    const props = {
      partnerBaseUrl: 'https://partner.example.com',
      tokenParameterName: '/t',
      alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops',
    };

    expect(() => new OrderFeedIngester(stack, 'PartnerOrders', props)).toThrow(
      /- alarmTopicArn: unknown prop \(accepted: partnerBaseUrl, .*alarmTopic,/,
    );
  });

  it('keeps its props the configuration keys, and a feed’s props the per-feed keys', () => {
    expectTypeOf<(typeof PROP_KEYS)[keyof OrderFeedIngesterProps]>().toEqualTypeOf<ConfigKey>();
    expectTypeOf<(typeof PROP_KEYS)[Exclude<keyof FeedProps, 'id'>]>().toEqualTypeOf<
      (typeof FEED_KEYS)[number]
    >();
    // At run time too: the keys the construct checks are the keys SETTINGS declares.
    expect(new Set(Object.values(PROP_KEYS))).toEqual(new Set(Object.keys(SETTINGS)));
  });

  it('takes CDK types: an ITopic for alarms, Durations for times', () => {
    const { stack } = platformApp();
    const topic = new Topic(stack, 'OpsAlerts');

    new OrderFeedIngester(stack, 'PartnerOrders', {
      partnerBaseUrl: 'https://partner.example.com',
      tokenParameterName: '/platform/partner-token',
      alarmTopic: topic,
      alarmLag: Duration.hours(1),
    });

    const alarms = Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm');
    const lag = Object.entries(alarms).find(([id]) => id.includes('FeedLagAlarm'))?.[1];
    expect(lag?.Properties.Threshold).toBe(3600);
    expect(lag?.Properties.AlarmActions).toEqual([
      { Ref: stack.getLogicalId(topic.node.defaultChild as never) },
    ]);
  });

  it('scopes every metric of two instances in one account to its own instance', () => {
    const { stack } = platformApp();
    const props = { partnerBaseUrl: 'https://partner.example.com', tokenParameterName: '/platform/token' };

    const first = new OrderFeedIngester(stack, 'First', props);
    const second = new OrderFeedIngester(stack, 'Second', props);

    expect(first.instanceId).toBe('PlatformServices/First');
    const dimensionsOf = (prefix: string) =>
      Object.entries(Template.fromStack(stack).findResources('AWS::CloudWatch::Alarm'))
        .filter(([id, alarm]) => id.startsWith(prefix) && alarm.Properties.Namespace === 'OrderFeedIngester')
        .map(([, alarm]) => JSON.stringify(alarm.Properties.Dimensions));
    const [firstAlarms, secondAlarms] = [dimensionsOf('First'), dimensionsOf('Second')];
    expect(firstAlarms.length).toBeGreaterThan(5);
    expect(firstAlarms.every((dimensions) => dimensions.includes('"PlatformServices/First"'))).toBe(true);
    expect(secondAlarms.every((dimensions) => dimensions.includes('"PlatformServices/Second"'))).toBe(true);
    const environment = stack.resolve(
      (second.consumer.function.node.defaultChild as CfnFunction).environment,
    );
    expect(environment.variables.INGESTER_INSTANCE).toBe('PlatformServices/Second');
  });

  it('grants a subscriber’s consumer its queue and readers the orders and history tables', () => {
    const { stack } = platformApp();
    const ingester = new OrderFeedIngester(stack, 'PartnerOrders', {
      partnerBaseUrl: 'https://partner.example.com',
      tokenParameterName: '/platform/partner-token',
      downstreamSubscribers: ['billing'],
    });
    const role = new Role(stack, 'BillingRole', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });

    ingester.grantConsumeMessages('billing', role);
    ingester.grantReadOrders(role);
    ingester.grantReadHistory(role);

    const policy = Object.values(Template.fromStack(stack).findResources('AWS::IAM::Policy')).find((p) =>
      JSON.stringify(p.Properties.Roles).includes('BillingRole'),
    );
    const statements = JSON.stringify(policy?.Properties.PolicyDocument.Statement);
    expect(statements).toContain('sqs:ReceiveMessage');
    expect(statements).toContain(
      stack.resolve(ingester.subscriberQueue('billing').queueArn)['Fn::GetAtt'][0],
    );
    expect(statements).toContain('dynamodb:Query');
    expect(statements).toContain(stack.resolve(ingester.ordersTable.table.tableArn)['Fn::GetAtt'][0]);
    expect(statements).toContain(stack.resolve(ingester.historyTable?.table.tableArn)['Fn::GetAtt'][0]);
    expect(() => ingester.subscriberQueue('audit')).toThrow(
      /no downstream subscriber "audit" \(subscribers: billing\)/,
    );
  });
});

describe('this repository’s app with several feeds', () => {
  it('leaves cdk-nag clean', () => {
    const { app } = synthStack(FEEDS_CONFIG);

    expect(nagViolations(app)).toEqual([]);
  });
});

describe('this repository’s app', () => {
  it('names its stack from the stackName context, by default the name a deployed stack has', () => {
    const stackNamed = (stackName?: string) =>
      synthStack(REQUIRED_CONFIG, { context: stackName === undefined ? {} : { stackName } }).stack;

    expect(stackNamed().stackName).toBe(STACK_NAME);
    expect(stackNamed('OrderFeedIngester-staging').stackName).toBe('OrderFeedIngester-staging');
    expect(stackNamed('OrderFeedIngester-staging').ingester.instanceId).toBe(
      'OrderFeedIngester-staging/Default',
    );
    expect(() => stackNamed('bad name')).toThrow(/stackName: must be a CloudFormation stack name/);
  });
});
