// The SDK honours AWS_ENDPOINT_URL on its own; SQS must also not follow queue URLs to their host, because an
// emulator's CloudFormation gives queue URLs on the real AWS host.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';

const endpointOverridden = (service: string): boolean =>
  Boolean(process.env.AWS_ENDPOINT_URL || process.env[`AWS_ENDPOINT_URL_${service}`]);

export const createDynamoDbClient = (maxAttempts = 5): DynamoDBClient => new DynamoDBClient({ maxAttempts });

export const createSqsClient = (): SQSClient =>
  new SQSClient({ maxAttempts: 5, useQueueUrlAsEndpoint: !endpointOverridden('SQS') });

// Path-style addressing keeps bucket names out of the host name, which emulators need.
export const createS3Client = (): S3Client =>
  new S3Client({ maxAttempts: 5, forcePathStyle: endpointOverridden('S3') });

export const createSsmClient = (): SSMClient => new SSMClient({ maxAttempts: 3 });
