import { defineConfig } from 'vitest/config';

// Integration tests start their own moto_server and simulator on free loopback ports,
// so test files may run in parallel; two workers match the 2-core machine.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    restoreMocks: true,
  },
});
