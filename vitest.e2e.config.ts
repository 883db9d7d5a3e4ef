import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The tier's longest files, longest first (measured: `npx vitest run --config vitest.e2e.config.ts
 * --reporter=verbose`): started first, so that the two workers end together instead of one of them starting a
 * long file near the end. Vitest orders by the durations it cached from the last run when it has them, and
 * by file size otherwise (a fresh checkout, CI), where small but long files (chaos, the outage) would come last.
 */
const LONGEST_FIRST = [
  'test/e2e/local-mode.test.ts',
  'test/e2e/local-mode-outage.test.ts',
  'test/e2e/packages.test.ts',
  'lab/test/e2e/chaos.test.ts',
  'lab/test/e2e/bench-cli.test.ts',
  'test/e2e/verify.test.ts',
  'test/e2e/feeds.test.ts',
  'test/e2e/ops.test.ts',
  'test/e2e/migration.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = LONGEST_FIRST.indexOf(relative(file.project.config.root, file.moduleId));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

// `npm run test:e2e`: the slow tier, as a user runs things. Local mode and `npm run verify` as child processes
// (exit codes, signals, SIGKILL and restart), `cdk deploy` into a fresh moto, the ops commands against that stack,
// (test/e2e), and smoke runs of `npm run chaos -- --quick` and `npm run bench -- --quick` (lab/test/e2e).
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts', 'lab/test/e2e/*.test.ts'],
    globalSetup: ['test/support/required-tools.ts'],
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    testTimeout: 300_000,
    hookTimeout: 300_000,
    restoreMocks: true,
  },
});
