import { defineConfig } from 'vitest/config';

// `npm test`: unit, integration and infrastructure tests (test/unit, test/integration, test/infra). Integration
// tests talk to a real moto_server and the partner simulator over loopback HTTP, each file starting its own on
// free ports, so files may run in parallel; two workers match the 2-core machine. The slow tier (local mode as a
// child process, `npm run verify`, `cdk deploy` into moto) is test/e2e, with the chaos and bench smoke runs in
// lab/test/e2e; both run by `npm run test:e2e` (vitest.e2e.config.ts).
export default defineConfig({
  test: {
    include: ['test/{unit,integration,infra}/**/*.test.ts', 'lab/test/*.test.ts'],
    globalSetup: ['test/support/required-tools.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    restoreMocks: true,
  },
});
