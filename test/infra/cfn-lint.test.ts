// cfn-lint over the synthesized templates, with one feed, with several (the stack's own alarm topic), and a
// throwaway stack (removalPolicy destroy: the quarantine bucket's auto-delete custom resource); rules that are
// CDK idioms are suppressed in infra/cfn-lint.yaml.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FEEDS_CONFIG, FULL_CONFIG, REQUIRED_CONFIG, synthStack } from './synth.js';

const THROWAWAY_CONFIG = {
  ...REQUIRED_CONFIG,
  removalPolicy: 'destroy',
  alarmEmail: 'oncall@example.com',
  downstreamSubscribers: ['billing'],
};

const outdir = mkdtempSync(join(tmpdir(), 'order-feed-cfn-lint-'));
const configFile = fileURLToPath(new URL('../../infra/cfn-lint.yaml', import.meta.url));
let templates: string[];

beforeAll(() => {
  templates = Object.entries({
    single: FULL_CONFIG,
    feeds: FEEDS_CONFIG,
    throwaway: THROWAWAY_CONFIG,
  }).flatMap(([name, config]) => {
    const dir = join(outdir, name);
    synthStack(config, { outdir: dir }).app.synth();
    return readdirSync(dir)
      .filter((file) => file.endsWith('.template.json'))
      .map((file) => join(dir, file));
  });
});

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

it('finds nothing in the synthesized templates (one feed, three feeds, throwaway)', () => {
  expect(templates).toHaveLength(3);

  const result = spawnSync('cfn-lint', ['--config-file', configFile, '--', ...templates], {
    encoding: 'utf8',
  });

  expect(result.error).toBeUndefined();
  expect(`${result.stdout}${result.stderr}`).toBe('');
  expect(result.status).toBe(0);
});
