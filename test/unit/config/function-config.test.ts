import { describe, expect, it, vi } from 'vitest';
import { loadConsumerConfig } from '../../../functions/consumer/config.js';
import { initialFeedsText } from '../../../functions/core/fleet/feed-config.js';
import { loadDispatcherConfig } from '../../../functions/dispatcher/config.js';
import { loadPollerConfig } from '../../../functions/poller/config.js';

const VALID = {
  CURSOR_TABLE_NAME: 'cursors',
  PARTNER_BASE_URL: 'https://partner.example',
  ORDERS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/1/orders',
  DOWNSTREAM_QUEUE_URLS: '{"billing":"https://sqs.us-east-1.amazonaws.com/1/billing"}',
  QUARANTINE_BUCKET_NAME: 'quarantine',
};

describe('poller configuration', () => {
  it('reads the deployment’s settings, with defaults for what is optional', () => {
    const config = loadPollerConfig({ ...VALID, MAX_PAGES_PER_RUN: '5' });
    expect(config).toMatchObject({
      partnerBaseUrl: 'https://partner.example',
      maxPagesPerRun: 5,
      maxPageBodyBytes: 8 * 1024 * 1024,
      arrayQueryEncoding: 'repeat',
      downstreamQueueUrls: { billing: 'https://sqs.us-east-1.amazonaws.com/1/billing' },
      recoveryLookbackMinutes: undefined,
    });
    expect(loadPollerConfig({ ...VALID, DOWNSTREAM_QUEUE_URLS: ' ' })).toMatchObject({
      downstreamQueueUrls: {},
    });
  });

  // Every bound, one step beyond, on both sides (synth and cold start): test/infra/stack.test.ts.
  it.each([
    [{ CURSOR_TABLE_NAME: undefined }, /CURSOR_TABLE_NAME is required/],
    [{ PARTNER_BASE_URL: 'http://partner.example' }, /PARTNER_BASE_URL must use https/],
    [
      { PARTNER_BASE_URL: 'https://user:secret@partner.example' },
      /PARTNER_BASE_URL must not carry credentials/,
    ],
    [{ MAX_PAGES_PER_RUN: '0' }, 'MAX_PAGES_PER_RUN must be an integer from 1 to 100000 (got "0")'],
    [{ MAX_PAGES_PER_RUN: '10.5' }, 'MAX_PAGES_PER_RUN must be an integer (got "10.5")'],
    [{ DOWNSTREAM_QUEUE_URLS: '["a"]' }, /DOWNSTREAM_QUEUE_URLS must be a JSON object of strings/],
    [
      { DOWNSTREAM_QUEUE_URLS: '{"billing":""}' },
      /DOWNSTREAM_QUEUE_URLS entry "billing" must be a non-empty string/,
    ],
    [
      { POWERTOOLS_METRICS_NAMESPACE: 'AWS/Lambda' },
      /POWERTOOLS_METRICS_NAMESPACE must not start with the reserved/,
    ],
  ])('fails naming the variable: %o', (override, message) => {
    expect(() => loadPollerConfig({ ...VALID, ...override })).toThrow(message);
  });

  it('reads no feed’s settings (they are on its registry row) and its timings from constants', () => {
    // A per-feed poller's variables (before the fleet), even invalid ones, are not read; nor are timings.
    const hidden = {
      FEED_ID: 'orders/eu',
      PARTNER_TOKEN_PARAMETER: 'arn:aws:ssm:us-east-1:1:parameter/x',
      VENDOR_IDS: 'a,,b',
      PAGE_SIZE: '500',
      FEED_ENABLED: 'maybe',
      MAX_CONTINUATIONS: '-1',
      ORDER_IDS: '12',
      SAFETY_MARGIN_SECONDS: '1',
      LEASE_GRACE_SECONDS: '1',
      AUTH_BACKOFF_INITIAL_SECONDS: '1',
      AUTH_BACKOFF_MAX_SECONDS: '1',
    };

    const config = loadPollerConfig({ ...VALID, ...hidden });

    for (const field of ['feedId', 'tokenParameterName', 'vendorIds', 'pageSize', 'enabled', 'orderIds'])
      expect(config).not.toHaveProperty(field);
    expect(config).toMatchObject({
      safetyMarginMs: 20_000,
      leaseGraceMs: 60_000,
      authBackoff: { initialMs: 300_000, maxMs: 3_600_000 },
    });
  });

  it('never echoes the base URL credentials it refuses', () => {
    expect(() =>
      loadPollerConfig({ ...VALID, PARTNER_BASE_URL: 'https://user:s3cr3t@partner.example' }),
    ).toThrow(expect.objectContaining({ message: expect.not.stringContaining('s3cr3t') }));
  });
});

describe('dispatcher configuration', () => {
  const DISPATCHER = { CURSOR_TABLE_NAME: 'cursors', POLLER_FUNCTION_NAME: 'poller' };

  it('reads the poller, the budget and the initial set, every feed checked by the registry’s rules', () => {
    const INITIAL_FEEDS = initialFeedsText({ tokenParameterName: '/t' }, [
      { id: 'eu', vendorIds: ['v-1'] },
      { id: 'uk', paused: true, pageSize: 50 },
    ]);

    const config = loadDispatcherConfig({ ...DISPATCHER, MAX_CONCURRENT_POLLERS: '4' }, INITIAL_FEEDS);

    expect(config).toMatchObject({
      pollerFunctionName: 'poller',
      dispatch: { maxConcurrentPollers: 4, staleAfterMs: 30 * 60_000, batchSize: 25 },
      accountConcurrencyShare: 0.3,
    });
    expect(config.initialFeeds).toEqual([
      {
        feedId: 'eu',
        state: 'enabled',
        config: expect.objectContaining({ vendorIds: ['v-1'], pageSize: 100 }),
      },
      {
        feedId: 'uk',
        state: 'paused',
        config: expect.objectContaining({ pageSize: 50, scheduleMinutes: 1 }),
      },
    ]);
    expect(loadDispatcherConfig(DISPATCHER).initialFeeds).toEqual([]);
  });

  it.each([
    [{ POLLER_FUNCTION_NAME: undefined }, 'POLLER_FUNCTION_NAME is required but not set'],
    [{ MAX_CONCURRENT_POLLERS: '0' }, 'MAX_CONCURRENT_POLLERS must be an integer from 1 to 1000 (got "0")'],
    [{ STALE_AFTER_MINUTES: '1' }, 'STALE_AFTER_MINUTES must be an integer from 2 to 1440 (got "1")'],
    [
      { INITIAL_FEEDS_OBJECT: 'https://bucket/key' },
      'configuration error: INITIAL_FEEDS_OBJECT must be an s3://bucket/key URL',
    ],
  ])('fails naming the variable: %o', (override, message) => {
    expect(() => loadDispatcherConfig({ ...DISPATCHER, ...override })).toThrow(message);
  });

  it.each([
    [
      initialFeedsText({}, [{ id: 'eu', tokenParameterName: '/t', pageSize: 0 }]),
      'configuration error: INITIAL_FEEDS_OBJECT feeds[0].pageSize: must be an integer from 1 to 100',
    ],
    ['{feeds', 'configuration error: INITIAL_FEEDS_OBJECT feeds: is not JSON'],
  ])('fails on a bad initial set naming its object, feed and key: %s', (text, message) => {
    expect(() => loadDispatcherConfig(DISPATCHER, text)).toThrow(message);
  });
});

describe('consumer configuration', () => {
  it('needs the orders table name', () => {
    expect(loadConsumerConfig({ ORDERS_TABLE_NAME: 'orders' })).toEqual({ ordersTableName: 'orders' });
    expect(() => loadConsumerConfig({})).toThrow(/ORDERS_TABLE_NAME is required but not set/);
  });

  it('keeps history only when HISTORY_TABLE_NAME is set, for 400 days unless HISTORY_RETENTION_DAYS says', () => {
    const withHistory = { ORDERS_TABLE_NAME: 'orders', HISTORY_TABLE_NAME: 'history' };

    expect(loadConsumerConfig({ ORDERS_TABLE_NAME: 'orders' })).not.toHaveProperty('history');
    expect(loadConsumerConfig(withHistory).history).toEqual({ tableName: 'history', retentionDays: 400 });
    expect(loadConsumerConfig({ ...withHistory, HISTORY_RETENTION_DAYS: '0' }).history?.retentionDays).toBe(
      0,
    );
  });
});

describe('cold start', () => {
  it('fails importing the poller handler with a message naming the bad variable', async () => {
    for (const [name, value] of Object.entries({
      ...VALID,
      MAX_PAGE_BODY_BYTES: '500',
      AWS_REGION: 'us-east-1',
    }))
      vi.stubEnv(name, value);
    vi.resetModules();
    await expect(import('../../../functions/poller/handler.js')).rejects.toThrow(
      'configuration error: MAX_PAGE_BODY_BYTES must be an integer from 2097152 to 67108864 (got "500")',
    );
  });

  it('fails importing the dispatcher handler with a message naming the object of its initial set', async () => {
    for (const [name, value] of Object.entries({
      CURSOR_TABLE_NAME: 'cursors',
      POLLER_FUNCTION_NAME: 'poller',
      INITIAL_FEEDS_OBJECT: 'initial-feeds.json',
    }))
      vi.stubEnv(name, value);
    vi.resetModules();
    await expect(import('../../../functions/dispatcher/handler.js')).rejects.toThrow(
      'configuration error: INITIAL_FEEDS_OBJECT must be an s3://bucket/key URL (got "initial-feeds.json")',
    );
  });

  it('fails importing the consumer handler when its table is not configured', async () => {
    vi.stubEnv('ORDERS_TABLE_NAME', undefined);
    vi.resetModules();
    await expect(import('../../../functions/consumer/handler.js')).rejects.toThrow(
      'configuration error: ORDERS_TABLE_NAME is required but not set',
    );
  });
});
