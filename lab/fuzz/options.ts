// The fuzzer's command line (node:util parseArgs, strict): a bad flag prints the usage and exits 2.
import { flagInteger, flagText, parseFlags, UsageError } from '../../tools/cli-args.js';
import { ALL_SCENARIO_IDS, type AnyScenarioId } from '../../tools/simulator/types.js';
import { type Mode, PROFILES, type Profile } from './draw.js';

export interface FuzzOptions {
  /** The seeds to run, in order. */
  seeds: number[];
  profile: Profile;
  /** Forces every seed's driver; undefined: each seed draws its own. */
  mode?: Mode;
  /** Run the cases of a regression file instead (each with its own profile and mode). */
  replay?: string;
  /** Run these named scenarios of the simulator through local mode instead. */
  scenarios?: AnyScenarioId[];
  out: string;
  /** Where each seed's captured output goes (a failing seed's is worth reading). */
  logDir: string;
}

export const USAGE = `Usage: npm run fuzz -- [options]

  --seeds N        run N seeds, from --seed on (default 1)
  --seed S         the first seed (default 1); alone, it replays that seed
  --profile P      full (default: the soak's partners, outages of minutes, bombs of 256 MiB, floods past
                   10,000 records) or fast (the test tiers' partners: small feeds, faults that take no time)
  --local          drive every seed through local mode as a child process (default: the seed decides;
                   outages of half a minute and more go through local mode)
  --in-process     drive every seed through the in-process pipeline on moto
  --replay FILE    run every case of a regression file instead (lab/fuzz/regressions.json)
  --scenario IDS   run named scenarios of the simulator (comma-separated; e.g. gzip,outage) through local mode
                   as a user does (npm start -- --scenario ID), checked against their expectations
  --out PATH       JSON report (default .local/fuzz/latest.json)
  --log-dir DIR    each seed's captured output (default .local/fuzz/logs)
  -h, --help       this text

A seed draws a partner (generated orders and a composition of the simulator's faults) and runs the whole
pipeline against it; every invariant is checked after it (lab/fuzz/README in lab/README.md). Each failing
seed is printed with the command that replays it.

Exit status: 0 when every seed passed, 1 when one failed, 2 for a bad flag.
`;

const FLAGS = {
  seeds: { type: 'string' },
  seed: { type: 'string' },
  profile: { type: 'string' },
  local: { type: 'boolean' },
  'in-process': { type: 'boolean' },
  replay: { type: 'string' },
  scenario: { type: 'string' },
  out: { type: 'string' },
  'log-dir': { type: 'string' },
} as const;

const MAX_SEED = 2 ** 31 - 1;

/** Parses argv (without node and script); throws UsageError for anything it does not accept. */
export function parseFuzzArgs(argv: readonly string[]): FuzzOptions | 'help' {
  const values = parseFlags(argv, FLAGS);
  if (values.help) return 'help';
  const profile = flagText('--profile', values.profile) ?? 'full';
  if (!(PROFILES as readonly string[]).includes(profile))
    throw new UsageError(`--profile must be one of ${PROFILES.join(', ')} (got "${profile}")`);
  if (values.local && values['in-process'])
    throw new UsageError('--local and --in-process exclude each other');
  const replay = flagText('--replay', values.replay);
  if (replay !== undefined && (values.seeds !== undefined || values.seed !== undefined))
    throw new UsageError('--replay runs the seeds of its file: not with --seeds or --seed');
  const scenarios = flagText('--scenario', values.scenario)
    ?.split(',')
    .map((id) => id.trim());
  for (const id of scenarios ?? []) {
    if (!(ALL_SCENARIO_IDS as readonly string[]).includes(id))
      throw new UsageError(
        `--scenario: no scenario "${id}" (the simulator serves ${ALL_SCENARIO_IDS.join(', ')})`,
      );
  }
  if (scenarios && (replay !== undefined || values.seeds !== undefined || values.seed !== undefined))
    throw new UsageError('--scenario runs named scenarios: not with --seeds, --seed or --replay');
  const count = values.seeds === undefined ? 1 : flagInteger('--seeds', values.seeds, 1, 100_000);
  const first = values.seed === undefined ? 1 : flagInteger('--seed', values.seed, 0, MAX_SEED);
  if (first + count - 1 > MAX_SEED) throw new UsageError(`--seed + --seeds must stay under ${MAX_SEED}`);
  const mode: Mode | undefined = values.local ? 'local' : values['in-process'] ? 'in-process' : undefined;
  return {
    seeds: Array.from({ length: count }, (_, i) => first + i),
    profile: profile as Profile,
    ...(mode ? { mode } : {}),
    ...(replay ? { replay } : {}),
    ...(scenarios ? { scenarios: scenarios as AnyScenarioId[] } : {}),
    out: flagText('--out', values.out) ?? '.local/fuzz/latest.json',
    logDir: flagText('--log-dir', values['log-dir']) ?? '.local/fuzz/logs',
  };
}
