import { createDynamoDbClient, createS3Client, createSsmClient } from '../core/adapters/aws-clients.js';
import { createLambdaClient } from '../core/adapters/lambda-invoke.js';
import { createObservability } from '../core/observability/powertools.js';
import { traced } from '../core/observability/tracer.js';
import { buildDispatcher } from './build-dispatcher.js';
import { readDispatcherConfig } from './config.js';

export const handler = buildDispatcher(
  {
    dynamo: traced(createDynamoDbClient()),
    lambda: traced(createLambdaClient()),
    ssm: traced(createSsmClient()),
  },
  // Top-level await: the initial set is read once, at cold start (a bad value fails the init, naming its key).
  await readDispatcherConfig(process.env, traced(createS3Client())),
  createObservability('order-feed-dispatcher', process.env),
);
