// Section 5: each function's deployment bundle (esbuild, built the way infra/constructs/ingester-function.ts
// has CDK build it) against a bare bundle that only constructs the same AWS SDK clients with the same
// factories: size on disk, and module initialisation time in a fresh `node` process (the time to
// `import()` the bundle, i.e. Lambda's Init phase minus the runtime's own start), median of N runs.
import { spawn } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BuildOptions, build } from 'esbuild';
import { keepOwnCodeOnly, type SourceMapV3 } from '../../infra/bundling/own-code-source-map.js';
import { CONSUMER_ENTRY } from '../../infra/constructs/consumer.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import { median } from './measure.js';
import { figure, type Section } from './report.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The `bundling` options of IngesterFunction (NodejsFunction, OutputFormat.ESM, target node22, minify,
 * source maps without sources content, AWS SDK bundled), restated as esbuild options: the construct
 * passes them to the esbuild CLI and does not export them. Keep the two in step, including the construct's
 * afterBundling step, which `bundle()` below repeats: the source map is cut down to our own code.
 */
export const LAMBDA_ESBUILD_OPTIONS: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: {
    js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  },
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  external: [],
  logLevel: 'silent',
};

/** What Lambda sets, with dummy values: the config modules check these at import. */
const DUMMY_ENV: Record<string, string> = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'testing',
  AWS_SECRET_ACCESS_KEY: 'testing',
  AWS_SESSION_TOKEN: 'testing',
  FEED_ID: 'orders',
  CURSOR_TABLE_NAME: 'cursors',
  PARTNER_BASE_URL: 'https://partner.example.com',
  PARTNER_TOKEN_PARAMETER: '/order-feed/partner-token',
  ORDERS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/orders',
  DOWNSTREAM_QUEUE_URLS: '{"analytics":"https://sqs.us-east-1.amazonaws.com/000000000000/analytics"}',
  QUARANTINE_BUCKET_NAME: 'quarantine',
  PAGE_SIZE: '100',
  MAX_PAGES_PER_RUN: '50',
  ORDERS_TABLE_NAME: 'orders',
  POWERTOOLS_METRICS_NAMESPACE: 'OrderFeedIngester',
  POWERTOOLS_LOG_LEVEL: 'INFO',
};

const BARE_SOURCES = {
  poller: `import { createDynamoDbClient, createS3Client, createSqsClient, createSsmClient } from './functions/core/adapters/aws-clients.js';
import { createLambdaClient } from './functions/core/adapters/lambda-continuation.js';
export const clients = [createDynamoDbClient(), createSqsClient(), createS3Client(), createSsmClient(), createLambdaClient()];
export const handler = async () => clients.length;`,
  consumer: `import { createDynamoDbClient } from './functions/core/adapters/aws-clients.js';
export const client = createDynamoDbClient();
export const handler = async () => client.config.region;`,
} as const;

interface Bundle {
  file: string;
  bytes: number;
  mapBytes: number;
}

async function bundle(
  outDir: string,
  name: string,
  source: { entry: string } | { contents: string },
): Promise<Bundle> {
  const file = path.join(outDir, name, 'index.mjs');
  await mkdir(path.dirname(file), { recursive: true });
  await build({
    ...LAMBDA_ESBUILD_OPTIONS,
    ...('entry' in source
      ? { entryPoints: [source.entry] }
      : {
          stdin: { contents: source.contents, resolveDir: REPO_ROOT, sourcefile: `${name}.ts`, loader: 'ts' },
        }),
    outfile: file,
  });
  // IngesterFunction's afterBundling hook (infra/bundling/trim-source-map.ts) does the same.
  const mapFile = `${file}.map`;
  const map = JSON.parse(await readFile(mapFile, 'utf8')) as SourceMapV3;
  await writeFile(mapFile, JSON.stringify(keepOwnCodeOnly(map)));
  return { file, bytes: (await stat(file)).size, mapBytes: (await stat(mapFile)).size };
}

/**
 * Prints the import's wall time and the process's CPU time (user + system) spent in it, in ms. The wall
 * time is the figure; the CPU time, in the details, barely moves when other processes share the cores.
 */
const IMPORT_TIMER =
  'const c = process.cpuUsage(); const t = performance.now(); await import(process.argv[1]); ' +
  'const w = performance.now() - t; const u = process.cpuUsage(c); ' +
  "process.stdout.write(w + ' ' + (u.user + u.system) / 1000);";

interface ImportTime {
  wallMs: number;
  cpuMs: number;
}

/** Time to import the bundle in a fresh process (with --enable-source-maps, as deployed). */
function importOnce(file: string): Promise<ImportTime> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--enable-source-maps', '--input-type=module', '-e', IMPORT_TIMER, pathToFileURL(file).href],
      { env: { PATH: process.env.PATH ?? '', ...DUMMY_ENV }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const [wallMs, cpuMs] = out.split(' ').map(Number);
      if (code !== 0 || !Number.isFinite(wallMs) || !Number.isFinite(cpuMs)) {
        reject(new Error(`importing ${file} failed (exit ${code}): ${err.slice(0, 500)}`));
      } else {
        resolve({ wallMs: wallMs as number, cpuMs: cpuMs as number });
      }
    });
  });
}

async function initTimes(
  handler: string,
  bare: string,
  runs: number,
): Promise<{ handlerRuns: ImportTime[]; bareRuns: ImportTime[] }> {
  // One untimed import each fills the file cache.
  await importOnce(handler);
  await importOnce(bare);
  const handlerRuns: ImportTime[] = [];
  const bareRuns: ImportTime[] = [];
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, so drift affects both alike.
    if (i % 2 === 0) {
      handlerRuns.push(await importOnce(handler));
      bareRuns.push(await importOnce(bare));
    } else {
      bareRuns.push(await importOnce(bare));
      handlerRuns.push(await importOnce(handler));
    }
  }
  return { handlerRuns, bareRuns };
}

export async function coldStartSection(outDir: string, runs: number): Promise<Section> {
  const functions = [
    { name: 'poller', entry: POLLER_ENTRY, bare: BARE_SOURCES.poller, clients: 'DynamoDB, SQS, S3, SSM' },
    { name: 'consumer', entry: CONSUMER_ENTRY, bare: BARE_SOURCES.consumer, clients: 'DynamoDB' },
  ] as const;
  const figures = [];
  const details: Record<string, unknown> = { runs, outDir, esbuild: LAMBDA_ESBUILD_OPTIONS };
  for (const fn of functions) {
    const handler = await bundle(outDir, fn.name, { entry: fn.entry });
    const bare = await bundle(outDir, `${fn.name}-bare`, { contents: fn.bare });
    const times = await initTimes(handler.file, bare.file, runs);
    figures.push(
      figure(`${fn.name} bundle size`, 'KB', handler.bytes / 1024, bare.bytes / 1024),
      figure(
        `${fn.name} module init (median)`,
        'ms',
        median(times.handlerRuns.map((run) => run.wallMs)),
        median(times.bareRuns.map((run) => run.wallMs)),
        1.3,
      ),
    );
    details[fn.name] = {
      bundleBytes: handler.bytes,
      bareBundleBytes: bare.bytes,
      sourceMapBytes: handler.mapBytes,
      bareSourceMapBytes: bare.mapBytes,
      bareClients: fn.clients,
      initMs: times.handlerRuns.map((run) => run.wallMs),
      bareInitMs: times.bareRuns.map((run) => run.wallMs),
      initCpuMs: times.handlerRuns.map((run) => run.cpuMs),
      bareInitCpuMs: times.bareRuns.map((run) => run.cpuMs),
      initCpuMedianMs: median(times.handlerRuns.map((run) => run.cpuMs)),
      bareInitCpuMedianMs: median(times.bareRuns.map((run) => run.cpuMs)),
    };
  }
  return {
    id: 'coldStart',
    title: 'Cold start (esbuild ESM bundle, minified, node22 target)',
    floorIs: 'a bundle that only constructs the same SDK clients',
    figures,
    details,
  };
}
