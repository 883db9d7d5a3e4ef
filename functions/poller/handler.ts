// Poller Lambda: wiring only. The configuration is read and checked at cold start, the AWS clients are
// created once per container, and createPollerHandler (create-handler.ts) builds the handler from them.
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
import { createPartnerClient } from '../core/partner/client.js';
import { loadPollerConfig } from './config.js';
import { createPollerHandler } from './create-handler.js';

const config = loadPollerConfig(process.env);
const { logger, metrics } = createObservability('order-feed-poller');
const tokens = new SsmTokenProvider(createSsmClient(), config.tokenParameterName);

export const handler = createPollerHandler({
  config,
  logger,
  metrics: powertoolsMetrics(metrics, { feedId: config.feedId }),
  tokens,
  cursorStore: new DynamoCursorStore(createDynamoDbClient(), config.cursorTableName),
  partner: createPartnerClient({
    baseUrl: config.partnerBaseUrl,
    token: () => tokens.token(),
    arrayEncoding: config.arrayQueryEncoding,
  }),
  publisher: new SqsFanoutPublisher(createSqsClient(), [
    config.ordersQueueUrl,
    ...Object.values(config.downstreamQueueUrls),
  ]),
  quarantine: new S3Quarantine(createS3Client(), config.quarantineBucketName),
  continuation: new LambdaContinuation(createLambdaClient()),
});
