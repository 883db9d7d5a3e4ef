// Section 4: each function's deployment bundle (esbuild, built the way infra/constructs/ingester-function.ts
// has CDK build it) against a bare bundle that only constructs the same AWS SDK clients with the same
// factories: size on disk, and module initialisation in a fresh `node` process (the `import()` of the
// bundle, i.e. Lambda's Init phase minus the runtime's own start), measured two ways:
// - wall time, the fastest of N imports of each (alternating): on this shared VM the speed of a whole run
//   jumps between two levels for seconds at a time, which only ever adds time, so medians of separately
//   collected runs mix the levels (the medians stay in the details);
// - the instructions the import executes, counted by valgrind (callgrind) in `node --single-threaded`, less
//   those of importing an empty module: steady to about 1 % from run to run, so a change of 2 % shows,
//   where wall time needs many runs to show 10 %. Skipped when valgrind is not installed.
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { CONSUMER_ENTRY } from '../../infra/constructs/consumer.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import {
  type Bundle,
  bundle,
  DUMMY_ENV,
  emptyModule,
  instructionsToImport,
  LAMBDA_ESBUILD_OPTIONS,
  valgrindInstalled,
} from './bundles.js';
import { median } from './measure.js';
import { figure, type Section } from './report.js';

const BARE_SOURCES = {
  poller: `import { createDynamoDbClient, createS3Client, createSqsClient, createSsmClient } from './functions/core/adapters/aws-clients.js';
import { createLambdaClient } from './functions/core/adapters/lambda-continuation.js';
export const clients = [createDynamoDbClient(), createSqsClient(), createS3Client(), createSsmClient(), createLambdaClient()];
export const handler = async () => clients.length;`,
  consumer: `import { createDynamoDbClient } from './functions/core/adapters/aws-clients.js';
export const client = createDynamoDbClient();
export const handler = async () => client.config.region;`,
} as const;

/**
 * The poller's bare bundle plus an Agent from undici's public entry and nothing else: what any poller on
 * undici's public API starts from (the entry loads fetch, WebSocket, the cache and the mocks at import).
 * Shown beside the target, without one, so the share of the cold start that is undici's shows in every run.
 */
const BARE_WITH_UNDICI = `${BARE_SOURCES.poller}
import { Agent } from 'undici';
export const agent = new Agent();`;

/** Prints the import's wall time in ms. */
const IMPORT_TIMER =
  'const t = performance.now(); await import(process.argv[1]); process.stdout.write(String(performance.now() - t));';

/** Milliseconds to import the bundle in a fresh process (with --enable-source-maps, as deployed). */
function importOnce(file: string): Promise<number> {
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
      const ms = Number(out);
      if (code !== 0 || out === '' || !Number.isFinite(ms)) {
        reject(new Error(`importing ${file} failed (exit ${code}): ${err.slice(0, 500)}`));
      } else {
        resolve(ms);
      }
    });
  });
}

async function initTimes(
  handler: string,
  bare: string,
  runs: number,
): Promise<{ handlerRuns: number[]; bareRuns: number[] }> {
  // One untimed import each fills the file cache.
  await importOnce(handler);
  await importOnce(bare);
  const handlerRuns: number[] = [];
  const bareRuns: number[] = [];
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

/** `instructions`: also count each import's instructions (about half a minute, only with valgrind). */
export async function coldStartSection(
  outDir: string,
  runs: number,
  instructions: boolean,
): Promise<Section> {
  // Targets against the bare bundle: the poller's cold start at most 1.5x, the consumer's 1.3x.
  const functions = [
    {
      name: 'poller',
      entry: POLLER_ENTRY,
      bare: BARE_SOURCES.poller,
      clients: 'DynamoDB, SQS, S3, SSM',
      target: 1.5,
      reference: { name: "bare + undici's public Agent", contents: BARE_WITH_UNDICI },
    },
    {
      name: 'consumer',
      entry: CONSUMER_ENTRY,
      bare: BARE_SOURCES.consumer,
      clients: 'DynamoDB',
      target: 1.3,
      reference: undefined,
    },
  ] as const;
  const figures = [];
  const details: Record<string, unknown> = { runs, outDir, esbuild: LAMBDA_ESBUILD_OPTIONS };
  // Counting is an extra: a valgrind that is missing or fails (node under valgrind on another
  // architecture) leaves those figures out and says why in the details; it never fails the bench.
  let notCounted: string | undefined = instructions ? undefined : 'not counted (--quick)';
  const counted = async <T>(count: () => Promise<T>): Promise<T | undefined> => {
    if (notCounted !== undefined) return undefined;
    try {
      return await count();
    } catch (error) {
      notCounted = `not counted: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
      return undefined;
    }
  };
  if (instructions && !(await valgrindInstalled())) notCounted = 'not counted: valgrind is not installed';
  const emptyImport = await counted(async () => instructionsToImport(await emptyModule(outDir)));
  /** Instructions of each import above the empty module's (the process start they share). */
  const importInstructionsOf = (handler: Bundle, bare: Bundle) =>
    counted(async () => {
      const [handlerTotal, bareTotal] = await Promise.all([
        instructionsToImport(handler.file),
        instructionsToImport(bare.file),
      ]);
      const empty = emptyImport ?? 0;
      return { handler: handlerTotal - empty, bare: bareTotal - empty };
    });
  for (const fn of functions) {
    const handler = await bundle(outDir, fn.name, { entry: fn.entry });
    const bare = await bundle(outDir, `${fn.name}-bare`, { contents: fn.bare });
    const times = await initTimes(handler.file, bare.file, runs);
    const counts = await importInstructionsOf(handler, bare);
    // The steady count carries the target when there is one; wall time then only shows the order of size.
    figures.push(
      figure(`${fn.name} bundle size`, 'KB', handler.bytes / 1024, bare.bytes / 1024),
      figure(
        `${fn.name} module init (fastest of ${runs})`,
        'ms',
        Math.min(...times.handlerRuns),
        Math.min(...times.bareRuns),
        counts === undefined ? fn.target : undefined,
      ),
      ...(counts === undefined
        ? []
        : [
            figure(
              `${fn.name} module init, instructions`,
              'M instr',
              counts.handler / 1e6,
              counts.bare / 1e6,
              fn.target,
            ),
          ]),
    );
    const reference =
      fn.reference === undefined || counts === undefined
        ? undefined
        : await counted(async () => {
            const built = await bundle(outDir, `${fn.name}-reference`, { contents: fn.reference.contents });
            return (await instructionsToImport(built.file)) - (emptyImport ?? 0);
          });
    if (fn.reference !== undefined && reference !== undefined && counts !== undefined) {
      figures.push(
        figure(`  ${fn.reference.name}, instructions`, 'M instr', reference / 1e6, counts.bare / 1e6),
      );
    }
    details[fn.name] = {
      referenceImportInstructions: reference,
      bundleBytes: handler.bytes,
      bareBundleBytes: bare.bytes,
      sourceMapBytes: handler.mapBytes,
      bareSourceMapBytes: bare.mapBytes,
      bareClients: fn.clients,
      initMedianMs: median(times.handlerRuns),
      bareInitMedianMs: median(times.bareRuns),
      importInstructions: counts?.handler,
      bareImportInstructions: counts?.bare,
      initMs: times.handlerRuns,
      bareInitMs: times.bareRuns,
    };
  }
  details.instructions = notCounted ?? 'counted';
  details.emptyImportInstructions = emptyImport;
  return {
    id: 'coldStart',
    title: 'Cold start (esbuild ESM bundle, minified, node22 target)',
    floorIs: 'a bundle that only constructs the same SDK clients',
    figures,
    details,
  };
}
