// The token adapter against emulated SSM: `put-parameter --overwrite` bumps the parameter's Version, the
// cached read keeps the old value for its max age, and the fresh read (after a 401) sees the new value and
// version at once.
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { beforeEach, describe, expect, it } from 'vitest';
import { SsmTokenProvider } from '../../functions/core/adapters/ssm-token.js';
import { type AwsClients, type PipelineResources, TEST_TOKEN } from '../../tools/harness/pipeline.js';
import { pipelineOnMoto } from '../support/handlers.js';

const pipeline = pipelineOnMoto();
let aws: AwsClients;
let resources: PipelineResources;
beforeEach(() => {
  ({ aws, resources } = pipeline);
});

const overwrite = (value: string) =>
  aws.ssm.send(
    new PutParameterCommand({
      Name: resources.tokenParameter,
      Type: 'SecureString',
      Value: value,
      Overwrite: true,
    }),
  );

describe('SsmTokenProvider', () => {
  it('caches the token for its max age, and a fresh read sees a rotated value and its new version at once', async () => {
    const clock = { now: 0 };
    const tokens = new SsmTokenProvider(aws.ssm, resources.tokenParameter, 300, () => clock.now);
    const cached = new SsmTokenProvider(aws.ssm, resources.tokenParameter, 300, () => clock.now);
    expect([await tokens.token(), await cached.token()]).toEqual([TEST_TOKEN, TEST_TOKEN]);
    const before = await tokens.refresh();
    expect(before.changed).toBe(false);

    await overwrite('rotated-token');
    clock.now += 299_999;

    expect([await tokens.token(), await cached.token()]).toEqual([TEST_TOKEN, TEST_TOKEN]);
    expect(await tokens.refresh()).toEqual({ version: before.version + 1, changed: true });
    expect(await tokens.token()).toBe('rotated-token');
    clock.now += 1;
    expect(await cached.token()).toBe('rotated-token');
  });

  it('never puts the value in an error', async () => {
    const tokens = new SsmTokenProvider(aws.ssm, '/order-feed/missing');
    const error = await tokens.token().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message)).not.toContain(TEST_TOKEN);
  });
});
