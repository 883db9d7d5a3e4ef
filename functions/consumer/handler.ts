// Consumer Lambda: its configuration read and checked at cold start, the consumer built once per container
// with the real DynamoDB client (traced when tracing is on).
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
