// The emulator launcher lives with local mode (tools/local/moto.ts), which starts it too.
export { EMULATOR_ENV, freePort, type RunningMoto, startMoto } from '../../tools/local/moto.js';
