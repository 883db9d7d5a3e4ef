// The import direction (test → tools → infra → functions, nothing imports test/) is enforced by Biome's
// noRestrictedImports overrides in biome.json, so `npm test` fails on a wrong import. This test keeps the rule
// itself honest: probe files with forbidden and allowed imports, linted with the project's own biome.json.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIOME = join(REPO_ROOT, 'node_modules', '.bin', 'biome');
const run = promisify(execFile);

const REJECTED = [
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
];
const ALLOWED = [
  ['infra/constructs/probe.ts', '../../functions/core/adapters/table-schemas.js'],
  ['tools/local/probe.ts', '../../infra/app.js'],
  ['tools/cli/probe.ts', '../../functions/core/partner/errors.js'],
  ['test/unit/probe.ts', '../../tools/simulator/index.js'],
  ['functions/poller/probe.ts', '../core/ingest/poll-feed.js'],
];

/** The rules each probe broke, by `path specifier`: every probe in one Biome run. */
const broken = new Map<string, string[]>();

beforeAll(async () => {
  const workdir = await mkdtemp(join(tmpdir(), 'layers-'));
  try {
    const config = JSON.parse(await readFile(join(REPO_ROOT, 'biome.json'), 'utf8'));
    // The probe directory is not a git checkout; everything else is the project's configuration.
    config.vcs = { enabled: false };
    delete config.$schema;
    await writeFile(join(workdir, 'biome.json'), JSON.stringify(config));
    // One file per probe, each in the directory it stands for (probe-<n>.ts: several share a directory).
    const probes = [...REJECTED, ...ALLOWED].map(([path = '', specifier = ''], index) => {
      const file = path.replace(/probe\.ts$/, `probe-${index}.ts`);
      return { file, key: `${path} ${specifier}`, specifier };
    });
    for (const { file, specifier } of probes) {
      await mkdir(dirname(join(workdir, file)), { recursive: true });
      await writeFile(
        join(workdir, file),
        `import { value } from '${specifier}';\n\nexport const probe = value;\n`,
      );
    }
    const stdout = await run(BIOME, ['lint', '--reporter=json', ...probes.map((p) => p.file)], {
      cwd: workdir,
    }).then(
      (result) => result.stdout,
      (error: { stdout?: string }) => error.stdout ?? '',
    );
    const report = JSON.parse(stdout) as { diagnostics: { category: string; location: { path: unknown } }[] };
    for (const { file, key } of probes) {
      const rules = report.diagnostics
        .filter((d) => JSON.stringify(d.location.path).includes(file))
        .map((d) => d.category);
      broken.set(key, rules);
    }
  } finally {
    await rm(workdir, { recursive: true, force: true });
  }
});

const RULE = 'lint/style/noRestrictedImports';

describe('import direction', () => {
  it.each(REJECTED)('rejects %s importing %s', (path, specifier) => {
    expect(broken.get(`${path} ${specifier}`)).toContain(RULE);
  });

  it.each(ALLOWED)('allows %s importing %s', (path, specifier) => {
    expect(broken.get(`${path} ${specifier}`)).not.toContain(RULE);
  });
});
