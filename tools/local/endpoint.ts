// An AWS endpoint as local mode and `npm run ops -- --aws-endpoint` take it, checked and in the two spellings
// local mode needs; apart from the clients (aws.ts), so that a command line checks it before loading the SDK.
import { isLoopbackHost } from '../../functions/core/partner/url-policy.js';

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
