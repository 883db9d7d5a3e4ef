// The Lambda bundles as IngesterFunction builds them (esbuild with LAMBDA_ESBUILD_OPTIONS, then the source
// map cut down to our own code), built for real (once per entry) and run in a child Node process as Lambda
// runs them.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { SourceMap, type SourceMapPayload } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAMBDA_ESBUILD_OPTIONS } from '../../infra/bundling/esbuild-options.js';
import { keepOwnCodeOnly, type SourceMapV3 } from '../../infra/bundling/own-code-source-map.js';
import { CONSUMER_ENTRY } from '../../infra/constructs/consumer.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import { DUMMY_ENV } from '../../lab/bench/bundles.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/bundle/throwers.ts', import.meta.url));

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'lambda-bundle-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const bundles = new Map<string, Promise<{ file: string; metafile: Metafile }>>();

/** The entry bundled as the stack bundles it, once per file. */
function bundle(entry: string): Promise<{ file: string; metafile: Metafile }> {
  const file = path.join(dir, path.basename(path.dirname(entry)), 'index.mjs');
  const built =
    bundles.get(entry) ??
    build({ ...LAMBDA_ESBUILD_OPTIONS, entryPoints: [entry], outfile: file, metafile: true }).then(
      (result) => ({ file, metafile: result.metafile }),
    );
  bundles.set(entry, built);
  return built;
}

async function readMap(file: string): Promise<SourceMapV3> {
  return JSON.parse(await readFile(`${file}.map`, 'utf8')) as SourceMapV3;
}

/**
 * Runs an ES module script in a fresh `node --enable-source-maps` (as Lambda runs the bundles) and returns
 * its stdout. Asynchronous: the test's own HTTP server must keep answering meanwhile.
 */
async function runNode(script: string, env?: Record<string, string>): Promise<string> {
  const args = ['--enable-source-maps', '--input-type=module', '-e', script];
  const { stdout } = await promisify(execFile)(process.execPath, args, { env });
  return stdout;
}

/** The stack of the error `call` throws, in a fresh Node process that imports `file`. */
function stackOf(file: string, call: string): Promise<string> {
  return runNode(`const m = await import(${JSON.stringify(pathToFileURL(file).href)});
try { m.${call}(); } catch (error) { process.stdout.write(error.stack); }`);
}

/** 1-based line of the fixture file holding `text`. */
async function fixtureLine(name: string, text: string): Promise<number> {
  const lines = (await readFile(path.join(path.dirname(FIXTURE), name), 'utf8')).split('\n');
  const index = lines.findIndex((line) => line.includes(text));
  expect(index, text).toBeGreaterThanOrEqual(0);
  return index + 1;
}

describe('source map of our own code only', () => {
  let file: string;
  let full: SourceMapV3;
  let trimmed: SourceMapV3;

  beforeAll(async () => {
    ({ file } = await bundle(FIXTURE));
    full = await readMap(file);
    trimmed = keepOwnCodeOnly(full);
    await writeFile(`${file}.map`, JSON.stringify(trimmed));
  });

  it('keeps our sources and drops every node_modules source', () => {
    expect(full.sources.some((source) => source.includes('node_modules/undici/'))).toBe(true);

    expect(trimmed.sources.filter((source) => source.includes('node_modules'))).toEqual([]);
    expect(trimmed.sources.some((source) => source.endsWith('test/fixtures/bundle/throwers.ts'))).toBe(true);
    expect(trimmed.sources.some((source) => source.endsWith('functions/core/partner/client.ts'))).toBe(true);
  });

  it('maps every position in our code as the full map does, and no position in a dependency', () => {
    expectSameOwnMappings(full, trimmed);
  });

  it('points a stack frame in our code at the TypeScript line', async () => {
    const stack = await stackOf(file, 'throwInOwnCode');

    const frames = stack.split('\n').filter((line) => line.trimStart().startsWith('at '));
    expect(frames[0]).toContain(
      `throwers.ts:${await fixtureLine('throwers.ts', "throw new Error('thrown in our code')")}:`,
    );
  });

  it("leaves a dependency's frame at its bundle position and maps our callers below it", async () => {
    const stack = await stackOf(file, 'throwInDependency');

    expect(stack).toContain('Unsupported type passed');
    const frames = stack.split('\n').filter((line) => line.trimStart().startsWith('at '));
    expect(frames[0]).toMatch(/index\.mjs:\d+:\d+\)?$/);
    expect(frames[0]).not.toContain('.ts:');
    expect(frames.find((frame) => frame.includes('dependency-call.ts:'))).toContain(
      `dependency-call.ts:${await fixtureLine('dependency-call.ts', 'return marshall(')}:`,
    );
    expect(frames.find((frame) => frame.includes('throwers.ts:'))).toContain(
      `throwers.ts:${await fixtureLine('throwers.ts', 'return marshallValue(')}:`,
    );
  });

  it("does the same over the poller's bundle, where our modules and the dependencies' interleave", async () => {
    const { file: poller } = await bundle(POLLER_ENTRY);
    const pollerMap = await readMap(poller);

    expectSameOwnMappings(pollerMap, keepOwnCodeOnly(pollerMap));
  });
});

/**
 * Looks every generated position of `full`'s mappings up in both maps, with Node's own reader: a position
 * in our code finds the same original position, a position in a dependency finds none.
 */
function expectSameOwnMappings(full: SourceMapV3, trimmed: SourceMapV3): void {
  const before = sourceMap(full);
  const after = sourceMap(trimmed);
  let own = 0;
  let dependency = 0;
  full.mappings.split(';').forEach((line, lineIndex) => {
    let column = 0;
    for (const segment of line.split(',')) {
      if (segment === '') continue;
      column = nextColumn(column, segment);
      const original = before(lineIndex, column);
      if (original.originalSource === undefined) continue;
      const entry = after(lineIndex, column);
      if (original.originalSource.includes('/node_modules/')) {
        dependency += 1;
        if (entry.originalSource !== undefined) {
          expect.fail(
            `${lineIndex}:${column} (in ${original.originalSource}) maps to ${entry.originalSource}`,
          );
        }
      } else {
        own += 1;
        if (
          entry.originalSource !== original.originalSource ||
          entry.originalLine !== original.originalLine ||
          entry.originalColumn !== original.originalColumn
        ) {
          expect.fail(
            `${lineIndex}:${column} maps to ${JSON.stringify(entry)}, not ${JSON.stringify(original)}`,
          );
        }
      }
    }
  });
  expect(own).toBeGreaterThan(10);
  expect(dependency).toBeGreaterThan(1000);
}

type Lookup = (
  line: number,
  column: number,
) => {
  originalSource?: string;
  originalLine?: number;
  originalColumn?: number;
};

/** Node's own source map reader (the one --enable-source-maps uses), as a lookup by generated position. */
function sourceMap(payload: SourceMapV3): Lookup {
  // @types/node wants sourcesContent, which our maps leave out (esbuild's sourcesContent: false).
  const map = new SourceMap({ file: 'index.mjs', sourceRoot: '', ...payload } as SourceMapPayload);
  return (line, column) => map.findEntry(line, column);
}

/** Adds the generated-column delta of one mapping segment (its first base64 VLQ field). */
function nextColumn(column: number, segment: string): number {
  const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = BASE64.indexOf(char);
    value += (digit & 31) << shift;
    if (!(digit & 32)) break;
    shift += 5;
  }
  return column + (value & 1 ? -(value >>> 1) : value >>> 1);
}

describe('tracing in the bundles', () => {
  /** The variables the handlers check at import, with the bench's dummy values. */
  const FUNCTION_ENV = { PATH: process.env.PATH ?? '', ...DUMMY_ENV };

  /** Whether importing the bundle started the X-Ray SDK (its context namespace exists once it is loaded). */
  async function loadsXRay(file: string, env: Record<string, string>): Promise<boolean> {
    const stdout = await runNode(
      `const m = await import(${JSON.stringify(pathToFileURL(file).href)});
process.stdout.write(typeof m.handler + ' ' + Boolean(process.namespaces?.AWSXRay));`,
      env,
    );
    // Handler: index.handler in the stack.
    expect(stdout.split(' ')[0]).toBe('function');
    return stdout.endsWith('true');
  }

  it.each([
    ['poller', 'functions/poller/handler.ts', POLLER_ENTRY],
    ['consumer', 'functions/consumer/handler.ts', CONSUMER_ENTRY],
  ])(
    '%s: exports handler from %s; the X-Ray SDK starts inside Lambda only, and not when POWERTOOLS_TRACE_ENABLED is false',
    async (_name, relative, entry) => {
      expect(entry.endsWith(relative)).toBe(true);
      const { file } = await bundle(entry);
      const lambda = { AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x', LAMBDA_TASK_ROOT: '/var/task' };

      const started = await Promise.all([
        loadsXRay(file, FUNCTION_ENV),
        loadsXRay(file, { ...FUNCTION_ENV, ...lambda }),
        loadsXRay(file, { ...FUNCTION_ENV, ...lambda, POWERTOOLS_TRACE_ENABLED: 'false' }),
      ]);

      expect(started).toEqual([false, true, false]);
    },
  );
});

describe('the partner client in a bundle', () => {
  let server: Server;
  let origin: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({ hasMore: false, data: [], nextPageId: `${request.method} ${request.url}` }),
      );
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.close();
    await once(server, 'close');
  });

  it("sends a request through undici's public API and reads the page", async () => {
    const { file } = await bundle(FIXTURE);
    const script = `const { createPartnerClient } = await import(${JSON.stringify(pathToFileURL(file).href)});
const client = createPartnerClient({ baseUrl: ${JSON.stringify(origin)}, token: async () => 'tok' });
const page = await client.getOrderUpdates({ pageSize: 1 }, { deadline: Date.now() + 10_000 });
process.stdout.write(JSON.stringify(page), () => process.exit(0));`;

    const stdout = await runNode(script);

    expect(JSON.parse(stdout)).toEqual({
      hasMore: false,
      data: [],
      nextPageId: 'GET /v1/orderUpdates?pageSize=1',
    });
  });
});
