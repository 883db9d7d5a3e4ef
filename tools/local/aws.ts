// AWS SDK clients for local mode, all pointed at one AWS-compatible endpoint (moto). Created once per
// endpoint and injected into the local-runtime modules; the handlers build their own clients from the
// environment that `emulatorEnvironment` describes.
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { isLoopbackHost } from '../../functions/core/partner/url-policy.js';
import { EMULATOR_ENV } from './moto.js';

export class LocalEndpointError extends Error {
  override readonly name = 'LocalEndpointError';
}

/** One endpoint in the two spellings local mode needs. */
export interface AwsEndpoint {
  /** For the SDK: `http://127.0.0.1:PORT` for a loopback host (skips a `localhost` → ::1 attempt). */
  readonly sdk: string;
  /** For `cdk deploy`: `http://localhost:PORT` (asset upload needs the word `localhost`, LOCAL-AWS.md). */
  readonly deploy: string;
  /** True for 127.0.0.0/8, ::1 and localhost: an emulator on this machine. */
  readonly loopback: boolean;
}

export function parseAwsEndpoint(raw: string): AwsEndpoint {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new LocalEndpointError(`--aws-endpoint must be a URL such as http://localhost:5000 (got "${raw}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new LocalEndpointError(`--aws-endpoint must be an http(s) URL (got ${url.protocol})`);
  }
  if (url.pathname !== '/' || url.search !== '' || url.username !== '' || url.password !== '') {
    throw new LocalEndpointError(
      '--aws-endpoint must be scheme, host and port only (no path, query or user)',
    );
  }
  const loopback = isLoopbackHost(url.hostname);
  const withHost = (host: string) => `${url.protocol}//${host}${url.port === '' ? '' : `:${url.port}`}`;
  return {
    sdk: loopback && url.hostname === 'localhost' ? withHost('127.0.0.1') : url.origin,
    deploy: loopback ? withHost('localhost') : url.origin,
    loopback,
  };
}

/**
 * The process environment the handlers (and our clients) need to talk to the endpoint: its URL, and
 * dummy credentials plus us-east-1 where none are set (an emulator accepts any). Per-service endpoint
 * overrides are dropped so every call goes to the one endpoint.
 */
export function emulatorEnvironment(
  endpoint: AwsEndpoint,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string | undefined> {
  const overrides: Record<string, string | undefined> = { AWS_ENDPOINT_URL: endpoint.sdk };
  for (const key of Object.keys(env)) {
    if (key.startsWith('AWS_ENDPOINT_URL_')) overrides[key] = undefined;
  }
  if (!env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY) {
    overrides.AWS_ACCESS_KEY_ID = EMULATOR_ENV.AWS_ACCESS_KEY_ID;
    overrides.AWS_SECRET_ACCESS_KEY = EMULATOR_ENV.AWS_SECRET_ACCESS_KEY;
    overrides.AWS_SESSION_TOKEN = EMULATOR_ENV.AWS_SESSION_TOKEN;
    // Never mix dummy keys with a profile's other settings.
    overrides.AWS_PROFILE = undefined;
  }
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || EMULATOR_ENV.AWS_REGION;
  overrides.AWS_REGION = region;
  overrides.AWS_DEFAULT_REGION = region;
  return overrides;
}

export interface LocalAwsClients {
  readonly endpoint: AwsEndpoint;
  readonly region: string;
  readonly cloudFormation: CloudFormationClient;
  readonly lambda: LambdaClient;
  readonly events: EventBridgeClient;
  /** `useQueueUrlAsEndpoint: false`: queue URLs from CloudFormation name the AWS host, not the emulator. */
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly s3: S3Client;
  readonly ssm: SSMClient;
  destroy(): void;
}

export function createLocalAwsClients(endpoint: AwsEndpoint): LocalAwsClients {
  const env = emulatorEnvironment(endpoint);
  const region = env.AWS_REGION ?? EMULATOR_ENV.AWS_REGION;
  const credentials = {
    accessKeyId: env.AWS_ACCESS_KEY_ID ?? process.env.AWS_ACCESS_KEY_ID ?? '',
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? process.env.AWS_SECRET_ACCESS_KEY ?? '',
    ...((env.AWS_SESSION_TOKEN ?? process.env.AWS_SESSION_TOKEN)
      ? { sessionToken: env.AWS_SESSION_TOKEN ?? process.env.AWS_SESSION_TOKEN }
      : {}),
  };
  const config = { endpoint: endpoint.sdk, region, credentials, maxAttempts: 5 };
  const clients = {
    cloudFormation: new CloudFormationClient(config),
    lambda: new LambdaClient(config),
    events: new EventBridgeClient(config),
    sqs: new SQSClient({ ...config, useQueueUrlAsEndpoint: false }),
    dynamo: new DynamoDBClient(config),
    s3: new S3Client({ ...config, forcePathStyle: true }),
    ssm: new SSMClient(config),
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
