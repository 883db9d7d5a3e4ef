// `npm run ops -- …` in-process, as the CLI runs it, with its output captured; and the items its history
// command reads, as the consumer writes them.
import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { storedOrderItem } from '../../functions/core/adapters/stored-order-item.js';
import type { Order } from '../../functions/core/model/types.js';
import { runOps } from '../../tools/ops/cli.js';
import { EMULATOR_ENV, type RunningMoto } from './moto.js';

export interface OpsRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runOpsCaptured(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<OpsRun> {
  const out = { stdout: '', stderr: '' };
  const code = await runOps(argv, {
    stdout: (text) => {
      out.stdout += text;
    },
    stderr: (text) => {
      out.stderr += text;
    },
    env,
  });
  return { code, ...out };
}

/** A history item as the consumer writes it: the orders table item plus the history attributes. */
export function historyItem(
  order: Order,
  extra: { fetchedAt: string; arrivedAfterVersion?: bigint | number; feedId?: string },
): Record<string, AttributeValue> {
  const { item } = storedOrderItem(order, undefined, { findingCodes: [], correlationId: 'poll:run-1:1' });
  return {
    ...item,
    version: { N: String(order.version) },
    fetchedAt: { S: extra.fetchedAt },
    storedAt: { S: '2026-03-01T12:00:01.000Z' },
    feedId: { S: extra.feedId ?? 'orders' },
    expiresAt: { N: '1806580800' },
    ...(extra.arrivedAfterVersion === undefined
      ? {}
      : { arrivedAfterVersion: { N: String(extra.arrivedAfterVersion) } }),
  };
}

/**
 * A stack in the emulator whose outputs name resources made by hand: what the ops commands find a stack by.
 * `functions`: Lambda functions the stack creates (moto stores them; it cannot run them), each output under
 * its key (e.g. DispatcherFunctionName) with the environment given.
 */
export async function createStackWithOutputs(
  moto: Pick<RunningMoto, 'endpoint'>,
  name: string,
  outputs: Record<string, string>,
  functions: Record<string, Record<string, string>> = {},
): Promise<void> {
  const cfn = new CloudFormationClient({ endpoint: moto.endpoint, region: EMULATOR_ENV.AWS_REGION });
  const role = {
    Type: 'AWS::IAM::Role',
    Properties: {
      AssumeRolePolicyDocument: {
        Version: '2012-10-17',
        Statement: [
          { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
        ],
      },
    },
  };
  const functionResources = Object.fromEntries(
    Object.entries(functions).map(([output, variables]) => [
      output.replace(/Name$/, ''),
      {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Runtime: 'nodejs22.x',
          Handler: 'index.handler',
          Role: { 'Fn::GetAtt': ['FunctionRole', 'Arn'] },
          Code: { ZipFile: 'exports.handler = async () => undefined;' },
          Environment: { Variables: variables },
        },
      },
    ]),
  );
  const template = {
    Resources: {
      Placeholder: { Type: 'AWS::SQS::Queue', Properties: { QueueName: `${name}-placeholder` } },
      ...(Object.keys(functions).length > 0 ? { FunctionRole: role } : {}),
      ...functionResources,
    },
    Outputs: {
      ...Object.fromEntries(Object.entries(outputs).map(([key, value]) => [key, { Value: value }])),
      ...Object.fromEntries(
        Object.keys(functions).map((output) => [output, { Value: { Ref: output.replace(/Name$/, '') } }]),
      ),
    },
  };
  try {
    await cfn.send(new CreateStackCommand({ StackName: name, TemplateBody: JSON.stringify(template) }));
  } finally {
    cfn.destroy();
  }
}
