// Complete poller configurations for tests that build the poller or run pollFeed with fake ports (no
// environment to read): small pages, short margins; and no AWS clients (every port a fake).
import type { PollSettings } from '../../functions/core/ingest/ports.js';
import type { PollerClients } from '../../functions/poller/build-poller.js';
import type { PollerConfig } from '../../functions/poller/config.js';

export const NO_CLIENTS = {} as PollerClients;

/** The deployment's settings of the poller. */
export function pollerConfig(overrides: Partial<PollerConfig> = {}): PollerConfig {
  return {
    cursorTableName: 'cursors',
    partnerBaseUrl: 'https://partner.example.com',
    ordersQueueUrl: 'orders',
    downstreamQueueUrls: {},
    quarantineBucketName: 'quarantine',
    maxPagesPerRun: 10,
    maxPageBodyBytes: 8 * 1024 * 1024,
    arrayQueryEncoding: 'repeat',
    recoveryLookbackMinutes: undefined,
    partnerRequestsPerSecond: undefined,
    safetyMarginMs: 1_000,
    leaseGraceMs: 1_000,
    authBackoff: { initialMs: 60_000, maxMs: 600_000 },
    ...overrides,
  };
}

/** One feed's settings as pollFeed takes them (its row's config with the deployment's). */
export function pollSettings(overrides: Partial<PollSettings> = {}): PollSettings {
  const {
    partnerBaseUrl,
    maxPagesPerRun,
    maxPageBodyBytes,
    recoveryLookbackMinutes,
    leaseGraceMs,
    authBackoff,
  } = pollerConfig();
  return {
    feedId: 'feed-a',
    tokenParameterName: '/token',
    partnerBaseUrl,
    pageSize: 10,
    vendorIds: undefined,
    orderIds: undefined,
    fromTimestamp: undefined,
    minAgeMinutes: undefined,
    maxPagesPerRun,
    maxPageBodyBytes,
    recoveryLookbackMinutes,
    leaseGraceMs,
    authBackoff,
    ...overrides,
  };
}
