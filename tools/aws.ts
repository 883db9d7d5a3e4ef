// The one way tools build their AWS clients (ops, local mode, chaos): AWS itself with the SDK's usual
// credential chain, or one emulator endpoint (then dummy credentials unless some are set, queue URLs not
// followed to their AWS host, and path-style S3). Built from explicit settings rather than by setting
// AWS_ENDPOINT_URL, so a tool can run in-process (tests) without changing the process environment.
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { EMULATOR_ENV } from './local/moto.js';

export interface AwsAt {
  /** The emulator endpoint, or undefined for AWS. */
  readonly endpoint: string | undefined;
  readonly region: string | undefined;
  readonly cloudFormation: CloudFormationClient;
  readonly lambda: LambdaClient;
  readonly events: EventBridgeClient;
  readonly dynamo: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly s3: S3Client;
  readonly ssm: SSMClient;
  destroy(): void;
}

export function createAwsClients(endpoint: string | undefined, env: NodeJS.ProcessEnv = process.env): AwsAt {
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || (endpoint ? EMULATOR_ENV.AWS_REGION : undefined);
  const base: Record<string, unknown> = { maxAttempts: 5, ...(region ? { region } : {}) };
  if (endpoint !== undefined) {
    base.endpoint = endpoint;
    // An emulator accepts any key; never fall through to a real profile's credentials by accident.
    base.credentials =
      env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
        ? {
            accessKeyId: env.AWS_ACCESS_KEY_ID,
            secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
            ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
          }
        : {
            accessKeyId: EMULATOR_ENV.AWS_ACCESS_KEY_ID,
            secretAccessKey: EMULATOR_ENV.AWS_SECRET_ACCESS_KEY,
            sessionToken: EMULATOR_ENV.AWS_SESSION_TOKEN,
          };
  }
  const emulated = endpoint !== undefined;
  const clients = {
    cloudFormation: new CloudFormationClient(base),
    lambda: new LambdaClient(base),
    events: new EventBridgeClient(base),
    dynamo: new DynamoDBClient(base),
    // Queue URLs from CloudFormation in an emulator name the AWS host (LOCAL-AWS.md).
    sqs: new SQSClient({ ...base, useQueueUrlAsEndpoint: !emulated }),
    s3: new S3Client({ ...base, forcePathStyle: emulated }),
    ssm: new SSMClient(base),
  };
  return {
    endpoint,
    region,
    ...clients,
    destroy() {
      for (const client of Object.values(clients)) client.destroy();
    },
  };
}
