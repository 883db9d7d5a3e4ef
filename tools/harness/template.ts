// The production stack's template, as the harness (tools/harness/pipeline.ts) creates its resources from it:
// synthesized once and cached. Kept apart from the harness so that vitest's global setup, which synthesizes it
// before any worker starts, loads neither the AWS SDK nor aws-cdk-lib when the cached copy is current.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// One way to create resources: local mode deploys the stack with `cdk deploy`; the harness (integration tests,
// bench) creates the same tables and queues from that stack's synthesized template, because a deploy per test
// file would cost ~15 s. What the emulator needs of each resource (keys, indexes, billing mode, queue attributes,
// redrive) is read from the template, so a change to the stack changes the harness with it.
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TOKEN_PARAMETER = '/order-feed/partner-token';
/**
 * The context the harness synthesizes with: one feed, one downstream subscriber, no asset bundling, and, as for
 * a deploy into moto, no template checks (`emulatorDeploy`: EMULATOR_DEPLOY_CONTEXT_KEY of infra/app.ts, not
 * imported from there: that module loads aws-cdk-lib); test/infra/stack.test.ts checks the same stack.
 */
const HARNESS_CONTEXT = {
  orderFeed: {
    partnerBaseUrl: 'http://127.0.0.1:1',
    tokenParameterName: TOKEN_PARAMETER,
    downstreamSubscribers: ['analytics'],
  },
  'aws:cdk:bundling-stacks': [],
  emulatorDeploy: true,
};

interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
}
export type CfnTemplate = { Resources: Record<string, CfnResource> };

let template: Promise<CfnTemplate> | undefined;

/**
 * The production stack's template. Synthesizing takes seconds, so it is cached under `.local/harness/`, keyed by
 * the sources of infra/ and functions/ (the first test file after a change synthesizes it again).
 */
export function stackTemplate(): Promise<CfnTemplate> {
  template ??= (async () => {
    const hash = createHash('sha256').update(JSON.stringify(HARNESS_CONTEXT));
    for (const dir of ['infra', 'functions']) {
      const files = (await readdir(path.join(REPO_ROOT, dir), { recursive: true })).filter((file) =>
        /\.(ts|json)$/.test(file),
      );
      for (const file of files.sort())
        hash.update(file).update(await readFile(path.join(REPO_ROOT, dir, file)));
    }
    const cached = path.join(
      REPO_ROOT,
      '.local',
      'harness',
      `template-${hash.digest('hex').slice(0, 16)}.json`,
    );
    try {
      return JSON.parse(await readFile(cached, 'utf8')) as CfnTemplate;
    } catch {
      // Not synthesized yet for these sources.
    }
    const { buildApp } = await import('../../infra/app.js');
    const { app, stack } = buildApp({ context: HARNESS_CONTEXT });
    // Nor CDK's built-in CloudFormation validation (5 s of CPU), which reads this variable at synth.
    const validation = process.env.CDK_VALIDATION;
    process.env.CDK_VALIDATION = 'false';
    let synthesized: CfnTemplate;
    try {
      synthesized = app.synth().getStackByName(stack.stackName).template as CfnTemplate;
    } finally {
      if (validation === undefined) delete process.env.CDK_VALIDATION;
      else process.env.CDK_VALIDATION = validation;
    }
    await mkdir(path.dirname(cached), { recursive: true });
    // Written whole, then renamed: parallel test files may synthesize at the same time.
    await writeFile(`${cached}.${process.pid}`, JSON.stringify(synthesized));
    await rename(`${cached}.${process.pid}`, cached);
    return synthesized;
  })();
  return template;
}
