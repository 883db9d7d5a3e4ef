import { describe, expect, it, vi } from 'vitest';
import { loadConsumerConfig } from '../../../functions/consumer/config.js';
import { loadPollerConfig } from '../../../functions/poller/config.js';

const VALID = {
  FEED_ID: 'orders',
  CURSOR_TABLE_NAME: 'cursors',
  PARTNER_BASE_URL: 'https://partner.example',
  PARTNER_TOKEN_PARAMETER: '/order-feed-ingester/partner-token',
  ORDERS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/1/orders',
  DOWNSTREAM_QUEUE_URLS: '{"billing":"https://sqs.us-east-1.amazonaws.com/1/billing"}',
  QUARANTINE_BUCKET_NAME: 'quarantine',
};

describe('poller configuration', () => {
  it('reads a complete environment, with defaults for what is optional', () => {
    const config = loadPollerConfig({ ...VALID, VENDOR_IDS: 'v-1, v-2', MIN_AGE_MINUTES: '90' });
    expect(config).toMatchObject({
      feedId: 'orders',
      pageSize: 100,
      maxPagesPerRun: undefined,
      enabled: true,
      minAgeMinutes: 90,
      vendorIds: ['v-1', 'v-2'],
      arrayQueryEncoding: 'repeat',
      downstreamQueueUrls: { billing: 'https://sqs.us-east-1.amazonaws.com/1/billing' },
      recoveryLookbackMinutes: undefined,
      maxContinuations: 1000,
    });
    expect(loadPollerConfig({ ...VALID, FEED_ENABLED: 'false', DOWNSTREAM_QUEUE_URLS: ' ' })).toMatchObject({
      enabled: false,
      downstreamQueueUrls: {},
    });
  });

  // Every bound, one step beyond, on both sides (synth and cold start): test/infra/stack.test.ts.
  it.each([
    [{ FEED_ID: '' }, /FEED_ID is required/],
    [{ CURSOR_TABLE_NAME: undefined }, /CURSOR_TABLE_NAME is required/],
    [{ PARTNER_BASE_URL: 'http://partner.example' }, /PARTNER_BASE_URL must use https/],
    [
      { PARTNER_BASE_URL: 'https://user:secret@partner.example' },
      /PARTNER_BASE_URL must not carry credentials/,
    ],
    [{ PAGE_SIZE: '0' }, 'PAGE_SIZE must be an integer from 1 to 100 (got "0")'],
    [{ PAGE_SIZE: '10.5' }, 'PAGE_SIZE must be an integer (got "10.5")'],
    [{ DOWNSTREAM_QUEUE_URLS: '["a"]' }, /DOWNSTREAM_QUEUE_URLS must be a JSON object of strings/],
    [{ VENDOR_IDS: 'a,,b' }, /VENDOR_IDS has an empty entry/],
    // The deployment configuration's rules hold at cold start too.
    [{ FEED_ID: 'orders/eu' }, /FEED_ID must be letters, digits/],
    [{ VENDOR_IDS: 'v-1,v-1' }, /VENDOR_IDS must not repeat a vendor id/],
    [{ VENDOR_IDS: 'v 1' }, /VENDOR_IDS has an invalid vendor id "v 1"/],
    [
      { PARTNER_TOKEN_PARAMETER: 'arn:aws:ssm:us-east-1:123456789012:parameter/x' },
      /PARTNER_TOKEN_PARAMETER must be the parameter name, not its ARN/,
    ],
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

  it('reads its timings from constants, never from a variable the deployment does not write', () => {
    // ORDER_IDS is gone: on a live feed it committed cursors of an order-filtered stream (reconcile --ids replays).
    const hidden = {
      ORDER_IDS: '12',
      SAFETY_MARGIN_SECONDS: '1',
      LEASE_GRACE_SECONDS: '1',
      AUTH_BACKOFF_INITIAL_SECONDS: '1',
      AUTH_BACKOFF_MAX_SECONDS: '1',
    };

    const config = loadPollerConfig({ ...VALID, ...hidden });

    expect(config).not.toHaveProperty('orderIds');
    expect(config).toMatchObject({
      safetyMarginMs: 20_000,
      leaseGraceMs: 60_000,
      authBackoff: { initialMs: 300_000, maxMs: 3_600_000 },
    });
  });

  it.each([
    [
      'a token pasted in place of the parameter name',
      'PARTNER_TOKEN_PARAMETER',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc',
      'eyJ',
    ],
    ['the base URL credentials', 'PARTNER_BASE_URL', 'https://user:s3cr3t@partner.example', 's3cr3t'],
  ])('never echoes %s it refuses', (_case, variable, value, secret) => {
    expect(() => loadPollerConfig({ ...VALID, [variable]: value })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(secret) }),
    );
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
    Object.assign(process.env, VALID, { PAGE_SIZE: '500', AWS_REGION: 'us-east-1' });
    vi.resetModules();
    await expect(import('../../../functions/poller/handler.js')).rejects.toThrow(
      'configuration error: PAGE_SIZE must be an integer from 1 to 100 (got "500")',
    );
  });

  it('fails importing the consumer handler when its table is not configured', async () => {
    delete process.env.ORDERS_TABLE_NAME;
    vi.resetModules();
    await expect(import('../../../functions/consumer/handler.js')).rejects.toThrow(
      'configuration error: ORDERS_TABLE_NAME is required but not set',
    );
  });
});
