// The fuzzer: a seed → a partner (draw.ts) → the whole pipeline against it (in-process.ts, or local mode as a
// child process, local-mode.ts) → the invariants (invariants.ts) → a report with the command that replays it.
// One Fuzzer holds the emulators its seeds share (a moto for the in-process seeds, another with the deployed
// stack for the local-mode ones) and stops them in close().
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type AwsAt, createAwsClients } from '../../tools/aws.js';
import { EMULATOR_ENV, type RunningMoto, startMoto } from '../../tools/local/moto.js';
import { SCENARIOS } from '../../tools/simulator/scenarios/index.js';
import type { AnyScenarioId, Fault } from '../../tools/simulator/types.js';
import { describePartner, drawPartner, type Mode, type Partner, type Profile } from './draw.js';
import { runInProcess } from './in-process.js';
import { type SeedObservation, violations } from './invariants.js';
import { LocalModeRunner } from './local-mode.js';
import { runbookStops } from './runbook.js';

export interface SeedReport {
  /** The seed; a named scenario's run has `scenario` instead (seed 0). */
  seed: number;
  scenario?: string;
  profile: Profile;
  mode: Mode;
  partner: string;
  kinds: Fault[];
  end: SeedObservation['end'];
  runs: number;
  outcomes: Record<string, number>;
  faultsFired: Record<string, number>;
  requests: number;
  peakRssGrowthMb?: number | undefined;
  localPeakRssMb?: number | undefined;
  maxStallMs?: number | undefined;
  durationMs: number;
  violations: string[];
  /** The command that runs this seed again. */
  replay: string;
}

/** A named scenario's time (outage waits out its 3 minutes; a trickle its 30 s). */
const SCENARIO_BUDGET_MS = 12 * 60_000;

export function replayCommand(seed: number, profile: Profile, mode?: Mode): string {
  const flags = [`--seed ${seed}`, ...(profile === 'full' ? [] : [`--profile ${profile}`])];
  if (mode === 'local') flags.push('--local');
  if (mode === 'in-process') flags.push('--in-process');
  return `npm run fuzz -- ${flags.join(' ')}`;
}

export class Fuzzer {
  private moto: RunningMoto | undefined;
  private aws: AwsAt | undefined;
  private local: LocalModeRunner | undefined;

  /** `emulator`: the moto the in-process seeds share (reset before each), else one started at the first. */
  constructor(
    private readonly logDir: string | undefined,
    emulator?: RunningMoto,
  ) {
    if (logDir) mkdirSync(logDir, { recursive: true });
    this.moto = emulator;
  }

  /** Runs one seed; `mode` overrides the one the seed draws. Never throws for what the seed found. */
  async runSeed(seed: number, profile: Profile, mode?: Mode): Promise<SeedReport> {
    const partner = drawPartner(seed, profile, mode);
    const started = Date.now();
    const logFile = this.logDir && path.join(this.logDir, `seed-${seed}-${profile}.log`);
    let observation: SeedObservation | undefined;
    let faultsFired: Record<string, number> = {};
    let outcomes: Record<string, number> = {};
    let crash: string | undefined;
    try {
      const result =
        partner.mode === 'local'
          ? await this.localRunner().run(partner, logFile)
          : await runInProcess(partner, await this.emulator(), logFile);
      observation = result.observation;
      faultsFired = result.faultCounts;
      outcomes = result.outcomes;
    } catch (error) {
      crash = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    }
    const found = observation
      ? violations(observation, runbookStops())
      : [`the fuzzer itself failed: ${crash}`];
    return {
      seed,
      profile,
      mode: partner.mode,
      partner: describePartner(partner),
      kinds: partner.kinds,
      end: observation?.end ?? { kind: 'crashed', detail: crash ?? '' },
      runs: observation?.runs.length ?? 0,
      outcomes,
      faultsFired,
      requests: observation?.requests.length ?? 0,
      peakRssGrowthMb: observation?.peakRssGrowthMb,
      localPeakRssMb: observation?.localPeakRssMb,
      maxStallMs: observation?.maxStallMs,
      durationMs: Date.now() - started,
      violations: found,
      replay: replayCommand(seed, profile, mode),
    };
  }

  /** A named scenario of the simulator through local mode (`npm start -- --scenario ID`), as a user runs it. */
  async runScenario(id: AnyScenarioId): Promise<SeedReport> {
    const started = Date.now();
    const logFile = this.logDir && path.join(this.logDir, `scenario-${id}.log`);
    let result: Awaited<ReturnType<LocalModeRunner['runScenario']>> | undefined;
    let crash: string | undefined;
    try {
      result = await this.localRunner().runScenario(id, logFile, SCENARIO_BUDGET_MS);
    } catch (error) {
      crash = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    }
    return {
      seed: 0,
      scenario: id,
      profile: 'full',
      mode: 'local',
      partner: `scenario ${id}: ${SCENARIOS[id].summary}`,
      kinds: [],
      end: result?.end ?? { kind: 'crashed', detail: crash ?? '' },
      runs: result?.counters.polls ?? 0,
      outcomes: {},
      faultsFired: {},
      requests: 0,
      durationMs: Date.now() - started,
      violations: result?.violations ?? [`the fuzzer itself failed: ${crash}`],
      replay: `npm run fuzz -- --scenario ${id}`,
    };
  }

  /** The partner a seed draws (for a report that lists it without running it). */
  static partnerOf(seed: number, profile: Profile, mode?: Mode): Partner {
    return drawPartner(seed, profile, mode);
  }

  async close(): Promise<void> {
    this.aws?.dynamo.destroy();
    await this.local?.close();
    await this.moto?.stop();
  }

  private async emulator(): Promise<{ moto: RunningMoto; aws: AwsAt }> {
    this.moto ??= await startMoto();
    if (!this.aws) {
      // The handlers' SDK clients read these (as the harness's useEmulator sets them).
      Object.assign(process.env, EMULATOR_ENV, { AWS_ENDPOINT_URL: this.moto.endpoint });
      this.aws = createAwsClients(this.moto.endpoint, EMULATOR_ENV);
    }
    return { moto: this.moto, aws: this.aws };
  }

  private localRunner(): LocalModeRunner {
    this.local ??= new LocalModeRunner();
    return this.local;
  }
}
