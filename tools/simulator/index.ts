// Partner API simulator: public entry point (see ./README.md).

export type { ScenarioExpectation } from './scenarios/expectations.js';
export { SCENARIO_EXPECTATIONS } from './scenarios/expectations.js';
export { startSimulator } from './server.js';
export * from './types.js';
