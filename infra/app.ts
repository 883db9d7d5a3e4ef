// CDK app entry (`cdk.json` → `npx tsx infra/app.ts`): reads the configuration, builds the stack and runs
// cdk-nag's AWS Solutions checks on every synth (a finding without an acknowledgement fails the synth), except
// the emulator deploy's (`-c emulatorDeploy=true`, set by tools/deploy-local.ts only: see EMULATOR_DEPLOY_CONTEXT_KEY).
// The stack's name is the context value `stackName` (`-c stackName=orders-staging`), by default the name it
// always had, so a deployed stack updates in place and two stages can live in one account and region.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import { parseConfig, projectContextObject, readContext } from './config.js';
import { FEATURE_FLAGS } from './feature-flags.js';
import { OrderFeedIngesterStack } from './stack.js';

/** The stack's name unless the context sets `stackName`. */
export const STACK_NAME = 'OrderFeedIngester';
/** The context key of the stack's name. */
export const STACK_NAME_CONTEXT_KEY = 'stackName';

/**
 * The context key tools/deploy-local.ts sets (`-c emulatorDeploy=true`) when it synthesizes for a deploy into
 * moto: that synth skips cdk-nag's AWS Solutions pass (about 1 s of CPU; deploy-local also turns off
 * aws-cdk-lib's built-in CloudFormation validation with CDK_VALIDATION=false, about 5 s). The same templates
 * are checked in `npm test` (test/infra/stack.test.ts: nag, the built-in validation report and cfn-lint over
 * the one-feed, three-feed and throwaway stacks, and a synth that fails on an unacknowledged finding); `cdk
 * synth` and `cdk deploy` to AWS never set the key, so every real synth still fails on an unacknowledged finding.
 */
export const EMULATOR_DEPLOY_CONTEXT_KEY = 'emulatorDeploy';

/** Builds the app; tests call it with their own context and output directory. */
export function buildApp(options: { context?: Record<string, unknown>; outdir?: string } = {}): {
  app: App;
  stack: OrderFeedIngesterStack;
} {
  const app = new App({ context: { ...FEATURE_FLAGS, ...options.context }, outdir: options.outdir });
  const stackName = app.node.tryGetContext(STACK_NAME_CONTEXT_KEY) ?? STACK_NAME;
  if (typeof stackName !== 'string' || !/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(stackName)) {
    throw new Error(
      `${STACK_NAME_CONTEXT_KEY}: must be a CloudFormation stack name (a letter, then letters, digits and "-", at most 128) (got ${JSON.stringify(stackName)})`,
    );
  }
  const stack = new OrderFeedIngesterStack(app, stackName, {
    config: parseConfig(readContext(app.node, projectContextObject())),
    description:
      'order-feed-ingester: scheduled partner Order Feed poller, SQS fan-out, DynamoDB orders table',
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  if (!isTrue(app.node.tryGetContext(EMULATOR_DEPLOY_CONTEXT_KEY))) {
    // Loaded only here: loading cdk-nag alone costs the emulator deploy's synth 0.7 s of CPU.
    const { AwsSolutionsChecks } = createRequire(import.meta.url)('cdk-nag') as typeof import('cdk-nag');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  }
  return { app, stack };
}

/** A boolean context value: `true` from code, the string `"true"` from `-c key=true`. */
function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}

// Run only as the CDK entry point, not when a test imports buildApp.
const entryScript = process.argv[1];
if (entryScript !== undefined && resolve(entryScript) === fileURLToPath(import.meta.url)) {
  buildApp().app.synth();
}
