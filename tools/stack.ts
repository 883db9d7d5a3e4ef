// A deployed stack read back through CloudFormation and Lambda: its outputs and its functions'
// configuration as deployed. Shared by local mode (local/deployment.ts), the reconcile CLI and `npm run ops`.
import { type CloudFormationClient, DescribeStacksCommand, type Stack } from '@aws-sdk/client-cloudformation';
import { GetFunctionConfigurationCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { isFeedId } from './feed-id.js';

/** The stack, or undefined when CloudFormation says it does not exist; other failures are thrown. */
export async function describeStack(
  cfn: CloudFormationClient,
  stackName: string,
): Promise<Stack | undefined> {
  try {
    const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
    return Stacks?.[0];
  } catch (error) {
    if (error instanceof Error && /does not exist/.test(error.message)) return undefined;
    throw error;
  }
}

/** The stack's outputs as a key → value map (outputs without a value are left out). */
export function stackOutputs(stack: Stack | undefined): Record<string, string> {
  const outputs: Record<string, string> = {};
  for (const output of stack?.Outputs ?? []) {
    if (output.OutputKey && output.OutputValue !== undefined) outputs[output.OutputKey] = output.OutputValue;
  }
  return outputs;
}

/**
 * Feed id → poller function name, from the stack's `FeedPollers` output (JSON; every stack since feeds
 * exist has it); `{}` when absent. Throws an Error naming the problem when it is not such a JSON object.
 */
export function feedPollersOf(outputs: Record<string, string>): Record<string, string> {
  const raw = outputs.FeedPollers;
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new Error(
      `the stack's FeedPollers output is not JSON: ${error instanceof Error ? error.message : error}`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('the stack\'s FeedPollers output is not a JSON object { "<feedId>": "<function>" }');
  }
  const pollers: Record<string, string> = {};
  for (const [feedId, name] of Object.entries(parsed)) {
    if (typeof name === 'string' && isFeedId(feedId)) pollers[feedId] = name;
  }
  return pollers;
}

export interface FunctionDeployment {
  name: string;
  /** Environment.Variables as deployed. */
  environment: Record<string, string>;
  timeoutSeconds: number;
}

export async function readFunction(lambda: LambdaClient, name: string): Promise<FunctionDeployment> {
  const fn = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: name }));
  return {
    name,
    environment: { ...(fn.Environment?.Variables ?? {}) },
    timeoutSeconds: fn.Timeout ?? 3,
  };
}
