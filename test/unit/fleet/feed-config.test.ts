// A feed's registry configuration: what ops `feeds add|set` and the dispatcher's initial set are checked with.
// The settings' own rules decide (config/settings.ts); these tests show that they are the ones applied, that
// every issue names its key, and what the registry adds (order ids for reconcile feeds, fromTimestamp).
import { describe, expect, it } from 'vitest';
import {
  changedFeedConfig,
  FeedConfigError,
  initialFeedsText,
  parseFeedConfig,
  parseInitialFeeds,
} from '../../../functions/core/fleet/feed-config.js';

const TOKEN = '/order-feed-ingester/partner-token';

/** The issues of a configuration that must be refused. */
function issuesOf(run: () => unknown): Array<{ key: string; message: string }> {
  try {
    run();
  } catch (error) {
    if (error instanceof FeedConfigError) return [...error.issues];
    throw error;
  }
  throw new Error('accepted');
}

describe('a feed configuration', () => {
  it('applies the defaults: a stream feed of the settings page size, polled every minute', () => {
    expect(parseFeedConfig({ tokenParameterName: TOKEN })).toEqual({
      tokenParameterName: TOKEN,
      purpose: 'stream',
      pageSize: 100,
      scheduleMinutes: 1,
    });
  });

  it('checks each key by the settings rule and names every key at fault at once', () => {
    const issues = issuesOf(() =>
      parseFeedConfig({
        tokenParameterName: 'arn:aws:ssm:us-east-1:123456789012:parameter/t',
        vendorIds: ['v-1', 'v-1'],
        pageSize: 101,
        scheduleMinutes: 61,
        minAgeMinutes: 0,
        partnerBaseUrl: 'http://partner.example',
      }),
    );
    expect(issues.map(({ key }) => key)).toEqual([
      'tokenParameterName',
      'partnerBaseUrl',
      'vendorIds',
      'minAgeMinutes',
      'pageSize',
      'scheduleMinutes',
    ]);
    expect(issues).toContainEqual({ key: 'vendorIds', message: 'must not repeat a vendor id' });
    expect(issues).toContainEqual({ key: 'pageSize', message: 'must be an integer from 1 to 100' });
    expect(issues).toContainEqual({
      key: 'tokenParameterName',
      message: 'must be the parameter name, not its ARN',
    });
  });

  it('refuses an unknown key, listing the accepted ones, and a missing token parameter', () => {
    const issues = issuesOf(() => parseFeedConfig({ pagesize: 5 }));
    expect(issues[0]).toMatchObject({
      key: 'pagesize',
      message: expect.stringMatching(/^unknown key \(accepted: /),
    });
    expect(issues[1]).toEqual({ key: 'tokenParameterName', message: 'is required' });
  });

  it('keeps order ids exact as text and allows them only on a reconcile feed', () => {
    const big = '9223372036854775807';
    expect(
      parseFeedConfig({ tokenParameterName: TOKEN, purpose: 'reconcile', orderIds: [big, 42, 7n] }).orderIds,
    ).toEqual([big, '42', '7']);
    expect(issuesOf(() => parseFeedConfig({ tokenParameterName: TOKEN, orderIds: ['1'] }))).toEqual([
      { key: 'orderIds', message: 'is only for a feed whose purpose is "reconcile"' },
    ]);
    const bad = (orderIds: unknown) =>
      issuesOf(() => parseFeedConfig({ tokenParameterName: TOKEN, purpose: 'reconcile', orderIds }))[0];
    expect(bad(['9223372036854775808'])?.message).toMatch(/invalid order id "9223372036854775808"/);
    expect(bad(['-1'])?.message).toMatch(/invalid order id "-1"/);
    expect(bad(Array.from({ length: 101 }, (_, i) => i))?.message).toBe('must list at most 100 order ids');
    expect(bad(['1', 1])?.message).toBe('must not repeat an order id');
  });

  it('takes fromTimestamp only with an offset, and keeps it in UTC', () => {
    expect(
      parseFeedConfig({ tokenParameterName: TOKEN, fromTimestamp: '2026-01-01T01:00:00+01:00' })
        .fromTimestamp,
    ).toBe('2026-01-01T00:00:00.000Z');
    for (const fromTimestamp of ['2026-01-01T00:00:00', '2026-02-30T00:00:00Z', 'yesterday']) {
      expect(issuesOf(() => parseFeedConfig({ tokenParameterName: TOKEN, fromTimestamp }))[0]?.key).toBe(
        'fromTimestamp',
      );
    }
  });

  it('applies `feeds set` changes over the stored configuration and checks the result whole', () => {
    const stored = parseFeedConfig({ tokenParameterName: TOKEN, vendorIds: ['v-1'], minAgeMinutes: 30 });
    expect(changedFeedConfig(stored, { pageSize: 50, minAgeMinutes: null })).toEqual({
      tokenParameterName: TOKEN,
      purpose: 'stream',
      vendorIds: ['v-1'],
      pageSize: 50,
      scheduleMinutes: 1,
    });
    expect(issuesOf(() => changedFeedConfig(stored, { orderIds: ['1'] }))[0]?.key).toBe('orderIds');
  });
});

describe("the deployment's initial set of feeds", () => {
  it('reads the shared keys once and each feed over them; a switched-off feed is paused', () => {
    const text = initialFeedsText({ tokenParameterName: TOKEN, pageSize: 50 }, [
      { id: 'eu', vendorIds: ['v-eu'] },
      { id: 'us', tokenParameterName: '/order-feed-ingester/us-token', paused: true },
    ]);
    expect(parseInitialFeeds(text)).toEqual([
      {
        feedId: 'eu',
        state: 'enabled',
        config: {
          tokenParameterName: TOKEN,
          purpose: 'stream',
          pageSize: 50,
          scheduleMinutes: 1,
          vendorIds: ['v-eu'],
        },
      },
      {
        feedId: 'us',
        state: 'paused',
        config: {
          tokenParameterName: '/order-feed-ingester/us-token',
          purpose: 'stream',
          pageSize: 50,
          scheduleMinutes: 1,
        },
      },
    ]);
  });

  it('names the feed and the key of every issue', () => {
    const text = initialFeedsText({ tokenParameterName: TOKEN }, [
      { id: 'eu' },
      { id: 'eu' },
      { id: 'bad id', pageSize: 0 },
    ]);
    expect(issuesOf(() => parseInitialFeeds(text)).map(({ key }) => key)).toEqual([
      'feeds[1].id',
      'feeds[2].id',
      'feeds[2].pageSize',
    ]);
    expect(issuesOf(() => parseInitialFeeds('{'))).toEqual([{ key: 'feeds', message: 'is not JSON' }]);
  });
});
