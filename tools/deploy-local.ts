// Deploys the stack into a local AWS emulator (moto_server), the way `cdk deploy` would deploy to AWS.
//
//   npx tsx tools/deploy-local.ts --endpoint http://localhost:5000 [--outputs-file .local/stack-outputs.json]
//        [--partner-base-url http://localhost:4010] [--token-parameter /order-feed-ingester/partner-token]
//        [--subscribers billing,audit-log]
//
// Steps: 1. synth once (bundles the functions) into a private cloud assembly  2. `cdk bootstrap` from it
// 3. `cdk deploy --method=direct --no-previous-parameters` from it  4. print the stack outputs. Only dummy
// credentials are ever set. A stack already in the emulator is updated in place. Why these two flags: the
// change-set method leaves outputs empty in moto and fails an update on deleting a change set that does not
// exist; and moto answers an update that keeps BootstrapVersion's previous value (CDK's default) with a 500
// (KeyError: it only knows parameters given at create). Without the flag, CloudFormation takes the
// parameter's default, which is the value it always has: on AWS the flag changes nothing.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STACK_NAME_CONTEXT_KEY } from '../infra/app.js';
import { CONTEXT_KEY } from '../infra/config.js';
import { isMain, parseCommandLine, parseFlags, UsageError } from './cli-args.js';
import { EMULATOR_ENV } from './local/moto.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const CDK_BIN = join(REPO_ROOT, 'node_modules', '.bin', 'cdk');

export const LOCAL_DEFAULTS = {
  partnerBaseUrl: 'http://localhost:4010',
  tokenParameterName: '/order-feed-ingester/partner-token',
  outputsFile: join(REPO_ROOT, '.local', 'stack-outputs.json'),
} as const;

export interface DeployLocalOptions {
  /** `http://localhost:PORT`: asset upload needs the word `localhost` (see LOCAL-AWS.md). */
  readonly endpoint: string;
  readonly outputsFile?: string;
  readonly partnerBaseUrl?: string;
  readonly tokenParameterName?: string;
  readonly subscribers?: readonly string[];
  /** The stack's name (context `stackName`); omitted: the app's default. */
  readonly stackName?: string;
  /** Several feeds (`orderFeed.feeds`); omitted: the single feed of the top-level keys. */
  readonly feeds?: readonly LocalFeed[];
  /** Cloud assembly directory; default: next to the outputs file. */
  readonly assemblyDir?: string;
  /** Where the cdk CLI's output goes; default: this process's stderr. */
  readonly log?: (chunk: string) => void;
}

/** A feed as local mode and the tests deploy it: an id and, to shard, its vendors. */
export interface LocalFeed {
  readonly id: string;
  readonly vendorIds?: readonly string[];
}

export class DeployLocalError extends Error {
  override readonly name = 'DeployLocalError';
}

/** Deploys the stack into the emulator at `endpoint` and returns its outputs (key → value). */
export async function deployLocal(options: DeployLocalOptions): Promise<Record<string, string>> {
  const assembly = await synthLocal(options);
  await bootstrapLocal(assembly);
  return deployAssembly(assembly);
}

/** A synthesized cloud assembly for the emulator at `endpoint`, and where its deploy writes the outputs. */
export interface LocalAssembly {
  readonly endpoint: string;
  readonly assemblyDir: string;
  readonly outputsFile: string;
  readonly log: (chunk: string) => void;
}

/** Step 1: synth (bundles the functions) into a private cloud assembly. */
export async function synthLocal(options: DeployLocalOptions): Promise<LocalAssembly> {
  const endpoint = checkEndpoint(options.endpoint);
  const outputsFile = resolve(options.outputsFile ?? LOCAL_DEFAULTS.outputsFile);
  const assemblyDir = resolve(options.assemblyDir ?? join(dirname(outputsFile), 'cdk.out'));
  mkdirSync(dirname(outputsFile), { recursive: true });
  const log = options.log ?? ((chunk: string) => process.stderr.write(chunk));
  const context = [
    `${CONTEXT_KEY}.partnerBaseUrl=${options.partnerBaseUrl ?? LOCAL_DEFAULTS.partnerBaseUrl}`,
    `${CONTEXT_KEY}.tokenParameterName=${options.tokenParameterName ?? LOCAL_DEFAULTS.tokenParameterName}`,
    ...(options.subscribers !== undefined
      ? [`${CONTEXT_KEY}.downstreamSubscribers=${options.subscribers.join(',')}`]
      : []),
    ...(options.feeds !== undefined ? [`${CONTEXT_KEY}.feeds=${JSON.stringify(options.feeds)}`] : []),
    ...(options.stackName !== undefined ? [`${STACK_NAME_CONTEXT_KEY}=${options.stackName}`] : []),
  ].flatMap((pair) => ['--context', pair]);
  await run(
    [...COMMON, 'synth', '--quiet', '--output', assemblyDir, ...context],
    cdkEnvironment(endpoint),
    log,
  );
  return { endpoint, assemblyDir, outputsFile, log };
}

/** Step 2: `cdk bootstrap` of the assembly's environment (once per emulator is enough). */
export async function bootstrapLocal(assembly: LocalAssembly): Promise<void> {
  await run(
    [...COMMON, 'bootstrap', '--app', assembly.assemblyDir],
    cdkEnvironment(assembly.endpoint),
    assembly.log,
  );
}

/** Step 3: `cdk deploy` of the assembly, creating the stack or updating it in place; its outputs. */
export async function deployAssembly(assembly: LocalAssembly): Promise<Record<string, string>> {
  const { assemblyDir, outputsFile, log } = assembly;
  await run(
    [
      ...COMMON,
      'deploy',
      '--app',
      assemblyDir,
      '--all',
      '--method=direct',
      '--no-previous-parameters',
      '--require-approval',
      'never',
      '--outputs-file',
      outputsFile,
    ],
    cdkEnvironment(assembly.endpoint),
    log,
  );

  const byStack = JSON.parse(readFileSync(outputsFile, 'utf8')) as Record<string, Record<string, string>>;
  const stacks = Object.values(byStack);
  if (stacks.length !== 1 || stacks[0] === undefined) {
    throw new DeployLocalError(`expected the outputs of one stack in ${outputsFile}, found ${stacks.length}`);
  }
  return stacks[0];
}

const COMMON = ['--no-notices', '--no-version-reporting', '--ci'];

/** The cdk CLI's environment: the emulator's endpoint and dummy credentials, nothing real picked up. */
function cdkEnvironment(endpoint: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...EMULATOR_ENV,
    AWS_ENDPOINT_URL: endpoint,
    AWS_EC2_METADATA_DISABLED: 'true',
    CDK_DISABLE_CLI_TELEMETRY: 'true',
  };
  // Never pick a profile or a real credential source up from the environment.
  delete env.AWS_PROFILE;
  delete env.AWS_CONFIG_FILE;
  delete env.AWS_SHARED_CREDENTIALS_FILE;
  delete env.AWS_WEB_IDENTITY_TOKEN_FILE;
  for (const key of Object.keys(env)) {
    if (key.startsWith('AWS_ENDPOINT_URL_')) delete env[key];
  }
  return env;
}

function checkEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new DeployLocalError(`--endpoint must be a URL like http://localhost:5000 (got "${endpoint}")`);
  }
  if (url.hostname !== 'localhost') {
    throw new DeployLocalError(
      `--endpoint must use the host name "localhost" (got "${url.hostname}"): cdk's asset upload addresses ` +
        'the bootstrap bucket by that name',
    );
  }
  return url.origin;
}

function run(args: string[], env: NodeJS.ProcessEnv, log: (chunk: string) => void): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    log(`$ cdk ${args.join(' ')}\n`);
    const child = spawn(CDK_BIN, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const collect = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      log(text);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolvePromise();
      else
        reject(new DeployLocalError(`cdk ${args[3] ?? ''} failed (${signal ?? `exit ${code}`}):\n${tail}`));
    });
  });
}

export const USAGE = `Usage: npm run deploy:local -- --endpoint http://localhost:PORT [options]

Deploys the stack into an AWS emulator (moto_server) the way cdk deploy deploys to AWS, and prints its
outputs as JSON. A stack already deployed there is updated in place.

  --endpoint URL            the emulator, as http://localhost:PORT (required; cdk's asset upload needs
                            the name localhost)
  --outputs-file PATH       where cdk writes the outputs (default .local/stack-outputs.json)
  --partner-base-url URL    orderFeed.partnerBaseUrl (default ${LOCAL_DEFAULTS.partnerBaseUrl})
  --token-parameter NAME    orderFeed.tokenParameterName (default ${LOCAL_DEFAULTS.tokenParameterName})
  --subscribers a,b         orderFeed.downstreamSubscribers
  --stack-name NAME         the stack's name (context stackName; default the app's)
  -h, --help                this text

Exit status: 0 deployed; 1 cdk failed; 2 bad usage.
`;

function parseOptions(argv: readonly string[]): DeployLocalOptions | 'help' {
  const values = parseFlags(argv, {
    endpoint: { type: 'string' },
    'outputs-file': { type: 'string' },
    'partner-base-url': { type: 'string' },
    'token-parameter': { type: 'string' },
    subscribers: { type: 'string' },
    'stack-name': { type: 'string' },
  });
  if (values.help) return 'help';
  if (values.endpoint === undefined) throw new UsageError('--endpoint http://localhost:PORT is required');
  return {
    endpoint: values.endpoint,
    outputsFile: values['outputs-file'],
    partnerBaseUrl: values['partner-base-url'],
    tokenParameterName: values['token-parameter'],
    subscribers: values.subscribers?.split(',').map((name) => name.trim()),
    stackName: values['stack-name'],
  };
}

async function main(): Promise<number> {
  const parsed = parseCommandLine(() => parseOptions(process.argv.slice(2)), USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const outputs = await deployLocal(parsed.options);
  process.stdout.write(`${JSON.stringify(outputs, null, 2)}\n`);
  return 0;
}

if (isMain(import.meta.url)) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
