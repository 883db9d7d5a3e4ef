// The esbuild options IngesterFunction gives CDK's NodejsFunction, restated as esbuild's own options so the
// bench (lab/bench/bundles.ts) and the bundle tests build exactly what Lambda runs.
import type { BuildOptions } from 'esbuild';

/**
 * The `bundling` options of IngesterFunction (NodejsFunction, OutputFormat.ESM, target node22, minify,
 * source maps without sources content, AWS SDK bundled), restated as esbuild options: the construct
 * passes them to the esbuild CLI and does not export them. Keep the two in step, including the construct's
 * afterBundling step, which `bundle()` in lab/bench/bundles.ts repeats: the source map is cut down to our own code.
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
