// Consumer Lambda: wiring only. The configuration is read and checked at cold start, the DynamoDB client
// is created once per container, and createConsumerHandler (create-handler.ts) builds the handler.
import { createDynamoDbClient } from '../core/adapters/aws-clients.js';
import { DynamoOrderStore } from '../core/adapters/dynamo-order-store.js';
import { createObservability, powertoolsMetrics } from '../core/observability/powertools.js';
import { loadConsumerConfig } from './config.js';
import { createConsumerHandler } from './create-handler.js';

const config = loadConsumerConfig(process.env);
const { logger, metrics } = createObservability('order-feed-consumer');

export const handler = createConsumerHandler({
  store: new DynamoOrderStore(createDynamoDbClient(), config.ordersTableName),
  logger,
  metrics: powertoolsMetrics(metrics),
});
