// The functions' metrics over Powertools: every metric under `service` alone (no per-feed dimension: a feed's
// state is on its registry row, the fleet's in the dispatcher's gauges), one EMF document per flush; every set
// carries the ingester instance; POWERTOOLS_METRICS_DISABLED records nothing.
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import { INGESTER_DIMENSION } from '../../../functions/core/observability/metric-names.js';
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
  it('publishes every metric under service alone, flush after flush, the feeds of a batch in one document', () => {
    const documents = captureFlushes();
    const { metrics } = createObservability('order-feed-poller', ENV);
    const consumer = createObservability('order-feed-consumer', ENV).metrics;

    for (let run = 0; run < 2; run++) {
      // Two feeds of one invocation.
      metrics.count('PagesFetched', 3);
      metrics.count('PagesFetched', 1);
      metrics.publish();
    }
    consumer.count('VersionsApplied');
    consumer.publish();

    expect(documents.map(dimensionsOf)).toEqual([[['service']], [['service']], [['service']]]);
    for (const document of documents.slice(0, 2)) {
      expect(document).toMatchObject({ service: 'order-feed-poller', PagesFetched: [3, 1] });
      expect(document).not.toHaveProperty('FeedId');
    }
  });

  it('scopes every dimension set to its ingester instance (INGESTER_INSTANCE), so instances never mix', () => {
    const documents = captureFlushes();
    const env = { ...ENV, INGESTER_INSTANCE: 'StageA/Ingester' };
    const { metrics } = createObservability('order-feed-dispatcher', env);

    metrics.count('StaleFeeds', 2);
    metrics.publish();

    expect(dimensionsOf(documents[0])).toEqual([['service', INGESTER_DIMENSION]]);
    expect(documents[0]).toMatchObject({ [INGESTER_DIMENSION]: 'StageA/Ingester', StaleFeeds: 2 });
  });

  it('records nothing when POWERTOOLS_METRICS_DISABLED is true (local mode, the tests)', () => {
    expect(createObservability('order-feed-poller', { POWERTOOLS_METRICS_DISABLED: 'true' }).metrics).toBe(
      NO_METRICS,
    );
  });
});
