// Poller Lambda: wiring only. The configuration is read and checked at cold start, the AWS clients are
// created once per container, and createPollerHandler (create-handler.ts) builds the handler from them.
// Tracing (X-Ray through Powertools Tracer) is loaded here only when it can be on (loadTracing).
import {
  createDynamoDbClient,
  createS3Client,
  createSqsClient,
  createSsmClient,
} from '../core/adapters/aws-clients.js';
import { DynamoCursorStore } from '../core/adapters/dynamo-cursor-store.js';
import { createLambdaClient, LambdaContinuation } from '../core/adapters/lambda-continuation.js';
import { S3Quarantine } from '../core/adapters/s3-quarantine.js';
import { SqsFanoutPublisher } from '../core/adapters/sqs-fanout-publisher.js';
import { SsmTokenProvider } from '../core/adapters/ssm-token.js';
import { createObservability, powertoolsMetrics } from '../core/observability/powertools.js';
import { loadTracing } from '../core/observability/tracing.js';
import { loadPollerConfig } from './config.js';
import { createPollerHandler } from './create-handler.js';
import { createBudgetedPartner } from './partner.js';

const config = loadPollerConfig(process.env);
const { serviceName, logger, metrics } = createObservability('order-feed-poller');
const { tracing, captureClient } = await loadTracing(serviceName);
const tokens = new SsmTokenProvider(captureClient(createSsmClient()), config.tokenParameterName);
const dynamo = captureClient(createDynamoDbClient());

export const handler = createPollerHandler({
  config,
  logger,
  metrics: powertoolsMetrics(metrics, { feedId: config.feedId }),
  tracing,
  tokens,
  cursorStore: new DynamoCursorStore(dynamo, config.cursorTableName),
  partner: createBudgetedPartner(config, { token: () => tokens.token(), dynamo, logger }),
  // Captured SQS sends carry the trace header, so each message's AWSTraceHeader links the consumer's
  // trace to this run's.
  publisher: new SqsFanoutPublisher(captureClient(createSqsClient()), [
    config.ordersQueueUrl,
    ...Object.values(config.downstreamQueueUrls),
  ]),
  quarantine: new S3Quarantine(captureClient(createS3Client()), config.quarantineBucketName),
  // The continuation's Invoke shows in this run's trace. The SDK forwards the invocation's trace header on
  // every call inside Lambda (captured or not), so the next run joins this trace (functions/README.md).
  continuation: new LambdaContinuation(captureClient(createLambdaClient())),
});
