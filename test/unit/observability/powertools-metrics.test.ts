// The pollers' metrics port over Powertools: with a feed id, one EMF document publishes every metric under
// two dimension sets — `service` (the deployment-wide alarms) and `service` + `FeedId` (each feed's lag alarm
// and dashboard row, infra/constructs/monitoring.ts) — at every flush, not only the first.
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import { FEED_ID_DIMENSION, INGESTER_DIMENSION } from '../../../functions/core/observability/dimensions.js';
import { createObservability, powertoolsMetrics } from '../../../functions/core/observability/powertools.js';

type EmfDocument = {
  _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  [key: string]: unknown;
};

/** A real Metrics instance whose flush is captured as the EMF document it would print. */
function capturedMetrics(metrics = new Metrics({ serviceName: 'order-feed-poller', namespace: 'Test' })) {
  const documents: EmfDocument[] = [];
  vi.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => {
    documents.push(metrics.serializeMetrics() as unknown as EmfDocument);
    metrics.clearMetrics();
    metrics.clearDimensions();
    return metrics;
  });
  return { metrics, documents };
}

describe('powertoolsMetrics', () => {
  it('publishes a poller metric under service and under service + FeedId, flush after flush', () => {
    const { metrics, documents } = capturedMetrics();
    const port = powertoolsMetrics(metrics, { feedId: 'eu' });

    for (let run = 0; run < 2; run++) {
      port.count('PagesFetched', 3);
      port.publish();
    }

    expect(documents).toHaveLength(2);
    for (const document of documents) {
      expect(document._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([
        ['service', FEED_ID_DIMENSION],
        ['service'],
      ]);
      expect(document).toMatchObject({ service: 'order-feed-poller', FeedId: 'eu', PagesFetched: 3 });
    }
  });

  it('publishes under service alone without a feed (the consumer)', () => {
    const { metrics, documents } = capturedMetrics();
    const port = powertoolsMetrics(metrics);

    port.count('VersionsApplied');
    port.publish();

    expect(documents[0]?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service']]);
  });

  it('scopes every dimension set to its ingester instance (INGESTER_INSTANCE), so instances never mix', () => {
    vi.stubEnv('INGESTER_INSTANCE', 'StageA/Ingester');
    vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'Test');
    const { metrics, documents } = capturedMetrics(createObservability('order-feed-poller').metrics);
    const port = powertoolsMetrics(metrics, { feedId: 'eu' });

    port.count('AuthFailures');
    port.publish();

    expect(documents[0]?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([
      ['service', INGESTER_DIMENSION, FEED_ID_DIMENSION],
      ['service', INGESTER_DIMENSION],
    ]);
    expect(documents[0]).toMatchObject({ [INGESTER_DIMENSION]: 'StageA/Ingester', AuthFailures: 1 });
    vi.unstubAllEnvs();
  });
});
