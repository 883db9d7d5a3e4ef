// A deployed stack read back through CloudFormation and Lambda: its outputs and its functions'
// configuration as deployed. Shared by local mode (local/deployment.ts) and the reconcile CLI.
import { type CloudFormationClient, DescribeStacksCommand, type Stack } from '@aws-sdk/client-cloudformation';
import { GetFunctionConfigurationCommand, type LambdaClient } from '@aws-sdk/client-lambda';

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
