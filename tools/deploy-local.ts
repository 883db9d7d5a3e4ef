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
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/**
 * Step 1: synth into a private cloud assembly. The functions' bundles of the last synth with the same sources
 * are copied into it first and reused (see BUNDLE_SOURCES_HASH_CONTEXT_KEY); otherwise esbuild bundles them and
 * they are kept for the next synth, under `.local/cdk-bundles/`.
 */
export async function synthLocal(options: DeployLocalOptions): Promise<LocalAssembly> {
  const endpoint = checkEndpoint(options.endpoint);
  const outputsFile = resolve(options.outputsFile ?? LOCAL_DEFAULTS.outputsFile);
  const assemblyDir = resolve(options.assemblyDir ?? join(dirname(outputsFile), 'cdk.out'));
  mkdirSync(dirname(outputsFile), { recursive: true });
  const sourcesHash = bundleSourcesHash();
  const keptBundles = join(BUNDLE_CACHE, sourcesHash);
  copyBundles(keptBundles, assemblyDir);
  const log = options.log ?? ((chunk: string) => process.stderr.write(chunk));
  // The CDK app's modules (aws-cdk-lib) load only for a synth: --help and a bad flag answer without them.
  const [
    { EMULATOR_DEPLOY_CONTEXT_KEY, STACK_NAME_CONTEXT_KEY },
    { CONTEXT_KEY },
    { BUNDLE_SOURCES_HASH_CONTEXT_KEY },
  ] = await Promise.all([
    import('../infra/app.js'),
    import('../infra/config.js'),
    import('../infra/constructs/ingester-function.js'),
  ]);
  const context = [
    `${CONTEXT_KEY}.partnerBaseUrl=${options.partnerBaseUrl ?? LOCAL_DEFAULTS.partnerBaseUrl}`,
    `${CONTEXT_KEY}.tokenParameterName=${options.tokenParameterName ?? LOCAL_DEFAULTS.tokenParameterName}`,
    ...(options.subscribers !== undefined
      ? [`${CONTEXT_KEY}.downstreamSubscribers=${options.subscribers.join(',')}`]
      : []),
    ...(options.feeds !== undefined ? [`${CONTEXT_KEY}.feeds=${JSON.stringify(options.feeds)}`] : []),
    ...(options.stackName !== undefined ? [`${STACK_NAME_CONTEXT_KEY}=${options.stackName}`] : []),
    // Neither cdk-nag nor CDK's built-in CloudFormation validation (CDK_VALIDATION=false) on this synth: npm test
    // runs both, and cfn-lint, over the same stacks (see EMULATOR_DEPLOY_CONTEXT_KEY); they cost a deploy 6 s.
    `${EMULATOR_DEPLOY_CONTEXT_KEY}=true`,
    `${BUNDLE_SOURCES_HASH_CONTEXT_KEY}=${sourcesHash}`,
  ].flatMap((pair) => ['--context', pair]);
  await run(
    [...COMMON, 'synth', '--app', APP, '--quiet', '--output', assemblyDir, ...context],
    { ...cdkEnvironment(endpoint), CDK_VALIDATION: 'false' },
    log,
  );
  keepBundles(assemblyDir, keptBundles);
  return { endpoint, assemblyDir, outputsFile, log };
}

/** The bundles of the last local synth, one folder per hash of their sources. */
const BUNDLE_CACHE = join(REPO_ROOT, '.local', 'cdk-bundles');
/**
 * Everything the functions' bundles are built from but CDK's asset hash does not see: the handlers' code, the
 * source-map trim that runs after esbuild, the dependencies and the compiler settings. (The bundling options
 * themselves, esbuild's flags and each function's entry, are in the asset hash CDK computes from them.)
 */
const BUNDLE_SOURCES = ['functions', 'infra/bundling', 'package-lock.json', 'tsconfig.json'];

function bundleSourcesHash(): string {
  const hash = createHash('sha256');
  for (const source of BUNDLE_SOURCES) {
    const path = join(REPO_ROOT, source);
    const files = statSync(path).isDirectory()
      ? readdirSync(path, { recursive: true, encoding: 'utf8' })
          .filter((file) => statSync(join(path, file)).isFile())
          .sort()
          .map((file) => join(source, file))
      : [source];
    for (const file of files) hash.update(`${file}\0`).update(readFileSync(join(REPO_ROOT, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** Copies the kept bundles into the assembly, each whole or not at all (renamed into place once copied). */
function copyBundles(kept: string, assemblyDir: string): void {
  if (!existsSync(kept)) return;
  mkdirSync(assemblyDir, { recursive: true });
  for (const name of readdirSync(kept)) {
    const target = join(assemblyDir, name);
    if (existsSync(target)) continue;
    const copying = `${target}.copying`;
    rmSync(copying, { recursive: true, force: true });
    cpSync(join(kept, name), copying, { recursive: true });
    renameSync(copying, target);
  }
}

/** Keeps the assembly's function bundles (the `asset.*` folders with an index.mjs) for the next synth. */
function keepBundles(assemblyDir: string, kept: string): void {
  if (existsSync(kept)) return;
  const writing = `${kept}.${process.pid}`;
  for (const name of readdirSync(assemblyDir)) {
    if (name.startsWith('asset.') && existsSync(join(assemblyDir, name, 'index.mjs')))
      cpSync(join(assemblyDir, name), join(writing, name), { recursive: true });
  }
  try {
    renameSync(writing, kept);
  } catch {
    // Another process kept the same bundles first.
    rmSync(writing, { recursive: true, force: true });
    return;
  }
  // Bundles of other sources are stale; folders with a "." are other processes' copies in progress.
  for (const name of readdirSync(BUNDLE_CACHE)) {
    if (!name.includes('.') && join(BUNDLE_CACHE, name) !== kept)
      rmSync(join(BUNDLE_CACHE, name), { recursive: true, force: true });
  }
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
/** cdk.json's app (`npx tsx infra/app.ts`) without the npx and tsx launcher processes: 1 s of CPU a synth. */
const APP = `"${process.execPath}" --import tsx infra/app.ts`;

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
