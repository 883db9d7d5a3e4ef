import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type Env, readMetricsSettings } from '../config/settings.js';
import { type FunctionMetrics, INGESTER_DIMENSION } from './metric-names.js';

const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;

const none = () => undefined;
/** Records nothing: local mode without `--verbose`, the tests. */
export const NO_METRICS: FunctionMetrics = { count: none, publish: none };

/** Every metric under `service` and the ingester instance: no per-feed dimension (metric-names.ts). */
export function createObservability(defaultServiceName: string, env: Env) {
  const serviceName = env.POWERTOOLS_SERVICE_NAME || defaultServiceName;
  const logLevel = LOG_LEVELS.find((level) => level === env.POWERTOOLS_LOG_LEVEL?.toUpperCase());
  const logger = new Logger({ serviceName, ...(logLevel ? { logLevel } : {}) });
  if (env.POWERTOOLS_METRICS_DISABLED === 'true') return { logger, metrics: NO_METRICS };
  const { POWERTOOLS_METRICS_NAMESPACE: namespace, INGESTER_INSTANCE: instance } = readMetricsSettings(env);
  const powertools = new Metrics({
    serviceName,
    namespace,
    ...(instance === undefined ? {} : { defaultDimensions: { [INGESTER_DIMENSION]: instance } }),
  });
  const metrics: FunctionMetrics = {
    count: (name, value = 1) => powertools.addMetric(name, MetricUnit.Count, value),
    publish: () => powertools.publishStoredMetrics(),
  };
  return { logger, metrics };
}
