// One way to build the app from a configuration (test/support/stack-configs.ts). A synth costs about a
// second, so `templateOf` synthesizes each configuration once per test file and shares the result.
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/app.js';

export * from './stack-configs.js';

export interface SynthOptions {
  /** Run esbuild for the functions (slow); by default assets are stubbed, which leaves templates unchanged. */
  readonly bundle?: boolean;
  readonly outdir?: string;
  /** More CDK context beside `orderFeed` (e.g. `stackName`). */
  readonly context?: Record<string, unknown>;
}

/** Builds and synthesizes a fresh app (the cdk-nag plugin runs and throws on an unacknowledged finding). */
export function synthStack(config: Record<string, unknown>, options: SynthOptions = {}) {
  const context: Record<string, unknown> = { ...options.context, orderFeed: config };
  // An empty bundling-stacks list makes CDK skip asset bundling (as `cdk synth --exclusively` does).
  if (!options.bundle) context['aws:cdk:bundling-stacks'] = [];
  const { app, stack } = buildApp({ context, outdir: options.outdir });
  return { app, stack, template: Template.fromStack(stack) };
}

const synthesized = new Map<string, ReturnType<typeof synthStack>>();

/** `synthStack(config)`, once per configuration in this file: for tests that only read the result. */
export function templateOf(config: Record<string, unknown>): ReturnType<typeof synthStack> {
  const key = JSON.stringify(config);
  const found = synthesized.get(key) ?? synthStack(config);
  synthesized.set(key, found);
  return found;
}
