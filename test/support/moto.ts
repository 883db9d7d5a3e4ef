// The emulator launcher lives with local mode (tools/local/moto.ts), which starts it too.
import { inject } from 'vitest';
import { type RunningMoto, resetEmulator, startMoto } from '../../tools/local/moto.js';

export { EMULATOR_ENV, freePort, type RunningMoto, startMoto } from '../../tools/local/moto.js';

/**
 * This worker's emulator (test/support/emulators.ts), reset: as empty as a fresh one. `stop()` leaves it
 * running for the next file of the worker; the global teardown stops it. A worker slot without one (more
 * workers than the setup started) gets an emulator of its own, stopped by `stop()`.
 */
export async function workerMoto(): Promise<RunningMoto> {
  const emulator = inject('workerEmulators')?.[Number(process.env.VITEST_POOL_ID) - 1];
  if (emulator === undefined) return startMoto();
  const base = `http://127.0.0.1:${emulator.port}`;
  await resetEmulator(base);
  return {
    ...emulator,
    reset: () => resetEmulator(base),
    stop: async () => undefined,
    keep: () => true,
  };
}
