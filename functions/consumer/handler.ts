import { createDynamoDbClient } from '../core/adapters/aws-clients.js';
import { createObservability } from '../core/observability/powertools.js';
import { traced } from '../core/observability/tracer.js';
import { buildConsumer } from './build-consumer.js';
import { loadConsumerConfig } from './config.js';

export const handler = buildConsumer(
  { dynamo: traced(createDynamoDbClient()) },
  loadConsumerConfig(process.env),
  createObservability('order-feed-consumer', process.env),
);
