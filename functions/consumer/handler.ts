// Consumer Lambda: wiring only. The configuration is read and checked at cold start, the DynamoDB client
// is created once per container, and createConsumerHandler (create-handler.ts) builds the handler.
// Tracing (X-Ray through Powertools Tracer) is loaded here only when it can be on (loadTracing).
import { createDynamoDbClient } from '../core/adapters/aws-clients.js';
import { createObservability, powertoolsMetrics } from '../core/observability/powertools.js';
import { loadTracing } from '../core/observability/tracing.js';
import { loadConsumerConfig } from './config.js';
import { createConsumerHandler } from './create-handler.js';

const config = loadConsumerConfig(process.env);
const { serviceName, logger, metrics } = createObservability('order-feed-consumer');
const { tracing, captureClient } = await loadTracing(serviceName);

export const handler = createConsumerHandler({
  orders: {
    client: captureClient(createDynamoDbClient()),
    tableName: config.ordersTableName,
    ...(config.history ? { history: config.history } : {}),
  },
  logger,
  metrics: powertoolsMetrics(metrics),
  tracing,
});
