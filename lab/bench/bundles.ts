// How section 4 builds and measures a Lambda bundle: esbuild with the options IngesterFunction gives CDK,
// the same source-map step, and the instructions a fresh `node` spends importing it (see cold-start.ts).
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { LAMBDA_ESBUILD_OPTIONS } from '../../infra/bundling/esbuild-options.js';
import { keepOwnCodeOnly, type SourceMapV3 } from '../../infra/bundling/own-code-source-map.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What Lambda sets, with dummy values: the config modules check these at import. */
export const DUMMY_ENV: Record<string, string> = {
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

export interface Bundle {
  file: string;
  bytes: number;
  mapBytes: number;
}

export async function bundle(
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
      // About 12 s on this machine; a run ten times slower is stuck, not slow.
      { env: { PATH: process.env.PATH ?? '', ...DUMMY_ENV }, maxBuffer: 16 * 1024 * 1024, timeout: 180_000 },
    );
    const totals = /^(?:summary|totals): (\d+)/m.exec(await readFile(out, 'utf8'));
    if (!totals?.[1]) throw new Error(`callgrind wrote no total for ${file}`);
    return Number(totals[1]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
