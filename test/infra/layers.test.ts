// The import direction (test → tools → infra → functions, nothing imports test/) is enforced by Biome's
// noRestrictedImports overrides in biome.json, so `npm test` fails on a wrong import. This test keeps the rule
// itself honest: probe files with forbidden and allowed imports, linted with the project's own biome.json.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIOME = join(REPO_ROOT, 'node_modules', '.bin', 'biome');
const run = promisify(execFile);

let workdir: string;

beforeAll(async () => {
  workdir = await mkdtemp(join(tmpdir(), 'layers-'));
  const config = JSON.parse(await readFile(join(REPO_ROOT, 'biome.json'), 'utf8'));
  // The probe directory is not a git checkout; everything else is the project's configuration.
  config.vcs = { enabled: false };
  delete config.$schema;
  await writeFile(join(workdir, 'biome.json'), JSON.stringify(config));
});

afterAll(async () => {
  await rm(workdir, { recursive: true, force: true });
});

/** Lints one probe file at `path` (relative to the repo root) and returns the rules it broke. */
async function violations(path: string, specifier: string): Promise<string[]> {
  const file = join(workdir, path);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `import { value } from '${specifier}';\n\nexport const probe = value;\n`);
  try {
    await run(BIOME, ['lint', '--reporter=json', path], { cwd: workdir });
    return [];
  } catch (error) {
    const stdout = (error as { stdout?: string }).stdout ?? '';
    const report = JSON.parse(stdout) as { diagnostics: { category: string }[] };
    return report.diagnostics.map((diagnostic) => diagnostic.category);
  } finally {
    await rm(file);
  }
}

const RULE = 'lint/style/noRestrictedImports';

describe('import direction', () => {
  it.each([
    ['functions/core/ingest/probe.ts', '../../../infra/stack.js'],
    ['functions/core/ingest/probe.ts', '../../../tools/local/moto.js'],
    ['functions/poller/probe.ts', '../../test/support/fakes.js'],
    ['functions/poller/probe.ts', 'aws-cdk-lib'],
    ['infra/constructs/probe.ts', '../../tools/simulator/index.js'],
    ['infra/probe.ts', '../test/support/fakes.js'],
    ['tools/local/probe.ts', '../../test/support/fakes.js'],
    ['lab/bench/probe.ts', 'vitest'],
    ['tools/local/probe.ts', '../../lab/aws-proxy.js'],
    ['functions/core/ingest/probe.ts', '../../../lab/bench/model.js'],
    ['infra/probe.ts', '../lab/chaos/run.ts'],
  ])('rejects %s importing %s', async (path, specifier) => {
    expect(await violations(path, specifier)).toContain(RULE);
  });

  it.each([
    ['infra/constructs/probe.ts', '../../functions/core/adapters/table-schemas.js'],
    ['tools/local/probe.ts', '../../infra/app.js'],
    ['tools/cli/probe.ts', '../../functions/core/partner/errors.js'],
    ['test/unit/probe.ts', '../../tools/simulator/index.js'],
    ['functions/poller/probe.ts', '../core/ingest/poll-feed.js'],
  ])('allows %s importing %s', async (path, specifier) => {
    expect(await violations(path, specifier)).not.toContain(RULE);
  });
});
