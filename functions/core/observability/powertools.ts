// Logger and Metrics for a function, configured once per container. Service name and namespace come
// from POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE when set (the stack sets them); the
// namespace is checked at cold start by its declaration (core/config/settings.ts).
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { readMetricsSettings } from '../config/settings.js';
import { FEED_ID_DIMENSION, INGESTER_DIMENSION } from './dimensions.js';

export function createObservability(defaultServiceName: string) {
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME || defaultServiceName;
  const logger = new Logger({ serviceName });
  const { POWERTOOLS_METRICS_NAMESPACE: namespace, INGESTER_INSTANCE: instance } = readMetricsSettings(
    process.env,
  );
  // A default dimension is part of every dimension set, the per-feed one included.
  const metrics = new Metrics({
    serviceName,
    namespace,
    ...(instance === undefined ? {} : { defaultDimensions: { [INGESTER_DIMENSION]: instance } }),
  });
  return { serviceName, logger, metrics };
}

/** What the handlers need of a metrics sink: Powertools Metrics here, a no-op or a recorder in tests. */
export interface FunctionMetrics {
  count(name: string, value?: number): void;
  milliseconds(name: string, value: number): void;
  seconds(name: string, value: number): void;
  /** Flushes what the invocation recorded (one EMF document). */
  publish(): void;
}

/** Records nothing: local mode without `--metrics`, benchmarks and tests. */
export const NO_METRICS: FunctionMetrics = {
  count: () => undefined,
  milliseconds: () => undefined,
  seconds: () => undefined,
  publish: () => undefined,
};

/**
 * The functions' small metrics port over Powertools Metrics: counts, two durations, and the flush. With a
 * `feedId` (the pollers) every metric is published under two dimension sets in the same EMF document: `service`
 * alone, which the deployment-wide alarms watch whatever the number of feeds, and `service` + `FeedId`, which
 * each feed's lag alarm and dashboard row read. (Powertools clears added dimensions at every flush, so they are
 * added again before each one.)
 */
export function powertoolsMetrics(metrics: Metrics, perFeed?: { feedId: string }): FunctionMetrics {
  return {
    count: (name, value = 1) => metrics.addMetric(name, MetricUnit.Count, value),
    milliseconds: (name, value) => metrics.addMetric(name, MetricUnit.Milliseconds, value),
    seconds: (name, value) => metrics.addMetric(name, MetricUnit.Seconds, value),
    publish: () => {
      if (perFeed) {
        metrics.addDimension(FEED_ID_DIMENSION, perFeed.feedId);
        // An extra dimension set with nothing added: the default dimensions alone (`service`).
        metrics.addDimensions({});
      }
      metrics.publishStoredMetrics();
    },
  };
}
