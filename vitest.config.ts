import { defineConfig } from 'vitest/config';

// `npm test`: unit, integration and infrastructure tests (test/unit, test/integration, test/infra). Integration
// tests talk to a real moto_server and the partner simulator over loopback HTTP, each file starting its own on
// free ports, so files may run in parallel; two workers match the 2-core machine. The slow tier (local mode as a
// child process, `npm run verify`, `cdk deploy` into moto) is test/e2e, with the chaos and bench smoke runs in
// lab/test/e2e; both run by `npm run test:e2e` (vitest.e2e.config.ts).
//
// Two projects share the two workers. `unit` runs without isolation: each worker imports the modules once for all
// the unit files it runs (importing the AWS SDK, undici and zod again per file cost more than most files' tests),
// so a unit test leaves no state behind (environment variables through vi.stubEnv, restored after each test).
// `integration` (its emulators, the stack's synth, the cold-start imports) keeps a fresh module graph per file.
// The global setup checks the tools and synthesizes the harness's template once, before any worker needs it.
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
        },
      },
    ],
  },
});
