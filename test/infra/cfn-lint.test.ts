// cfn-lint over the synthesized template (rules that are CDK idioms are suppressed in infra/cfn-lint.yaml).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FULL_CONFIG, synthStack } from './synth.js';

const outdir = mkdtempSync(join(tmpdir(), 'order-feed-cfn-lint-'));
const configFile = fileURLToPath(new URL('../../infra/cfn-lint.yaml', import.meta.url));
let templates: string[];

beforeAll(() => {
  synthStack(FULL_CONFIG, { outdir }).app.synth();
  templates = readdirSync(outdir)
    .filter((name) => name.endsWith('.template.json'))
    .map((name) => join(outdir, name));
});

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

it('finds nothing in the synthesized template', () => {
  expect(templates).toHaveLength(1);

  const result = spawnSync('cfn-lint', ['--config-file', configFile, '--', ...templates], {
    encoding: 'utf8',
  });

  expect(result.error).toBeUndefined();
  expect(`${result.stdout}${result.stderr}`).toBe('');
  expect(result.status).toBe(0);
});
