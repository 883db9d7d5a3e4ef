// The self-continuation adapter against a real Lambda API (moto): an asynchronous invoke of a deployed
// function with the continuation event. moto cannot run the function (it needs Docker), but it accepts and
// checks the request as Lambda does, so this shows the call shape: the right function, InvocationType
// Event (202), and the event as the payload; and an unknown function fails loudly instead of silently.
import { CreateFunctionCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LambdaContinuation } from '../../functions/core/adapters/lambda-continuation.js';
import type { ContinuationEvent } from '../../functions/core/ingest/continuation.js';
import { EMULATOR_ENV, type RunningMoto, startMoto } from '../../tools/local/moto.js';

let moto: RunningMoto;
let lambda: LambdaClient;
let functionArn: string;

const event: ContinuationEvent = {
  continuation: { feedId: 'eu', chainId: 'req-0', chain: 1, chainStartedAt: '2026-11-23T06:00:00.000Z' },
};

beforeAll(async () => {
  moto = await startMoto();
  Object.assign(process.env, EMULATOR_ENV);
  const config = { endpoint: moto.endpoint, region: EMULATOR_ENV.AWS_REGION };
  lambda = new LambdaClient(config);
  // The function's role must exist in IAM (this project has no IAM SDK client): IAM's query API directly.
  const assumeRole = JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
    ],
  });
  const iam = await fetch(moto.endpoint, {
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
  const created = await lambda.send(
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

afterAll(async () => {
  await moto?.stop();
});

describe('LambdaContinuation', () => {
  it('is accepted by the Lambda API as an asynchronous invoke of the function (202)', async () => {
    await expect(new LambdaContinuation(lambda).request(event, functionArn)).resolves.toBeUndefined();
  });

  it('fails when the function does not exist, so the handler can log it', async () => {
    const missing = functionArn.replace(/:poller$/, ':no-such-function');
    await expect(new LambdaContinuation(lambda).request(event, missing)).rejects.toThrow();
  });
});
