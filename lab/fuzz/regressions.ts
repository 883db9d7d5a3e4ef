// Every seed that ever failed, kept as a regression case: lab/fuzz/regressions.json is replayed by
// lab/test/fuzz-seeds.test.ts in `npm test` (one named case each, but those marked replayOnly), and all of
// them by `npm run fuzz -- --replay lab/fuzz/regressions.json` (lab/README.md, "The fuzzer").
import { readFileSync } from 'node:fs';
import type { Mode, Profile } from './draw.js';
import { PROFILES } from './draw.js';

export interface RegressionCase {
  /** A drawn seed; or `scenario`, a named scenario of the simulator run through local mode. */
  seed?: number;
  scenario?: string;
  profile: Profile;
  /** The driver it failed with, when it matters (local mode's outages). */
  mode?: Mode;
  /** What it found, in a line. */
  found: string;
  /** Minutes long by nature: replayed by `npm run fuzz -- --replay`, not in `npm test`. */
  replayOnly?: boolean;
}

export function readRegressions(file: string): RegressionCase[] {
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const cases = (parsed as { cases?: unknown }).cases;
  if (!Array.isArray(cases)) throw new Error(`${file}: expected { "cases": [...] }`);
  return cases.map((entry, index) => {
    const { seed, profile, mode, found, replayOnly } = entry as Record<string, unknown>;
    if (
      !Number.isSafeInteger(seed) ||
      !(PROFILES as readonly unknown[]).includes(profile) ||
      (mode !== undefined && mode !== 'local' && mode !== 'in-process') ||
      typeof found !== 'string' ||
      (replayOnly !== undefined && typeof replayOnly !== 'boolean')
    ) {
      throw new Error(
        `${file}: case ${index} needs seed, profile (fast|full), found, and mode local|in-process if any`,
      );
    }
    return {
      seed: seed as number,
      profile: profile as Profile,
      ...(mode ? { mode: mode as Mode } : {}),
      found,
      ...(replayOnly ? { replayOnly: true } : {}),
    };
  });
}
