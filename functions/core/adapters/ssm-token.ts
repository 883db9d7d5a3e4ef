// The partner token, read from an SSM SecureString with decryption (GetParameter, WithDecryption) and cached
// across warm invocations for `maxAgeSeconds`. The SDK's GetParameterCommand rather than Powertools
// Parameters: the backoff after a 401 is keyed to the parameter's Version, which Powertools' `get` does not
// return. After a 401 the poller calls `refresh` (a fresh read): a token rotated in SSM is retried at once.
// The value is returned to the HTTP client only; never logged, never in an error.
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

  /** The token: the cached value while younger than `maxAgeSeconds`, else read afresh. */
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
    const value = Parameter?.Value;
    const version = Parameter?.Version;
    if (typeof value !== 'string' || value.length === 0 || typeof version !== 'number') {
      throw new Error(`SSM parameter ${this.parameterName} is empty or has no version`);
    }
    this.cached = { value, version, readAt: this.now() };
    return this.cached;
  }
}
