import { defineConfig } from 'vitest/config';
import { longestFirst } from './test/support/longest-first.js';

/**
 * The tier's files, longest first (measured: `npx vitest run --config vitest.e2e.config.ts
 * --reporter=verbose`), started first (test/support/longest-first.ts). Seconds in the last CI run, scaled by
 * the single-file measurements of 2026-11-28 (after the CLIs parsed flags first and the --verbose and
 * give-up runs were folded): local-mode ~105, outage ~92, packages ~82, chaos ~78, feeds ~68, bench ~58,
 * verify ~50, migration ~50, ops ~38, help ~13, fuzz ~12.
 */
const LONGEST_FIRST = [
  'test/e2e/local-mode.test.ts',
  'test/e2e/local-mode-outage.test.ts',
  'test/e2e/packages.test.ts',
  'lab/test/e2e/chaos.test.ts',
  'test/e2e/feeds.test.ts',
  'lab/test/e2e/bench-cli.test.ts',
  'test/e2e/verify.test.ts',
  'test/e2e/migration.test.ts',
  'test/e2e/ops.test.ts',
  'test/e2e/help.test.ts',
  'lab/test/e2e/fuzz.test.ts',
];

// `npm run test:e2e`: the slow tier, as a user runs things. Local mode and `npm run verify` as child processes
// (exit codes, signals, SIGKILL and restart), `cdk deploy` into a fresh moto, the ops commands against that stack,
// (test/e2e), and smoke runs of `npm run chaos -- --quick` and `npm run bench -- --quick` (lab/test/e2e).
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts', 'lab/test/e2e/*.test.ts'],
    globalSetup: ['test/support/required-tools.ts'],
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: longestFirst(LONGEST_FIRST) },
    testTimeout: 300_000,
    hookTimeout: 300_000,
    restoreMocks: true,
  },
});
