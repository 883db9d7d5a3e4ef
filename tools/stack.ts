// A deployed stack read back through CloudFormation and Lambda: its outputs and its functions'
// configuration as deployed. Shared by local mode (local/deployment.ts) and `npm run ops` (reconcile included);
// what the operator pointed at and is not there is a CommandError naming it.
import { type CloudFormationClient, DescribeStacksCommand, type Stack } from '@aws-sdk/client-cloudformation';
import { GetFunctionConfigurationCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { AwsAt } from './aws.js';
import { CommandError, messageOf } from './cli-args.js';
import { isFeedId } from './feed-id.js';

export { isFeedId } from './feed-id.js';

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

/** The outputs of stack `stackName`; a CommandError when it does not exist or cannot be described. */
export async function readStackOutputs(aws: AwsAt, stackName: string): Promise<Record<string, string>> {
  let stack: Stack | undefined;
  try {
    stack = await describeStack(aws.cloudFormation, stackName);
  } catch (error) {
    throw new CommandError(
      `cannot describe stack ${stackName}: ${messageOf(error)}${setupHint(aws, error)}`,
      {
        cause: error,
      },
    );
  }
  if (stack === undefined) {
    throw new CommandError(
      `stack ${stackName} not found${aws.endpoint ? ` at ${aws.endpoint}` : ''} (--stack-name, --aws-endpoint)`,
    );
  }
  return stackOutputs(stack);
}

/**
 * What to pass when the SDK found no region or no credentials, as on a first run pointed at nothing: the
 * emulator's endpoint, or AWS's region and credentials.
 */
function setupHint(aws: AwsAt, error: unknown): string {
  if (aws.endpoint !== undefined || !/Region is missing|Could not load credentials/.test(messageOf(error))) {
    return '';
  }
  return (
    '. Pass --aws-endpoint http://localhost:PORT for an emulator (the moto of a local run: npm start ' +
    '-- --aws-endpoint …), or set AWS_REGION and credentials (e.g. AWS_PROFILE) for a stack in AWS'
  );
}

/** The output `key`; a CommandError naming it when the stack has none. */
export function requiredOutput(outputs: Record<string, string>, stackName: string, key: string): string {
  const value = outputs[key];
  if (!value) throw new CommandError(`stack ${stackName} has no output ${key}`);
  return value;
}

/** A function's environment as deployed; a CommandError naming the function when it cannot be read. */
export async function readEnvironment(aws: AwsAt, name: string): Promise<Record<string, string>> {
  try {
    return (await readFunction(aws.lambda, name)).environment;
  } catch (error) {
    throw new CommandError(`cannot read the configuration of function ${name}: ${messageOf(error)}`, {
      cause: error,
    });
  }
}

/**
 * A poller's DOWNSTREAM_QUEUE_URLS (subscriber name → queue URL), as far as it parses: the poller itself
 * would refuse to start with a malformed value, so there is nothing to compare against then.
 */
export function downstreamQueueUrls(env: Record<string, string>): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(env.DOWNSTREAM_QUEUE_URLS ?? '{}');
    if (typeof parsed !== 'object' || parsed === null) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
  } catch {
    return {};
  }
}

/**
 * Feed id → poller function name, from the stack's `FeedPollers` output (JSON; every stack since feeds
 * exist has it); `{}` when absent. Throws a CommandError naming the problem when it is not such a JSON object.
 */
export function feedPollersOf(outputs: Record<string, string>): Record<string, string> {
  const raw = outputs.FeedPollers;
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new CommandError(`the stack's FeedPollers output is not JSON: ${messageOf(error)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CommandError(
      'the stack\'s FeedPollers output is not a JSON object { "<feedId>": "<function>" }',
    );
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
