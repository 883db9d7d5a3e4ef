// Adapters against the emulator (moto). The token adapter and SSM: `put-parameter --overwrite` bumps the
// parameter's Version, the cached read keeps the old value for its max age, and the fresh read (after a 401)
// sees the new value and version at once; the dispatcher reads the version alone. The functions' invokes of each
// other (the dispatcher's batch to the poller, the poller's request for a dispatch): an asynchronous invoke of a
// deployed function with the event. moto cannot run the function (it needs Docker), but it accepts and checks
// the request as Lambda does, so this shows the call shape: the right function, InvocationType Event (202), and
// the event as the payload; and an unknown function fails loudly instead of silently.
import { CreateFunctionCommand } from '@aws-sdk/client-lambda';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { beforeEach, describe, expect, it } from 'vitest';
import { invokeAsync } from '../../functions/core/adapters/lambda-invoke.js';
import { SsmTokenProvider, tokenParameterVersion } from '../../functions/core/adapters/ssm-token.js';
import { type BatchEvent, dispatchRequestOf } from '../../functions/core/fleet/dispatch.js';
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

  it('reads the version alone for the dispatcher, which follows a rotation', async () => {
    const tokens = new SsmTokenProvider(aws.ssm, resources.tokenParameter);
    const { version } = await tokens.refresh();

    expect(await tokenParameterVersion(aws.ssm, resources.tokenParameter)).toBe(version);
    await overwrite('rotated-token');
    expect(await tokenParameterVersion(aws.ssm, resources.tokenParameter)).toBe(version + 1);
  });

  it('never puts the value in an error', async () => {
    const tokens = new SsmTokenProvider(aws.ssm, '/order-feed/missing');
    const error = await tokens.token().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message)).not.toContain(TEST_TOKEN);
  });
});

describe('invokeAsync (a batch to the poller, a request for a dispatch)', () => {
  const event: BatchEvent = {
    batch: {
      batchId: 'd1-1',
      dispatchedAt: 1,
      sliceMs: 30_000,
      feedIds: ['eu'],
      dispatcher: 'arn:dispatcher',
    },
  };
  let functionArn: string;

  beforeEach(async () => {
    // The function's role must exist in IAM (this project has no IAM SDK client): IAM's query API directly.
    const assumeRole = JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
      ],
    });
    const iam = await fetch(pipeline.moto.endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization:
          'AWS4-HMAC-SHA256 Credential=testing/20261123/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
      },
      body: new URLSearchParams({
        Action: 'CreateRole',
        Version: '2010-05-08',
        RoleName: 'poller',
        AssumeRolePolicyDocument: assumeRole,
      }),
    });
    const roleXml = await iam.text();
    const roleArn = /<Arn>([^<]+)<\/Arn>/.exec(roleXml)?.[1];
    if (!roleArn) throw new Error(`CreateRole failed: ${iam.status}`);
    const created = await pipeline.aws.lambda.send(
      new CreateFunctionCommand({
        FunctionName: 'poller',
        Runtime: 'nodejs22.x',
        Role: roleArn,
        Handler: 'index.handler',
        Code: { ZipFile: Buffer.from('UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==', 'base64') },
      }),
    );
    functionArn = created.FunctionArn ?? '';
  });

  it('is accepted by the Lambda API as an asynchronous invoke of the function (202), by name or ARN', async () => {
    await expect(invokeAsync(pipeline.aws.lambda, 'poller', event)).resolves.toBeUndefined();
    const request = { dispatchRequest: { requestedAt: 5, by: 'run-1' } };
    expect(dispatchRequestOf(request)).toEqual(request.dispatchRequest);
    await expect(invokeAsync(pipeline.aws.lambda, functionArn, request)).resolves.toBeUndefined();
  });

  it('fails when the function does not exist, so the caller can log it', async () => {
    const missing = functionArn.replace(/:poller$/, ':no-such-function');
    await expect(invokeAsync(pipeline.aws.lambda, missing, event)).rejects.toThrow();
  });
});
