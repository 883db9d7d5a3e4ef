// Lambda refuses to create or update a function whose environment variables take more than 4 KB together,
// and says so only at deploy time, halfway through a CloudFormation update. This checks a function's
// environment at synth instead, with every value CloudFormation fills in at deploy time (a generated
// table name, a queue URL) counted at the longest it can get.
import { Token } from 'aws-cdk-lib';

/** Lambda's limit on a function's environment variables, keys and values together. */
export const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4096;

/** The longest values CloudFormation generates for the resource names a function is given. */
export const LONGEST_GENERATED = {
  /** DynamoDB allows 255; CloudFormation's generated names are shorter, but nothing promises it. */
  tableName: 255,
  /** `https://sqs.` + region + `.amazonaws.com` (`.com.cn` in China) + `/` + account + `/` + a name of at most 80. */
  queueUrl: 140,
  bucketName: 63,
  /** Lambda allows 64 characters for a function's name. */
  functionName: 64,
  /** `s3://` + a bucket of at most 63 + `/` + a file asset's key (its 64-hex-digit hash and extension). */
  assetObjectUrl: 140,
} as const;

/**
 * The environment's size as Lambda's API carries it (a JSON object of strings), each deploy-time value
 * counted at its longest as `longest` states it. A deploy-time value without a stated longest is an error:
 * whoever adds one says how long it can get.
 */
export function environmentBytesAtMost(
  environment: Readonly<Record<string, string>>,
  longest: Readonly<Record<string, number>>,
): { total: number; byVariable: Array<[name: string, bytes: number]> } {
  const worstCase: Record<string, string> = {};
  for (const [name, value] of Object.entries(environment)) {
    if (!Token.isUnresolved(value)) {
      worstCase[name] = value;
      continue;
    }
    const bound = longest[name];
    if (bound === undefined) {
      throw new Error(
        `environment variable ${name} is only known at deploy time: state the longest it can get, so its size can be checked at synth`,
      );
    }
    worstCase[name] = 'x'.repeat(bound);
  }
  const byVariable = Object.entries(worstCase)
    .map(([name, value]): [string, number] => [
      name,
      Buffer.byteLength(JSON.stringify({ [name]: value })) - 2,
    ])
    .sort(([, a], [, b]) => b - a);
  return { total: Buffer.byteLength(JSON.stringify(worstCase)), byVariable };
}

/** Throws, naming the largest variables, when the environment can exceed Lambda's 4 KB. */
export function checkEnvironmentSize(
  functionId: string,
  environment: Readonly<Record<string, string>>,
  longest: Readonly<Record<string, number>>,
): void {
  const { total, byVariable } = environmentBytesAtMost(environment, longest);
  if (total <= LAMBDA_ENVIRONMENT_LIMIT_BYTES) return;
  const largest = byVariable
    .slice(0, 3)
    .map(([name, bytes]) => `${name} ${bytes}`)
    .join(', ');
  throw new Error(
    `${functionId}: its environment can reach ${total} bytes, over Lambda's limit of ${LAMBDA_ENVIRONMENT_LIMIT_BYTES} (largest: ${largest}); shorten the configuration values behind them`,
  );
}
