// A complete poller configuration for tests that build the poller with fake ports (no environment to read):
// small pages, short margins, continuation off unless a test turns it on; and no AWS clients (every port a fake).
import type { PollerClients } from '../../functions/poller/build-poller.js';
import type { PollerConfig } from '../../functions/poller/config.js';

export const NO_CLIENTS = {} as PollerClients;

export function pollerConfig(overrides: Partial<PollerConfig> = {}): PollerConfig {
  return {
    feedId: 'feed-a',
    cursorTableName: 'cursors',
    partnerBaseUrl: 'https://partner.example.com',
    tokenParameterName: '/token',
    ordersQueueUrl: 'orders',
    downstreamQueueUrls: {},
    quarantineBucketName: 'quarantine',
    pageSize: 10,
    maxPagesPerRun: 10,
    maxPageBodyBytes: 8 * 1024 * 1024,
    enabled: true,
    maxContinuations: 0,
    minAgeMinutes: undefined,
    vendorIds: undefined,
    arrayQueryEncoding: 'repeat',
    recoveryLookbackMinutes: undefined,
    partnerRequestsPerSecond: undefined,
    safetyMarginMs: 1_000,
    leaseGraceMs: 1_000,
    authBackoff: { initialMs: 60_000, maxMs: 600_000 },
    ...overrides,
  };
}
