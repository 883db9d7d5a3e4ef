// Vitest globalSetup of `npm test`: one moto_server per worker slot, started once for the whole run. A worker
// runs one file at a time, so the files of a slot take turns on its emulator (workerMoto resets it before a
// file uses it), and no file pays for starting a Python process of its own (about a second of CPU each).
import type { TestProject } from 'vitest/node';
import { startMoto } from '../../tools/local/moto.js';

interface WorkerEmulator {
  endpoint: string;
  port: number;
  pid: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The emulator of worker slot n (VITEST_POOL_ID) at index n - 1. */
    workerEmulators: WorkerEmulator[];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const workers = Math.max(1, Number(project.globalConfig.maxWorkers) || 1);
  const started = await Promise.allSettled(Array.from({ length: workers }, () => startMoto()));
  const running = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stopAll = async () => void (await Promise.all(running.map((moto) => moto.stop())));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  project.provide(
    'workerEmulators',
    running.map(({ endpoint, port, pid }) => ({ endpoint, port, pid })),
  );
  return stopAll;
}
