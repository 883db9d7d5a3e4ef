import { defineConfig } from 'vitest/config';
import { longestFirst } from './test/support/longest-first.js';

/** The tier's longest files, longest first (as measured in CI: `npx vitest run`'s per-file times). */
const LONGEST_FIRST = [
  'test/integration/pipeline-scenarios.test.ts',
  'test/integration/pipeline-generated-feed.test.ts',
  'test/infra/stack.test.ts',
  'lab/test/fuzz-seeds.test.ts',
  'test/integration/cursor-store.test.ts',
  'test/integration/fleet.test.ts',
  'test/integration/ops-feeds.test.ts',
  'test/infra/lambda-bundle.test.ts',
  'test/unit/simulator/fault-catalogue.test.ts',
];

// `npm test`: unit, integration and infrastructure tests (test/unit, test/integration, test/infra). Integration
// tests talk to a real moto_server and the partner simulator over loopback HTTP; two workers match the 2-core
// machine. The slow tier (local mode as a child process, `npm run verify`, `cdk deploy` into moto) is test/e2e,
// with the chaos and bench smoke runs in lab/test/e2e; both run by `npm run test:e2e` (vitest.e2e.config.ts).
//
// Both projects run without isolation: each worker imports the modules once for all the files it runs
// (importing the AWS SDK, undici, zod and aws-cdk-lib again per file cost more than most files' tests), so a
// test leaves no state behind (environment variables through vi.stubEnv, restored after each test; a file that
// needs a fresh module graph, as a cold start does, asks for one with vi.resetModules). The integration files of
// a worker take turns on one moto_server, started once for the run (test/support/emulators.ts) and reset before
// each file and test. The integration project's global setup checks the tools and synthesizes the harness's
// template once, before any worker needs it.
export default defineConfig({
  test: {
    pool: 'forks',
    sequence: { sequencer: longestFirst(LONGEST_FIRST) },
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    restoreMocks: true,
    unstubEnvs: true,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'lab/test/*.test.ts'],
          exclude: ['lab/test/fuzz-seeds.test.ts'],
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/{integration,infra}/**/*.test.ts', 'lab/test/fuzz-seeds.test.ts'],
          // Here, not at the top: a top-level global setup runs again for each project that extends it.
          globalSetup: [
            'test/support/required-tools.ts',
            'test/support/harness-template.ts',
            'test/support/emulators.ts',
          ],
          isolate: false,
        },
      },
    ],
  },
});
