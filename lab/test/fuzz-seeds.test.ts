// A fixed set of fuzz seeds in `npm test` (fast profile, the in-process pipeline on moto): each partner a
// composition of the simulator's faults, each seed ending with every invariant of lab/fuzz/invariants.ts
// holding. Chosen among the seeds that pass today and together switch on many kinds (lab/fuzz/RESULTS.md);
// more run in `npm run test:e2e` (lab/test/e2e/fuzz.test.ts) and the soak runs hundreds.
import { afterAll, describe, expect, it } from 'vitest';
import { Fuzzer } from '../fuzz/fuzz.js';

const NPM_TEST_SEEDS = [14, 17, 18] as const;

const fuzzer = new Fuzzer(undefined);
afterAll(() => fuzzer.close());

describe('fuzz seeds in npm test (fast profile)', () => {
  it.each(NPM_TEST_SEEDS)(
    'seed %i ends with every invariant holding',
    async (seed) => {
      const report = await fuzzer.runSeed(seed, 'fast', 'in-process');

      expect(report.violations).toEqual([]);
      expect(report.end).toEqual({ kind: 'drained' });
      expect(Object.keys(report.faultsFired).length).toBeGreaterThan(0);
    },
    90_000,
  );
});
