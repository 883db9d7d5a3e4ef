import { createDynamoDbClient, createSsmClient } from '../core/adapters/aws-clients.js';
import { createLambdaClient } from '../core/adapters/lambda-invoke.js';
import { createObservability } from '../core/observability/powertools.js';
import { traced } from '../core/observability/tracer.js';
import { buildDispatcher } from './build-dispatcher.js';
import { loadDispatcherConfig } from './config.js';

export const handler = buildDispatcher(
  {
    dynamo: traced(createDynamoDbClient()),
    lambda: traced(createLambdaClient()),
    ssm: traced(createSsmClient()),
  },
  loadDispatcherConfig(process.env),
  createObservability('order-feed-dispatcher', process.env),
);
