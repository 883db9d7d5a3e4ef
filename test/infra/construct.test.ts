// The OrderFeedIngester construct in someone else's CDK app: a platform team's stack, its own construct id
// and props, cdk-nag's AWS Solutions pack clean; and its props stay the configuration contract (the same keys
// as the `orderFeed` context, checked by the same rules).
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { FEATURE_FLAGS } from 'order-feed-ingester/infra/feature-flags';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { type ConfigKey, type FEED_KEYS, SETTINGS } from '../../infra/config.js';
import {
  type FeedProps,
  OrderFeedIngester,
  type OrderFeedIngesterProps,
} from '../../infra/order-feed-ingester.js';
import { FEEDS_CONFIG, synthStack } from './synth.js';

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

  it('refuses bad props at synth, naming the key as cdk.json would', () => {
    const { stack } = platformApp();

    expect(
      () => new OrderFeedIngester(stack, 'PartnerOrders', { tokenParameterName: '/t', pageSize: 500 }),
    ).toThrow(
      /orderFeed\.partnerBaseUrl: is required[\s\S]*orderFeed\.pageSize: must be an integer from 1 to 100/,
    );
  });

  it('keeps its props the configuration keys, and a feed’s props the per-feed keys', () => {
    expectTypeOf<keyof OrderFeedIngesterProps>().toEqualTypeOf<ConfigKey>();
    expectTypeOf<Exclude<keyof FeedProps, 'id'>>().toEqualTypeOf<(typeof FEED_KEYS)[number]>();
    // At run time too: the keys the construct checks are the keys SETTINGS declares.
    expect(Object.keys(SETTINGS)).toContain('feeds');
  });
});

describe('this repository’s app with several feeds', () => {
  it('leaves cdk-nag clean', () => {
    const { app } = synthStack(FEEDS_CONFIG);

    expect(nagViolations(app)).toEqual([]);
  });
});
