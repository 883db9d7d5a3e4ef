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
import { LAMBDA_ESBUILD_OPTIONS } from '../../infra/bundling/esbuild-options.js';
import { CONSUMER_ENTRY } from '../../infra/constructs/consumer.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import {
  type Bundle,
  bundle,
  DUMMY_ENV,
  emptyModule,
  instructionsToImport,
  valgrindInstalled,
} from './bundles.js';
import { median } from './measure.js';
import { type Figure, figure, formatNumber, type Section } from './report.js';

const BARE_SOURCES = {
  poller: `import { createDynamoDbClient, createS3Client, createSqsClient, createSsmClient } from './functions/core/adapters/aws-clients.js';
import { createLambdaClient } from './functions/core/adapters/lambda-invoke.js';
export const clients = [createDynamoDbClient(), createSqsClient(), createS3Client(), createSsmClient(), createLambdaClient()];
export const handler = async () => clients.length;`,
  consumer: `import { createDynamoDbClient } from './functions/core/adapters/aws-clients.js';
export const client = createDynamoDbClient();
export const handler = async () => client.config.region;`,
} as const;

/**
 * The poller's guard. Its old target, 1.5x the bare bundle, was retired: undici's public entry alone (fetch,
 * WebSocket, the cache and the mocks, loaded at import; esbuild cannot drop them from CommonJS) is 1.74x, and
 * undici is the user's choice. What the poller can still answer for is its own code: at most 15 % on top of
 * the bare bundle plus an Agent from undici's public entry and nothing else.
 */
const UNDICI_GUARD = {
  target: 1.15,
  contents: `${BARE_SOURCES.poller}
import { Agent } from 'undici';
export const agent = new Agent();`,
};

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

/**
 * The wall time of each import of each file, `runs` times, the order rotating so drift affects all alike.
 * `warmUp`: one untimed import each first fills the file cache (skipped by --quick, whose times are not read).
 */
async function initTimes(files: readonly string[], runs: number, warmUp: boolean): Promise<number[][]> {
  if (warmUp) for (const file of files) await importOnce(file);
  const times = files.map((): number[] => []);
  for (let i = 0; i < runs; i++) {
    for (let j = 0; j < files.length; j++) {
      const k = (i + j) % files.length;
      times[k]?.push(await importOnce(files[k] as string));
    }
  }
  return times;
}

/** `instructions`: a full run, counting each import's instructions too (about half a minute, with valgrind). */
export async function coldStartSection(
  outDir: string,
  runs: number,
  instructions: boolean,
): Promise<Section> {
  // The consumer's target is on its own ratio to the bare bundle; the poller's guard is on its ratio to the
  // bare bundle plus undici's entry (UNDICI_GUARD).
  const functions = [
    {
      name: 'poller',
      entry: POLLER_ENTRY,
      bare: BARE_SOURCES.poller,
      clients: 'DynamoDB, SQS, S3, SSM',
      target: undefined,
      guard: UNDICI_GUARD,
    },
    {
      name: 'consumer',
      entry: CONSUMER_ENTRY,
      bare: BARE_SOURCES.consumer,
      clients: 'DynamoDB',
      target: 1.3,
      guard: undefined,
    },
  ] as const;
  const figures: Figure[] = [];
  const formulas: string[] = [];
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
  const importInstructionsOf = (bundles: readonly Bundle[]) =>
    counted(async () => {
      const totals = await Promise.all(bundles.map((built) => instructionsToImport(built.file)));
      return totals.map((total) => total - (emptyImport ?? 0));
    });
  for (const fn of functions) {
    const handler = await bundle(outDir, fn.name, { entry: fn.entry });
    const bare = await bundle(outDir, `${fn.name}-bare`, { contents: fn.bare });
    const guard = fn.guard && (await bundle(outDir, `${fn.name}-undici`, { contents: fn.guard.contents }));
    const built = guard ? [handler, bare, guard] : [handler, bare];
    // A full run (it counts instructions) warms the file cache first; --quick does not.
    const times = await initTimes(
      built.map((b) => b.file),
      runs,
      instructions,
    );
    const [handlerMs = 0, bareMs = 0, ...undiciMs] = times.map((t) => Math.min(...t));
    const counts = await importInstructionsOf(built);
    // The steady count carries the target when there is one; wall time then only shows the order of size.
    const [value = 0, floor = 0, undici] = counts?.map((count) => count / 1e6) ?? [
      handlerMs,
      bareMs,
      ...undiciMs,
    ];
    const [unit, how] = counts ? ['M instr', ', instructions'] : ['ms', ` (fastest of ${runs})`];
    figures.push(
      figure(`${fn.name} bundle size`, 'KB', handler.bytes / 1024, bare.bytes / 1024),
      figure(
        `${fn.name} module init (fastest of ${runs})`,
        'ms',
        handlerMs,
        bareMs,
        counts === undefined ? fn.target : undefined,
      ),
      ...(counts === undefined
        ? []
        : [figure(`${fn.name} module init, instructions`, unit, value, floor, fn.target)]),
    );
    if (fn.guard && undici !== undefined) {
      figures.push(
        figure(`  bare + undici's public Agent${how}`, unit, undici, floor),
        figure(`  over bare + undici's entry${how}`, unit, value, undici, fn.guard.target),
      );
      formulas.push(
        `Cold start guard: our own code adds at most ${Math.round((fn.guard.target - 1) * 100)} % to the bare bundle plus undici's entry: ${fn.name} ${formatNumber(value)} ${unit} against ${formatNumber(undici)} ${unit}, ${(value / undici).toFixed(2)}x (target <= ${fn.guard.target}x; undici's entry alone is ${(undici / floor).toFixed(2)}x the bare bundle)`,
      );
    }
    details[fn.name] = {
      bundleBytes: handler.bytes,
      bareBundleBytes: bare.bytes,
      sourceMapBytes: handler.mapBytes,
      bareSourceMapBytes: bare.mapBytes,
      bareClients: fn.clients,
      initMedianMs: median(times[0] ?? []),
      bareInitMedianMs: median(times[1] ?? []),
      undiciInitMedianMs: guard && median(times[2] ?? []),
      importInstructions: counts?.[0],
      bareImportInstructions: counts?.[1],
      undiciImportInstructions: counts?.[2],
      initMs: times[0],
      bareInitMs: times[1],
      undiciInitMs: times[2],
    };
  }
  details.instructions = notCounted ?? 'counted';
  details.emptyImportInstructions = emptyImport;
  return {
    id: 'coldStart',
    title: 'Cold start (esbuild ESM bundle, minified, node22 target)',
    floorIs:
      "a bundle that only constructs the same SDK clients (the poller's guard: that plus undici's entry)",
    figures,
    formulas,
    details,
  };
}
