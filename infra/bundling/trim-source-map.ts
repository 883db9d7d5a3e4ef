// `tsx infra/bundling/trim-source-map.ts <bundle.map>…`: rewrites each source map in place with only the
// mappings into our own code (see own-code-source-map.ts). Run by IngesterFunction after esbuild.
import { readFileSync, writeFileSync } from 'node:fs';
import { keepOwnCodeOnly, type SourceMapV3 } from './own-code-source-map.js';

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('Usage: tsx infra/bundling/trim-source-map.ts <bundle.map>…\n');
  process.exit(2);
}
for (const file of files) {
  const map = JSON.parse(readFileSync(file, 'utf8')) as SourceMapV3;
  writeFileSync(file, JSON.stringify(keepOwnCodeOnly(map)));
}
