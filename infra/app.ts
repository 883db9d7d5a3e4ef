// CDK app entry (`cdk.json` → `npx tsx infra/app.ts`): reads the configuration, builds the stack and runs
// cdk-nag's AWS Solutions checks on every synth (a finding without an acknowledgement fails the synth).
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { projectContextObject, readContext } from './config.js';
import { FEATURE_FLAGS } from './feature-flags.js';
import type { OrderFeedIngesterProps } from './order-feed-ingester.js';
import { OrderFeedIngesterStack } from './stack.js';

export const STACK_NAME = 'OrderFeedIngester';

/** Builds the app; tests call it with their own context and output directory. */
export function buildApp(options: { context?: Record<string, unknown>; outdir?: string } = {}): {
  app: App;
  stack: OrderFeedIngesterStack;
} {
  const app = new App({ context: { ...FEATURE_FLAGS, ...options.context }, outdir: options.outdir });
  const stack = new OrderFeedIngesterStack(app, STACK_NAME, {
    ingester: readContext(app.node, projectContextObject()) as OrderFeedIngesterProps,
    description:
      'order-feed-ingester: scheduled partner Order Feed poller, SQS fan-out, DynamoDB orders table',
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}

// Run only as the CDK entry point, not when a test imports buildApp.
const entryScript = process.argv[1];
if (entryScript !== undefined && resolve(entryScript) === fileURLToPath(import.meta.url)) {
  buildApp().app.synth();
}
