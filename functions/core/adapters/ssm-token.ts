// The SDK's GetParameter rather than Powertools Parameters: the 401 backoff is keyed to the parameter's
// Version, which Powertools' `get` does not return. The value goes to the HTTP client only, never to a log.
import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import type { TokenParameter } from '../ingest/ports.js';

export class SsmTokenProvider implements TokenParameter {
  private cached: { value: string; version: number; readAt: number } | undefined;

  constructor(
    private readonly client: SSMClient,
    private readonly parameterName: string,
    private readonly maxAgeSeconds = 300,
    private readonly now: () => number = Date.now,
  ) {}

  async token(): Promise<string> {
    const { cached } = this;
    if (cached && this.now() - cached.readAt < this.maxAgeSeconds * 1000) return cached.value;
    return (await this.read()).value;
  }

  async refresh(): Promise<{ version: number; changed: boolean }> {
    const before = this.cached?.value;
    const { value, version } = await this.read();
    return { version, changed: before !== undefined && before !== value };
  }

  private async read() {
    const { Parameter } = await this.client.send(
      new GetParameterCommand({ Name: this.parameterName, WithDecryption: true }),
    );
    const { Value: value, Version: version } = Parameter ?? {};
    if (typeof value !== 'string' || value.length === 0 || typeof version !== 'number')
      throw new Error(`SSM parameter ${this.parameterName} is empty or has no version`);
    this.cached = { value, version, readAt: this.now() };
    return this.cached;
  }
}

/** The parameter's current version, its value left encrypted (the dispatcher's check for a rotated token). */
export async function tokenParameterVersion(client: SSMClient, name: string): Promise<number | undefined> {
  const { Parameter } = await client.send(new GetParameterCommand({ Name: name, WithDecryption: false }));
  return Parameter?.Version;
}
