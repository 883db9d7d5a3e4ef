// Builds the consumer kit into dist/: the contract's reader and apply-if-newer (functions/core/contract/
// consumer-kit.ts and what it imports) compiled to ESM JavaScript with .d.ts, the JSON Schema and the AsyncAPI
// document beside them, and the contract's README as the package's. Run by `npm pack` (prepack).
import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const contract = (file: string) => here(`../../functions/core/contract/${file}`);

rmSync(here('dist'), { recursive: true, force: true });
execFileSync(
  process.execPath,
  [here('../../node_modules/typescript/bin/tsc'), '-p', here('tsconfig.build.json')],
  {
    stdio: 'inherit',
  },
);
for (const file of ['order-version-message.schema.json', 'asyncapi.json']) {
  copyFileSync(contract(file), here(`dist/contract/${file}`));
}
// The package's README is the contract's (git-ignored copy; the source stays functions/core/contract/README.md).
copyFileSync(contract('README.md'), here('README.md'));
