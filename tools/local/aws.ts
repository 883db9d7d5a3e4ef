// AWS SDK clients for local mode, all pointed at one AWS-compatible endpoint (moto). Created once per
// endpoint and injected into the local-runtime modules and the handlers.
import { isLoopbackHost } from '../../functions/core/partner/url-policy.js';
import { type AwsAt, createAwsClients } from '../aws.js';
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

/** Local mode's clients: tools/aws.ts's for the endpoint, with the endpoint in both spellings. */
export interface LocalAwsClients extends Omit<AwsAt, 'endpoint' | 'region'> {
  readonly endpoint: AwsEndpoint;
  readonly region: string;
}

export function createLocalAwsClients(endpoint: AwsEndpoint): LocalAwsClients {
  const clients = createAwsClients(endpoint.sdk);
  return { ...clients, endpoint, region: clients.region ?? EMULATOR_ENV.AWS_REGION };
}
