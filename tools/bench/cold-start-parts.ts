// Section 5's breakdown: what each part of the poller costs its module init, in instructions (see
// cold-start.ts for why instructions). The poller's bundle is built again with one part replaced by an
// empty stand-in, and the part's share is the full bundle's count less that bundle's. A stand-in only has
// to let the import finish: these bundles are measured, never run.
//
// The last figure answers the question the 1.3x target raises: the poller without the parts that are not
// undici and not our own code, against the bare bundle. If that is already above 1.3x, no trimming of
// those parts reaches the target while undici stays.
import { readFile } from 'node:fs/promises';
import type { Plugin } from 'esbuild';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import { bundle, instructionsToImport } from './bundles.js';
import { type Figure, figure } from './report.js';

/** Replaces every module whose path matches `filter` with `contents`. */
function standIn(filter: RegExp, contents: string): Plugin {
  return {
    name: `stand-in ${filter.source}`,
    setup(build) {
      build.onLoad({ filter }, () => ({ contents, loader: 'ts' }));
    },
  };
}

/** zod/mini's functions, each returning an object that answers every call and property with itself. */
const ZOD_STAND_IN = `const any: any = new Proxy(function () {}, {
  get: (_target, key) => (key === 'then' ? undefined : any),
  apply: () => any,
});
export const NEVER = any;
export class ZodMiniOptional {}
export const safeParse = (_schema: unknown, value: unknown) => ({ success: true, data: value });
${[
  'int',
  'minimum',
  'maximum',
  'pipe',
  'union',
  'boolean',
  'transform',
  'string',
  'trim',
  'regex',
  'refine',
  'array',
  'minLength',
  'record',
  'unknown',
  'number',
  'custom',
  'object',
  'nullish',
]
  .map((name) => `export const ${name} = () => any;`)
  .join('\n')}
const choice = () => any;
export { choice as enum };`;

const PARTS = {
  tracer: standIn(
    /observability\/powertools-tracing\.ts$/,
    'export const powertoolsFunctionTracing = () => {};',
  ),
  undici: standIn(/node_modules\/undici\/index\.js$/, 'export class Agent {}'),
  http2: {
    name: 'undici without node:http2',
    setup(build) {
      build.onLoad({ filter: /undici\/lib\/dispatcher\/client-h2\.js$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        return { contents: source.replace("require('node:http2')", '{ constants: {} }'), loader: 'js' };
      });
    },
  } satisfies Plugin,
  zod: {
    name: 'zod stand-in',
    setup(build) {
      build.onResolve({ filter: /^zod\/mini$/ }, () => ({ path: 'zod-stand-in', namespace: 'stand-in' }));
      build.onLoad({ filter: /.*/, namespace: 'stand-in' }, () => ({ contents: ZOD_STAND_IN, loader: 'ts' }));
    },
  } satisfies Plugin,
  powertools: standIn(
    /observability\/powertools\.ts$/,
    `export const createObservability = (serviceName: string) => ({ serviceName, logger: {}, metrics: {} });
export const powertoolsMetrics = () => ({});
export const logPort = () => ({});
export const countOn = () => () => {};
export const MetricUnit = {};`,
  ),
} as const;

const LABELS: Record<keyof typeof PARTS, string> = {
  tracer: 'Powertools Tracer + X-Ray SDK (parsed; run only when tracing is on)',
  undici: 'undici',
  http2: '  of which node:http2 (loaded by undici at import)',
  zod: 'zod/mini (the settings checked at cold start)',
  powertools: 'Powertools Logger and Metrics',
};

/**
 * The share of each part in the poller's import, and the poller with undici and our own code only against
 * `bareInstructions` (all counts above the empty module's `emptyInstructions`).
 */
export async function pollerInitParts(
  outDir: string,
  fullInstructions: number,
  bareInstructions: number,
  emptyInstructions: number,
): Promise<{ figures: Figure[]; details: Record<string, number> }> {
  const without = async (name: string, plugins: Plugin[]) =>
    (await instructionsToImport(
      (
        await bundle(outDir, `poller-without-${name}`, { entry: POLLER_ENTRY }, plugins)
      ).file,
    )) - emptyInstructions;
  const names = Object.keys(PARTS) as Array<keyof typeof PARTS>;
  const details: Record<string, number> = {};
  const figures: Figure[] = [];
  // Two valgrind processes at a time: one per core.
  for (let i = 0; i < names.length; i += 2) {
    const pair = names.slice(i, i + 2);
    const counts = await Promise.all(pair.map((name) => without(name, [PARTS[name]])));
    pair.forEach((name, index) => {
      const share = fullInstructions - (counts[index] ?? fullInstructions);
      details[name] = share;
      figures.push(figure(`poller init share: ${LABELS[name]}`, 'M instr', share / 1e6));
    });
  }
  const undiciAndOwnCode = await without('all-but-undici', [PARTS.tracer, PARTS.zod, PARTS.powertools]);
  details.undiciAndOwnCodeOnly = undiciAndOwnCode;
  figures.push(
    figure(
      'poller with only undici and our own code, instructions',
      'M instr',
      undiciAndOwnCode / 1e6,
      bareInstructions / 1e6,
    ),
  );
  return { figures, details };
}
