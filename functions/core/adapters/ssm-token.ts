// The partner token, read from an SSM SecureString with decryption and cached across warm invocations
// (Powertools Parameters). After a 401 the cache is dropped, so a token rotated in SSM is picked up by
// the next run without a redeploy. The value is returned to the HTTP client only; never logged.
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import type { SSMClient } from '@aws-sdk/client-ssm';

export class SsmTokenProvider {
  private readonly provider: SSMProvider;

  constructor(
    client: SSMClient,
    private readonly parameterName: string,
    private readonly maxAgeSeconds = 300,
  ) {
    this.provider = new SSMProvider({ awsSdkV3Client: client });
  }

  async token(): Promise<string> {
    const value = await this.provider.get(this.parameterName, { decrypt: true, maxAge: this.maxAgeSeconds });
    if (typeof value !== 'string' || value.length === 0) {
      throw new Error(`SSM parameter ${this.parameterName} is empty or not a string`);
    }
    return value;
  }

  invalidate(): void {
    this.provider.clearCache();
  }
}
