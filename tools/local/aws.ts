// AWS SDK clients for local mode, all pointed at one AWS-compatible endpoint (moto). Created once per
// endpoint and injected into the local-runtime modules and the handlers.
import { type AwsAt, createAwsClients } from '../aws.js';
import type { AwsEndpoint } from './endpoint.js';
import { EMULATOR_ENV } from './moto.js';

export { type AwsEndpoint, parseAwsEndpoint } from './endpoint.js';

/** Local mode's clients: tools/aws.ts's for the endpoint, with the endpoint in both spellings. */
export interface LocalAwsClients extends Omit<AwsAt, 'endpoint' | 'region'> {
  readonly endpoint: AwsEndpoint;
  readonly region: string;
}

export function createLocalAwsClients(endpoint: AwsEndpoint): LocalAwsClients {
  const clients = createAwsClients(endpoint.sdk);
  return { ...clients, endpoint, region: clients.region ?? EMULATOR_ENV.AWS_REGION };
}
