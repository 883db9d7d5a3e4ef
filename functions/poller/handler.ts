import {
  createDynamoDbClient,
  createS3Client,
  createSqsClient,
  createSsmClient,
} from '../core/adapters/aws-clients.js';
import { createLambdaClient } from '../core/adapters/lambda-continuation.js';
import { createObservability } from '../core/observability/powertools.js';
import { traced } from '../core/observability/tracer.js';
import { buildPoller } from './build-poller.js';
import { loadPollerConfig } from './config.js';

const config = loadPollerConfig(process.env);

export const handler = buildPoller(
  {
    dynamo: traced(createDynamoDbClient()),
    // The request budget's calls: one retry at most, inside each call's own deadline (a slow budget store
    // must not hold up a partner request; it goes unpaced instead).
    budgetDynamo: traced(createDynamoDbClient(2)),
    // Captured sends carry the trace header: each message's AWSTraceHeader links the consumer's trace to this.
    sqs: traced(createSqsClient()),
    s3: traced(createS3Client()),
    ssm: traced(createSsmClient()),
    selfInvoke: traced(createLambdaClient()),
  },
  config,
  createObservability('order-feed-poller', process.env, config.feedId),
);
