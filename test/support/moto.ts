// The emulator launcher lives with local mode (infra/local/moto.ts), which starts it too.
export { EMULATOR_ENV, freePort, type RunningMoto, startMoto } from '../../infra/local/moto.js';
