// The functions' metrics over Powertools: a poller publishes every metric under two dimension sets in one EMF
// document, `service` (the deployment-wide alarms) and `service` + `FeedId` (each feed's lag alarm and dashboard
// row), at every flush; every set carries the ingester instance; POWERTOOLS_METRICS_DISABLED records nothing.
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import { FEED_ID_DIMENSION, INGESTER_DIMENSION } from '../../../functions/core/observability/metric-names.js';
import { createObservability, NO_METRICS } from '../../../functions/core/observability/powertools.js';

type EmfDocument = {
  _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] };
  [key: string]: unknown;
};

/** Every flush captured as the EMF document it would print. */
function captureFlushes(): EmfDocument[] {
  const documents: EmfDocument[] = [];
  vi.spyOn(Metrics.prototype, 'publishStoredMetrics').mockImplementation(function (this: Metrics) {
    documents.push(this.serializeMetrics() as unknown as EmfDocument);
    this.clearMetrics();
    this.clearDimensions();
    return this;
  });
  return documents;
}

const ENV = { POWERTOOLS_METRICS_NAMESPACE: 'Test' };
const dimensionsOf = (document?: EmfDocument) => document?._aws.CloudWatchMetrics[0]?.Dimensions;

describe('createObservability metrics', () => {
  it('publishes a poller metric under service and service + FeedId flush after flush, a consumer one under service', () => {
    const documents = captureFlushes();
    const { metrics } = createObservability('order-feed-poller', ENV, 'eu');
    const consumer = createObservability('order-feed-consumer', ENV).metrics;

    for (let run = 0; run < 2; run++) {
      metrics.count('PagesFetched', 3);
      metrics.publish();
    }
    consumer.count('VersionsApplied');
    consumer.publish();

    const consumerDocument = documents.pop();
    expect(dimensionsOf(consumerDocument)).toEqual([['service']]);
    expect(documents.map(dimensionsOf)).toEqual([
      [['service', FEED_ID_DIMENSION], ['service']],
      [['service', FEED_ID_DIMENSION], ['service']],
    ]);
    for (const document of documents) {
      expect(document).toMatchObject({ service: 'order-feed-poller', FeedId: 'eu', PagesFetched: 3 });
    }
  });

  it('scopes every dimension set to its ingester instance (INGESTER_INSTANCE), so instances never mix', () => {
    const documents = captureFlushes();
    const env = { ...ENV, INGESTER_INSTANCE: 'StageA/Ingester' };
    const { metrics } = createObservability('order-feed-poller', env, 'eu');

    metrics.count('AuthFailures');
    metrics.publish();

    expect(dimensionsOf(documents[0])).toEqual([
      ['service', INGESTER_DIMENSION, FEED_ID_DIMENSION],
      ['service', INGESTER_DIMENSION],
    ]);
    expect(documents[0]).toMatchObject({ [INGESTER_DIMENSION]: 'StageA/Ingester', AuthFailures: 1 });
  });

  it('records nothing when POWERTOOLS_METRICS_DISABLED is true (local mode, the tests)', () => {
    expect(createObservability('order-feed-poller', { POWERTOOLS_METRICS_DISABLED: 'true' }).metrics).toBe(
      NO_METRICS,
    );
  });
});
