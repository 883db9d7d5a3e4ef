import { defineConfig } from 'vitest/config';

// `npm run test:e2e`: the slow tier, as a user runs things. Local mode and `npm run verify` as child processes
// (exit codes, signals, SIGKILL and restart), `cdk deploy` into a fresh moto, the ops commands against that stack,
// (test/e2e), and smoke runs of `npm run chaos -- --quick` and `npm run bench -- --quick` (lab/test/e2e).
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts', 'lab/test/e2e/*.test.ts'],
    globalSetup: ['test/support/required-tools.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    restoreMocks: true,
  },
});
