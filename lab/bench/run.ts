// `npm run bench`: measures the ingester against physical floors measured in the same run and prints
// one table (README: lab/bench/RESULTS.md). Flow:
//   1. generate the feed in the partner simulator and fetch its pages once
//   2. CPU: poller page work (section 1), in-process
//   3. cold start: bundles and module init in fresh node processes (section 4)
//   4. moto + intercepting proxy: the emulator's ceiling, then the real pipeline (sections 2 and 5), and
//      the same pipeline with history off (section 10: history on and off)
//   5. catch-up measured (7) and shards (8): continued poller runs against a slow partner
//   6. feeds sharing a limited partner (11), the fleet (14: 1,000 feeds measured, the AWS model, the idle cost)
//      and freshness (12, its idle cost the fleet's); `--only` runs just these
//   7. derived: cost per million versions (3), catch-up model (6); print, write JSON
// The body parse (13) is measured right after the poller's CPU, before the emulator starts, in a child process
// with the heap flags Lambda gives the poller.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DEFAULTS } from '../../functions/core/config/settings.js';
import { KEYS } from '../../infra/config.js';
import { CONSUMER_TIMEOUT } from '../../infra/constructs/consumer.js';
import { POLLER_TIMEOUT } from '../../infra/constructs/poller.js';
import { parseCommandLine } from '../../tools/cli-args.js';
import { startMoto } from '../../tools/local/moto.js';
import { startSimulator } from '../../tools/simulator/index.js';
import { awsModelSection } from './aws-model.js';
import {
  type ChainMeasurement,
  catchUpMeasuredSection,
  measureChains,
  shardsSection,
  VERSIONS_PER_ORDER,
} from './catch-up.js';
import { coldStartSection } from './cold-start.js';
import { fetchFeedPages, pollerCpuSection, prepareFeed, storedItems } from './cpu.js';
import {
  type FleetMeasurement,
  fleetIdleCost,
  fleetSection,
  measuredIdleRun,
  measureFleet,
  modelFleet,
} from './fleet.js';
import { IDLE_RUN } from './fleet-cost.js';
import { freshnessSection, measureFreshness } from './freshness.js';
import {
  catchUpSection,
  costSection,
  endToEndSection,
  historySection,
  localMsPerPage,
  type PageCost,
  requestsSection,
  type Schedule,
} from './model.js';
import { type BenchOptions, type ONLY, parseBenchArgs, USAGE } from './options.js';
import { POLLER_HEAP_FLAGS, parseSectionUnder } from './parse.js';
import { measureCeiling, measurePipeline, type PipelineSettings } from './pipeline.js';
import { PRICES } from './prices.js';
import {
  type BenchReport,
  belowTarget,
  renderHeader,
  renderTable,
  SECTION_IDS,
  type Section,
} from './report.js';
import { measureSharedToken, sharedTokenSection, simulateUncapped } from './shared-token.js';

const TOKEN = 'bench-token-5d1c7e93a2f04b68';

const benchStarted = performance.now();
const progress = (message: string): void => {
  const seconds = ((performance.now() - benchStarted) / 1000).toFixed(1).padStart(5);
  process.stderr.write(`[bench ${seconds} s] ${message}\n`);
};

/** Sections 11, 14 and 12, each on a fresh emulator state (they reset it). */
async function sharedTokenFleetAndFreshness(
  moto: Awaited<ReturnType<typeof startMoto>>,
  options: BenchOptions,
) {
  const sections: Section[] = [];
  const wanted = (name: (typeof ONLY)[number]) => !options.only || options.only.includes(name);
  if (wanted('shared-token')) {
    const { uncapped, ...shared } = { ...options.sharedToken, seed: options.seed };
    const runs = await measureSharedToken({ moto, ...shared }, progress);
    progress(
      `shared token: ${uncapped.feeds} feeds, no cap, ${uncapped.windowMs / 60_000} min on a fake clock`,
    );
    const { requestsPerSecond, latencyMs } = shared;
    const fakeClockRun = await simulateUncapped({ requestsPerSecond, latencyMs, ...uncapped });
    sections.push(sharedTokenSection(runs, shared, fakeClockRun));
  }
  let fleet: FleetMeasurement | undefined;
  if (wanted('fleet')) {
    const { model, ...measured } = options.fleet;
    progress(`fleet: the AWS model, ${model.idleFeeds} idle feeds, ${model.catchUpFeeds} catching up`);
    const modelled = modelFleet(model);
    try {
      if (measured.feeds > 0) fleet = await measureFleet({ moto, ...measured, seed: options.seed, progress });
    } catch (error) {
      // The model and the cost still print; the failure is in the report, not a lost bench.
      progress(`fleet: the measurement failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    sections.push(fleetSection(fleet, modelled, [...new Set([1_000, model.idleFeeds])]));
  }
  if (wanted('freshness')) {
    progress(`freshness: ${options.freshnessSamples} runs`);
    const samples = options.freshnessSamples;
    const run = fleet ? measuredIdleRun(fleet) : IDLE_RUN;
    const idleCost = (minutes: number) => fleetIdleCost(1_000, minutes, run).allIn;
    sections.push(
      freshnessSection(
        await measureFreshness({ moto, samples, latencyMs: options.apiLatencyMs, seed: options.seed }),
        idleCost,
      ),
    );
  }
  return sections;
}

function reportOf(options: BenchOptions, command: string, sections: Section[], started: number): BenchReport {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    command,
    machine: {
      cpu: cpus[0]?.model.trim() ?? 'unknown',
      cores: cpus.length,
      node: process.version,
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    },
    options: { ...options },
    // In the order of SECTION_IDS, whatever order they were measured in.
    sections: [...sections].sort((a, b) => SECTION_IDS.indexOf(a.id) - SECTION_IDS.indexOf(b.id)),
    durationSeconds: (performance.now() - started) / 1000,
  };
}

/** Section 13, in a child process with the poller's heap flags on Lambda (no emulator). */
function parse(options: BenchOptions): Promise<Section> {
  progress(`parse: ordinary and adversarial bodies (${POLLER_HEAP_FLAGS.join(' ')})`);
  return parseSectionUnder({
    rounds: options.cpuRounds,
    bytes: options.parseBytes,
    seed: options.seed,
    // --quick leaves out the bodies at the body cap (a few seconds each).
    ...(options.quick ? {} : { capBytes: DEFAULTS.maxPageBodyBytes }),
  });
}

async function runBench(options: BenchOptions, command: string): Promise<BenchReport> {
  const started = performance.now();
  if (options.only) {
    const only = options.only;
    const sections: Section[] = [];
    if (only.includes('shared-token') || only.includes('freshness') || only.includes('fleet')) {
      const moto = await startMoto();
      try {
        sections.push(...(await sharedTokenFleetAndFreshness(moto, options)));
      } finally {
        await moto.stop();
      }
    }
    if (only.includes('parse')) sections.push(await parse(options));
    return reportOf(options, command, sections, started);
  }
  const settings: PipelineSettings = {
    pageSize: KEYS.pageSize,
    // Unset by default (no cap): a run then ends for lack of time.
    maxPagesPerRun: KEYS.maxPagesPerRun ?? Number.POSITIVE_INFINITY,
    pollerTimeoutMs: POLLER_TIMEOUT.toMilliseconds(),
    consumerTimeoutMs: CONSUMER_TIMEOUT.toMilliseconds(),
    consumerBatchSize: KEYS.consumerBatchSize,
  };
  const schedule: Schedule = {
    ...settings,
    safetyMarginMs: DEFAULTS.safetyMarginSeconds * 1000,
    scheduleMinutes: options.scheduleMinutes,
    apiLatencyMs: options.apiLatencyMs,
    backlog: options.backlog,
    // A feed behind gets its next turn at once (the dispatcher, issue 32; self-continuation before it).
    continuation: true,
  };

  const sim = await startSimulator({
    token: TOKEN,
    feed: {
      seed: options.seed,
      orders: Math.max(1, Math.round(options.versions / VERSIONS_PER_ORDER)),
      vendors: 25,
    },
  });
  let moto: Awaited<ReturnType<typeof startMoto>> | undefined;
  try {
    progress(`feed: ${sim.expected().distinctVersions} versions; fetching pages`);
    const pages = await fetchFeedPages(sim.url, TOKEN, settings.pageSize);
    const feed = prepareFeed(pages);

    progress('poller CPU');
    const pollerCpu = await pollerCpuSection(pages, feed, {
      rounds: options.cpuRounds,
      pageSize: settings.pageSize,
      apiLatencyMs: options.apiLatencyMs,
    });
    const parsing = await parse(options);
    const items = await storedItems(feed);
    progress('cold start (bundling, fresh node processes)');
    const coldStart = await coldStartSection(
      path.resolve('.local/bench/bundles'),
      options.coldStartRuns,
      !options.quick,
    );

    progress('emulator ceiling');
    moto = await startMoto();
    progress('moto started; warm-up');
    // A one-page warm-up of the emulator, then the ceiling for the whole feed.
    await measureCeiling(moto, [feed.pages[0]?.slice(0, 20) ?? []], items, settings);
    progress('ceiling');
    const ceiling = await measureCeiling(moto, feed.pages, items, settings);
    progress('pipeline through the intercepting proxy');
    const pipelineInputs = { moto, sim, token: TOKEN, feed, settings, sqsChunkBytes: PRICES.sqsChunkBytes };
    const pipeline = await measurePipeline(pipelineInputs);

    progress('pipeline with history off (the same feed)');
    const withoutHistory = await measurePipeline({ ...pipelineInputs, history: false });

    progress(
      `catch-up measured: ${options.chain.versions} versions, API ${options.apiLatencyMs} ms, continued runs`,
    );
    const catchUpMeasured = await measureChains({
      moto,
      versions: options.chain.versions,
      latencyMs: options.apiLatencyMs,
      runBudgetMs: options.chain.runBudgetMs,
      feeds: 1,
      vendors: 4,
      pageSize: settings.pageSize,
      seed: options.seed,
    });
    const shardRuns: ChainMeasurement[] = [];
    for (const feeds of [1, 2, 4]) {
      progress(`shards: ${feeds} feed(s), API ${options.chain.shardLatencyMs} ms`);
      shardRuns.push(
        await measureChains({
          moto,
          versions: options.chain.shardVersions,
          latencyMs: options.chain.shardLatencyMs,
          runBudgetMs: options.chain.shardRunBudgetMs,
          feeds,
          // Eight vendors dealt round-robin: each of 4 feeds gets two, so shards come out about equal.
          vendors: 8,
          pageSize: options.chain.shardPageSize,
          seed: options.seed,
        }),
      );
    }

    const lastSections = await sharedTokenFleetAndFreshness(moto, options);

    const perPage = pollerCpu.details.perPageCpuMs as { measured: number; floor: number };
    const page: PageCost = {
      cpuMs: perPage.measured,
      floorCpuMs: perPage.floor,
      localMs: localMsPerPage(pipeline, schedule.maxPagesPerRun),
      floorAwsMs: ceiling.publishMs / feed.pages.length,
    };
    progress('done');
    const sections: Section[] = [
      pollerCpu,
      requestsSection(pipeline, schedule),
      costSection(pipeline, ceiling, page, schedule),
      coldStart,
      endToEndSection(pipeline, ceiling),
      catchUpSection(page, schedule),
      catchUpMeasuredSection(catchUpMeasured),
      shardsSection(shardRuns),
      awsModelSection(),
      historySection(pipeline, withoutHistory),
      ...lastSections,
      parsing,
    ];
    return reportOf(options, command, sections, started);
  } finally {
    await moto?.stop();
    await sim.close();
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const parsed = parseCommandLine(() => parseBenchArgs(argv), USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const { options } = parsed;
  const command = ['npm run bench --', ...argv].join(' ').replace(/ --$/, '');
  const report = await runBench(options, command);
  const out = path.resolve(options.out);
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${renderHeader(report)}\n\n${renderTable(report)}\n\n`);
  const below = belowTarget(report);
  for (const { section, figure } of below) {
    process.stdout.write(
      `above target: ${section} / ${figure.label.trim()}: ${figure.ratio?.toFixed(2)}x > ${figure.target}x\n`,
    );
  }
  process.stdout.write(
    `JSON: ${path.relative(process.cwd(), out)} (${report.durationSeconds.toFixed(0)} s)\n`,
  );
  return 0;
}

// Exit explicitly: the handlers' module-scope clients keep sockets alive, as they do on Lambda.
main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
