// The two packages as a stranger gets them: `npm pack` of each workspace (its prepack builds it), the tarball
// installed into a scratch project outside the repository with packages from the npm registry (npm's cache makes
// a second run quick), and used there as a stranger would: the construct library in a CDK app on another
// aws-cdk-lib minor than ours, compiled with tsc and synthesized with two instances; the consumer kit in plain
// node on the golden messages, and a handler's types under a consumer's strict compiler flags.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonExact } from '../../functions/core/model/int64.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
/** The floor of the construct library's aws-cdk-lib peer range: a minor other than the 2.276 we develop on. */
const OTHER_CDK = '2.254.0';
const run = promisify(execFile);

/** npm outside the repository: without the `npm_config_*` / `npm_package_*` of the `npm run` that started us. */
async function npm(cwd: string, args: string[]): Promise<string> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^npm_(config|package|lifecycle)_/i.test(key)),
  );
  const { stdout } = await run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd,
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

/**
 * `npm pack` of a workspace, installed with `dependencies` into a scratch project (an empty ESM package in a
 * fresh temp directory): the project and the files the tarball holds.
 */
async function installPacked(workspace: string, name: string, dependencies: string[]) {
  const packs = mkdtempSync(join(tmpdir(), 'order-feed-packs-'));
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  dirs.push(packs, dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  const [result] = JSON.parse(
    await npm(REPO_ROOT, ['pack', '-w', workspace, '--pack-destination', packs, '--json', '--silent']),
  ) as Array<{ filename: string; files: Array<{ path: string }> }>;
  if (result === undefined) throw new Error(`npm pack -w ${workspace} reported nothing`);
  await npm(dir, ['install', join(packs, result.filename), ...dependencies]);
  return { dir, files: result.files.map((file) => file.path) };
}

const tsconfig = (compilerOptions: Record<string, unknown>) =>
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      ...compilerOptions,
    },
  });

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('the construct library, installed from its tarball into a CDK app on aws-cdk-lib 2.254', () => {
  let app: string;
  let files: string[];

  beforeAll(async () => {
    ({ dir: app, files } = await installPacked('packages/construct', 'platform-app', [
      `aws-cdk-lib@${OTHER_CDK}`,
      'constructs@^10.5.0',
    ]));
  });

  it('ships built JavaScript, .d.ts and prebuilt Lambda bundles, and nothing of test/, tools/ or .ci/', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/infra/order-feed-ingester.js',
        'dist/infra/order-feed-ingester.d.ts',
        'dist/lambda/poller/index.mjs',
        'dist/lambda/consumer/index.mjs',
        'README.md',
        'package.json',
      ]),
    );
    expect(
      files.filter((file) => /(^|\/)(test|tools|\.ci)\/|\.ts$/.test(file.replace(/\.d\.ts$/, ''))),
    ).toEqual([]);
    // The app's own aws-cdk-lib, one copy, and no esbuild: the functions are not bundled here.
    const installed = JSON.parse(readFileSync(join(app, 'node_modules/aws-cdk-lib/package.json'), 'utf8'));
    expect(installed.version).toBe(OTHER_CDK);
    expect(
      existsSync(join(app, 'node_modules/@order-feed-ingester/construct/node_modules/aws-cdk-lib')),
    ).toBe(false);
    expect(existsSync(join(app, 'node_modules/esbuild'))).toBe(false);
  });

  it('compiles and synthesizes an app of two stages, each with an instance of two feeds, with the prebuilt code', async () => {
    // Prepare: the public API an app uses (feeds, alarm topic, a subscriber and its grants), in two stages.
    writeFileSync(
      join(app, 'stages.ts'),
      `import { App, Duration, Stack } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { OrderFeedIngester } from '@order-feed-ingester/construct';
import { FEATURE_FLAGS } from '@order-feed-ingester/construct/feature-flags';

const app = new App({ outdir: 'stages.out', context: FEATURE_FLAGS });
for (const stage of ['Staging', 'Production']) {
  const stack = new Stack(app, \`Orders\${stage}\`);
  const ingester = new OrderFeedIngester(stack, 'Ingester', {
    partnerBaseUrl: 'https://orders.partner.example',
    tokenParameterName: \`/\${stage.toLowerCase()}/partner-token\`,
    downstreamSubscribers: ['billing'],
    feeds: [
      { id: 'eu', vendorIds: ['v-eu'] },
      { id: 'uk', vendorIds: ['v-uk'], minAge: Duration.minutes(30) },
    ],
    alarmTopic: new Topic(stack, 'OpsAlerts'),
  });
  const billing = new Role(stack, 'BillingConsumer', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
  ingester.grantConsumeMessages('billing', billing);
  ingester.grantReadOrders(billing);
}
app.synth();
`,
    );
    writeFileSync(join(app, 'tsconfig.json'), tsconfig({ strict: true, skipLibCheck: true, types: [] }));

    // Act: the app's own tsc over our .d.ts and its aws-cdk-lib, then node.
    await run(process.execPath, [TSC, '-p', '.'], { cwd: app });
    await run(process.execPath, ['stages.js'], { cwd: app });

    // Assess
    const template = (stack: string) =>
      JSON.parse(readFileSync(join(app, 'stages.out', `${stack}.template.json`), 'utf8')) as {
        Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
      };
    // Feeds are rows: one poller and one dispatcher per instance, whatever the number of feeds.
    const functions = Object.keys(template('OrdersStaging').Resources).filter((id) =>
      /^Ingester(Poller|Dispatcher)Function[A-F0-9]+$/.test(id),
    );
    expect(functions.map((id) => id.replace(/Function[A-F0-9]+$/, '')).sort()).toEqual([
      'IngesterDispatcher',
      'IngesterPoller',
    ]);

    const emfAlarms = (stack: string) =>
      Object.values(template(stack).Resources)
        .filter((resource) => resource.Type === 'AWS::CloudWatch::Alarm')
        .filter((alarm) => alarm.Properties.Namespace === 'OrderFeedIngester')
        .map((alarm) => JSON.stringify([alarm.Properties.MetricName, alarm.Properties.Dimensions]));
    const [staging, production] = [emfAlarms('OrdersStaging'), emfAlarms('OrdersProduction')];
    expect(staging.length).toBeGreaterThan(5);
    expect(staging.length).toBe(production.length);
    expect(staging.filter((alarm) => production.includes(alarm))).toEqual([]);
    expect(staging.join()).toContain('"Value":"OrdersStaging/Ingester"');

    // The functions' code is the bundle shipped in the package, staged as is.
    const shipped = readFileSync(
      join(app, 'node_modules/@order-feed-ingester/construct/dist/lambda/poller/index.mjs'),
    );
    const staged = readdirSync(join(app, 'stages.out')).filter((entry) => entry.startsWith('asset.'));
    const stagedCode = (asset: string) => join(app, 'stages.out', asset, 'index.mjs');
    expect(
      staged.some(
        (asset) => existsSync(stagedCode(asset)) && readFileSync(stagedCode(asset)).equals(shipped),
      ),
    ).toBe(true);
  });
});

describe('the consumer kit, installed from its tarball into a plain node service', () => {
  let service: string;
  let files: string[];

  beforeAll(async () => {
    const rootPackage = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'));
    const ours = (name: string) =>
      `${name}@${rootPackage.dependencies[name] ?? rootPackage.devDependencies[name]}`;
    ({ dir: service, files } = await installPacked('packages/contract', 'billing-service', [
      ours('@aws-sdk/client-dynamodb'),
      ours('@types/aws-lambda'),
      ours('@types/node'),
    ]));
  });

  it('ships built JavaScript, .d.ts, the schemas and a README, and pulls in no aws-cdk-lib', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/contract/consumer-kit.js',
        'dist/contract/consumer-kit.d.ts',
        'dist/contract/order-version-message.schema.json',
        'dist/contract/asyncapi.json',
        'README.md',
      ]),
    );
    expect(files.filter((file) => /(^|\/)(test|tools|\.ci)\//.test(file))).toEqual([]);
    expect(existsSync(join(service, 'node_modules/aws-cdk-lib'))).toBe(false);
    expect(existsSync(join(service, 'node_modules/constructs'))).toBe(false);
  });

  it('parses every golden message with plain node, int64 values exact, from ESM and CommonJS', async () => {
    writeFileSync(
      join(service, 'read.mjs'),
      `import { readFileSync } from 'node:fs';
import { parseOrderVersionMessage, OrderVersionMessageError } from '@order-feed-ingester/contract';
const golden = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const read = golden.filter((entry) => entry.message).map(({ message }) => {
  const parsed = parseOrderVersionMessage(message.body);
  return [String(parsed.order.id), String(parsed.order.version), typeof parsed.order.id, parsed.source.correlationId];
});
let error;
try { parseOrderVersionMessage('{"schemaVersion":1}'); } catch (caught) { error = caught instanceof OrderVersionMessageError && caught.path; }
console.log(JSON.stringify({ read, error }));
`,
    );
    const golden = parseJsonExact(
      readFileSync(join(REPO_ROOT, 'test/fixtures/golden-messages.json'), 'utf8'),
    ) as Array<{
      message?: { orderId: number | bigint; version: number | bigint };
    }>;

    const { stdout } = await run(
      process.execPath,
      ['read.mjs', join(REPO_ROOT, 'test/fixtures/golden-messages.json')],
      {
        cwd: service,
      },
    );
    const required = await run(
      process.execPath,
      ['-e', "console.log(typeof require('@order-feed-ingester/contract').parseOrderVersionMessage)"],
      { cwd: service },
    );

    const { read, error } = JSON.parse(stdout) as { read: string[][]; error: string };
    const published = golden.flatMap((entry) => (entry.message ? [entry.message] : []));
    expect(read.map(([id, version]) => [id, version])).toEqual(
      published.map((message) => [String(message.orderId), String(message.version)]),
    );
    expect(read.map((entry) => entry[2])).toContain('bigint'); // a 64-bit id beyond 2^53, exact
    expect(read.every((entry) => entry[3] === 'poll:golden-run:3')).toBe(true);
    expect(error).toBe('order');
    expect(required.stdout.trim()).toBe('function');
  });

  it("type-checks a consumer's handler under strict flags, against our .d.ts", async () => {
    writeFileSync(
      join(service, 'handler.ts'),
      `import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { applyIfNewer, parseOrderVersionMessage } from '@order-feed-ingester/contract';

const client = new DynamoDBClient({});
export const handler = async (event: SQSEvent) => {
  for (const record of event.Records) {
    const message = parseOrderVersionMessage(record.body);
    const result = await applyIfNewer({ client, tableName: 'my-orders', message });
    console.log(message.source.correlationId, result.outcome);
  }
};
`,
    );
    writeFileSync(
      join(service, 'tsconfig.json'),
      tsconfig({
        strict: true,
        noUncheckedIndexedAccess: true,
        noPropertyAccessFromIndexSignature: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
        noEmit: true,
        types: ['node'],
      }),
    );

    const checked = await run(process.execPath, [TSC, '-p', '.'], { cwd: service }).catch(
      (failure: { stdout: string }) => failure,
    );

    expect(checked.stdout).toBe('');
  });
});
