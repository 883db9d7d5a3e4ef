// Section 5: each function's deployment bundle (esbuild, built the way infra/constructs/ingester-function.ts
// has CDK build it) against a bare bundle that only constructs the same AWS SDK clients with the same
// factories: size on disk, and module initialisation in a fresh `node` process (the `import()` of the
// bundle, i.e. Lambda's Init phase minus the runtime's own start), measured two ways:
// - wall time, the fastest of N imports of each (alternating): on this shared VM the speed of a whole run
//   jumps between two levels for seconds at a time, which only ever adds time, so medians of separately
//   collected runs mix the levels (the medians stay in the details);
// - the instructions the import executes, counted by valgrind (callgrind) in `node --single-threaded`, less
//   those of importing an empty module: steady to about 0.5 % from run to run, so a change of 2 % shows,
//   where wall time needs many runs to show 10 %. Skipped when valgrind is not installed.
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { type BuildOptions, build, type Plugin } from 'esbuild';
import { keepOwnCodeOnly, type SourceMapV3 } from '../../infra/bundling/own-code-source-map.js';
import { CONSUMER_ENTRY } from '../../infra/constructs/consumer.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import { pollerInitParts } from './cold-start-parts.js';
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

export interface Bundle {
  file: string;
  bytes: number;
  mapBytes: number;
}

export async function bundle(
  outDir: string,
  name: string,
  source: { entry: string } | { contents: string },
  plugins: Plugin[] = [],
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
    plugins,
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

export async function valgrindInstalled(): Promise<boolean> {
  try {
    await promisify(execFile)('valgrind', ['--version']);
    return true;
  } catch {
    return false;
  }
}

export async function emptyModule(outDir: string): Promise<string> {
  const file = path.join(outDir, 'empty', 'index.mjs');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, 'export const handler = async () => undefined;\n');
  return file;
}

/**
 * Instructions executed by a fresh `node --single-threaded --enable-source-maps` that imports `file` and
 * exits (callgrind's total). One thread, so no background compiler or collector thread makes the count
 * depend on timing.
 */
export async function instructionsToImport(file: string): Promise<number> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-callgrind-'));
  try {
    const out = path.join(dir, 'callgrind.out');
    await promisify(execFile)(
      'valgrind',
      [
        '--tool=callgrind',
        `--callgrind-out-file=${out}`,
        process.execPath,
        '--single-threaded',
        '--enable-source-maps',
        '--input-type=module',
        '-e',
        'await import(process.argv[1]);',
        pathToFileURL(file).href,
      ],
      { env: { PATH: process.env.PATH ?? '', ...DUMMY_ENV }, maxBuffer: 16 * 1024 * 1024 },
    );
    const totals = /^(?:summary|totals): (\d+)/m.exec(await readFile(out, 'utf8'));
    if (!totals?.[1]) throw new Error(`callgrind wrote no total for ${file}`);
    return Number(totals[1]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `instructions`: also count each import's instructions (about half a minute, only with valgrind); `parts`:
 * and break the poller's init down by part (cold-start-parts.ts, about a minute more).
 */
export async function coldStartSection(
  outDir: string,
  runs: number,
  options: { instructions: boolean; parts: boolean } = { instructions: false, parts: false },
): Promise<Section> {
  const functions = [
    { name: 'poller', entry: POLLER_ENTRY, bare: BARE_SOURCES.poller, clients: 'DynamoDB, SQS, S3, SSM' },
    { name: 'consumer', entry: CONSUMER_ENTRY, bare: BARE_SOURCES.consumer, clients: 'DynamoDB' },
  ] as const;
  const figures = [];
  const details: Record<string, unknown> = { runs, outDir, esbuild: LAMBDA_ESBUILD_OPTIONS };
  const counting = options.instructions && (await valgrindInstalled());
  const emptyImport = counting ? await instructionsToImport(await emptyModule(outDir)) : undefined;
  details.emptyImportInstructions =
    emptyImport ??
    (options.instructions ? 'not counted: valgrind is not installed' : 'not counted (--quick)');
  /** Instructions of each import above the empty module's (the process start they share). */
  const importInstructionsOf = async (handler: Bundle, bare: Bundle) => {
    const [handlerTotal, bareTotal] = await Promise.all([
      instructionsToImport(handler.file),
      instructionsToImport(bare.file),
    ]);
    const empty = emptyImport ?? 0;
    return { handler: handlerTotal - empty, bare: bareTotal - empty };
  };
  for (const fn of functions) {
    const handler = await bundle(outDir, fn.name, { entry: fn.entry });
    const bare = await bundle(outDir, `${fn.name}-bare`, { contents: fn.bare });
    const times = await initTimes(handler.file, bare.file, runs);
    const instructions = emptyImport === undefined ? undefined : await importInstructionsOf(handler, bare);
    figures.push(
      figure(`${fn.name} bundle size`, 'KB', handler.bytes / 1024, bare.bytes / 1024),
      figure(
        `${fn.name} module init (fastest of ${runs})`,
        'ms',
        Math.min(...times.handlerRuns.map((run) => run.wallMs)),
        Math.min(...times.bareRuns.map((run) => run.wallMs)),
        1.3,
      ),
      ...(instructions === undefined
        ? []
        : [
            figure(
              `${fn.name} module init, instructions`,
              'M instr',
              instructions.handler / 1e6,
              instructions.bare / 1e6,
              1.3,
            ),
          ]),
    );
    if (fn.name === 'poller' && options.parts && instructions !== undefined && emptyImport !== undefined) {
      const parts = await pollerInitParts(
        outDir,
        handler,
        instructions.handler,
        instructions.bare,
        emptyImport,
      );
      figures.push(...parts.figures);
      details.pollerInitParts = parts.details;
    }
    details[fn.name] = {
      bundleBytes: handler.bytes,
      bareBundleBytes: bare.bytes,
      sourceMapBytes: handler.mapBytes,
      bareSourceMapBytes: bare.mapBytes,
      bareClients: fn.clients,
      initMedianMs: median(times.handlerRuns.map((run) => run.wallMs)),
      bareInitMedianMs: median(times.bareRuns.map((run) => run.wallMs)),
      importInstructions: instructions?.handler,
      bareImportInstructions: instructions?.bare,
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
