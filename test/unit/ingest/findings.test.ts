// Findings are visible to operators (issue 11 point 12): a metric per kind, one log line per record that
// names the order, version and codes but carries no customer data.
import { describe, expect, it } from 'vitest';
import { findingMetricName } from '../../../functions/core/ingest/hand-off.js';
import { pollFeed } from '../../../functions/core/ingest/poll-feed.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import { sampleOrder } from '../../fixtures/orders.js';
import {
  CountingMetrics,
  MemoryCursorStore,
  MemoryLog,
  MemoryQuarantine,
  RecordingPublisher,
  ScriptedPartner,
} from '../../support/fakes.js';
import { pollerConfig } from '../../support/poller-config.js';

const SETTINGS: PollerConfig = pollerConfig({ maxPagesPerRun: 10 });

describe('findings on published versions', () => {
  it('are counted per kind and logged per record by order id, version and codes only', async () => {
    const drifted = { ...sampleOrder({ id: 7, version: 3, vendorId: 'Secret Vendor' }), loyaltyTier: 'gold' };
    const clean = sampleOrder({ id: 8 });
    const deps = {
      cursorStore: new MemoryCursorStore(),
      partner: new ScriptedPartner(() => ({ data: [drifted, clean], hasMore: false, nextPageId: 'c1' })),
      publisher: new RecordingPublisher(),
      quarantine: new MemoryQuarantine(),
      metrics: new CountingMetrics(),
      log: new MemoryLog(),
      now: () => 1_000_000,
    };

    await pollFeed(deps, SETTINGS, { owner: 'run-1', deadline: 2_000_000, leaseExpiresAt: 1_060_000 });

    expect(deps.metrics.counts.FindingUnknownField).toBe(1);
    const lines = deps.log.lines.filter((line) => line.message === 'order version has findings');
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'order version has findings',
        attributes: {
          feedId: 'feed-a',
          orderId: 7,
          version: 3,
          findingCodes: ['unknown-field'],
          correlationId: 'poll:run-1:1',
        },
      },
    ]);
    // No payload text (names, vendor ids, the unknown field's value) reaches the log.
    const logged = JSON.stringify(deps.log.lines);
    expect(logged).not.toContain('gold');
    expect(logged).not.toContain('Secret Vendor');
  });

  it('names each kind as a metric of its own', () => {
    expect(findingMetricName('payments-sum-mismatch')).toBe('FindingPaymentsSumMismatch');
    expect(findingMetricName('invalid-unicode-replaced')).toBe('FindingInvalidUnicodeReplaced');
  });
});
