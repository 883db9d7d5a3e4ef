// Fixed fuzz seeds in `npm test` (the in-process pipeline on moto, the worker's): a few seeds of the
// fast profile, each partner a composition of the simulator's faults, chosen among the quick seeds that pass
// and together switch on many kinds (lab/fuzz/RESULTS.md); and every seed that ever failed
// (lab/fuzz/regressions.json), replayed one named case each. The soak runs hundreds (`npm run fuzz`).
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerMoto } from '../../test/support/moto.js';
import { REPO_ROOT } from '../chaos/local-mode.js';
import { Fuzzer } from '../fuzz/fuzz.js';
import { readRegressions } from '../fuzz/regressions.js';

const NPM_TEST_SEEDS = [14, 17] as const;
// The cases that take minutes (replayOnly) run in `npm run fuzz -- --replay lab/fuzz/regressions.json`.
const REGRESSIONS = readRegressions(path.join(REPO_ROOT, 'lab', 'fuzz', 'regressions.json')).filter(
  (entry) => !entry.replayOnly,
);

let fuzzer: Fuzzer;
// The worker's moto (test/support/emulators.ts), which each seed resets: no emulator of the file's own to start.
beforeAll(async () => {
  fuzzer = new Fuzzer(undefined, await workerMoto());
});
afterAll(() => fuzzer?.close());

describe('fuzz seeds in npm test (fast profile, in-process)', () => {
  it.each(NPM_TEST_SEEDS)(
    'seed %i ends with every invariant holding',
    async (seed) => {
      const report = await fuzzer.runSeed(seed, 'fast', 'in-process');

      expect(report.violations).toEqual([]);
      expect(Object.keys(report.faultsFired).length).toBeGreaterThan(0);
    },
    90_000,
  );
});

describe('every seed that ever failed (lab/fuzz/regressions.json)', () => {
  it.each(
    REGRESSIONS.map((entry) => ({
      name: `seed ${entry.seed} (${entry.profile}), which found: ${entry.found}`,
      entry,
    })),
  )(
    '$name',
    async ({ entry }) => {
      const report = await fuzzer.runSeed(entry.seed ?? 0, entry.profile, entry.mode);

      expect(report.violations, entry.found).toEqual([]);
    },
    90_000,
  );
});
