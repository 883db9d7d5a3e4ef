import { defineConfig } from 'vitest/config';

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
// each file and test. The global setup checks the tools and synthesizes the harness's template once, before any
// worker needs it.
export default defineConfig({
  test: {
    globalSetup: ['test/support/required-tools.ts', 'test/support/harness-template.ts'],
    pool: 'forks',
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
          globalSetup: ['test/support/emulators.ts'],
          isolate: false,
        },
      },
    ],
  },
});
