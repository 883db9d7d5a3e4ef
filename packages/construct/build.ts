// Builds the construct library into dist/: infra/order-feed-ingester.ts and what it imports compiled to ESM
// JavaScript with .d.ts (dist/infra, dist/functions/core), and each function's Lambda bundle in dist/lambda/<name>,
// taken from this repository's own bundling (IngesterFunction: esbuild, source map cut to our code) so the
// published code is the code this repository tests. Installed, the construct deploys those bundles
// (prebuiltBundle in infra/constructs/ingester-function.ts). Run by `npm pack` (prepack).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CfnFunction, IFunction } from 'aws-cdk-lib/aws-lambda';
import { buildApp } from '../../infra/app.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

rmSync(here('dist'), { recursive: true, force: true });
execFileSync(
  process.execPath,
  [here('../../node_modules/typescript/bin/tsc'), '-p', here('tsconfig.build.json')],
  {
    stdio: 'inherit',
  },
);

// CDK bundles and stages each function's code when the function is constructed: no synth needed.
const outdir = mkdtempSync(join(tmpdir(), 'order-feed-construct-'));
try {
  const { stack } = buildApp({
    outdir,
    context: {
      orderFeed: { partnerBaseUrl: 'https://partner.example.com', tokenParameterName: '/build/token' },
    },
  });
  const { ingester } = stack;
  const functions: Record<string, IFunction> = {
    poller: ingester.poller.function,
    dispatcher: ingester.dispatcher.function,
    consumer: ingester.consumer.function,
  };
  for (const [name, fn] of Object.entries(functions)) {
    const code = stack.resolve((fn.node.defaultChild as CfnFunction).code) as { s3Key: string };
    const assetHash = code.s3Key.replace(/\.zip$/, '');
    cpSync(join(outdir, `asset.${assetHash}`), here(`dist/lambda/${name}`), { recursive: true });
  }
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
