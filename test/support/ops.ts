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

/** A stack in the emulator whose outputs name resources made by hand: what the ops commands find a stack by. */
export async function createStackWithOutputs(
  moto: Pick<RunningMoto, 'endpoint'>,
  name: string,
  outputs: Record<string, string>,
): Promise<void> {
  const cfn = new CloudFormationClient({ endpoint: moto.endpoint, region: EMULATOR_ENV.AWS_REGION });
  const template = {
    Resources: { Placeholder: { Type: 'AWS::SQS::Queue', Properties: { QueueName: `${name}-placeholder` } } },
    Outputs: Object.fromEntries(Object.entries(outputs).map(([key, value]) => [key, { Value: value }])),
  };
  try {
    await cfn.send(new CreateStackCommand({ StackName: name, TemplateBody: JSON.stringify(template) }));
  } finally {
    cfn.destroy();
  }
}
