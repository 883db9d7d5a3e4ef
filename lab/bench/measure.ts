// Timing helpers. CPU comparisons alternate the measured code and its floor round by round (so drift
// in clock speed or background load hits both alike), after warm-up rounds that let V8 optimise both,
// and report the fastest round of each: on a shared 2-core VM, interference only ever adds time, and
// the minimum of many full passes is far steadier than the median (the median is kept in the details).
// Wall time (performance.now) of synchronous, single-threaded work is its CPU time on the main thread;
// garbage collection inside a round is counted, as it is on Lambda.

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of nothing');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] ?? 0;
  const lower = sorted[middle - 1] ?? upper;
  return sorted.length % 2 === 1 ? upper : (lower + upper) / 2;
}

export interface CpuComparison {
  /** Fastest round, milliseconds. */
  measuredMs: number;
  floorMs: number;
  /** Median round, milliseconds. */
  measuredMedianMs: number;
  floorMedianMs: number;
  rounds: number;
}

/**
 * Runs `warmup` untimed rounds of each, then `rounds` timed rounds alternating which goes first.
 * Each function does one full pass over the data set and may be async (awaited inside the round).
 */
export async function compareCpu(
  measured: () => unknown,
  floor: () => unknown,
  // `clock` (ms): wall time by default; process CPU time (`cpuClock`) where other load would blur the wall.
  options: { rounds: number; warmup: number; warmupMs: number; clock?: () => number },
): Promise<CpuComparison> {
  const clock = options.clock ?? (() => performance.now());
  const warmupStarted = performance.now();
  for (let i = 0; i < options.warmup || performance.now() - warmupStarted < options.warmupMs; i++) {
    await measured();
    await floor();
  }
  const measuredTimes: number[] = [];
  const floorTimes: number[] = [];
  for (let i = 0; i < options.rounds; i++) {
    const pair: Array<[() => unknown, number[]]> = [
      [measured, measuredTimes],
      [floor, floorTimes],
    ];
    if (i % 2 === 1) pair.reverse();
    for (const [run, times] of pair) {
      const started = clock();
      await run();
      times.push(clock() - started);
    }
  }
  return {
    measuredMs: Math.min(...measuredTimes),
    floorMs: Math.min(...floorTimes),
    measuredMedianMs: median(measuredTimes),
    floorMedianMs: median(floorTimes),
    rounds: options.rounds,
  };
}

/** Keeps a value observable so the optimiser cannot drop the work that produced it. */
export function sink(value: unknown): void {
  if (value === SINK_NEVER) throw new Error('unreachable');
  lastSunk = value;
}
const SINK_NEVER = Symbol('never');
/** The last value sunk (exported, so no optimiser may treat the store as dead). */
export let lastSunk: unknown;

/** This process's CPU time in ms (user + system, every thread: the garbage collector's helpers included). */
export function cpuClock(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
