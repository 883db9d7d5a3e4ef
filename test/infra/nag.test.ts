// cdk-nag (AWS Solutions pack) over the whole app: no finding may be left unacknowledged, and every
// acknowledgement must say why.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type App, Validations } from 'aws-cdk-lib';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FULL_CONFIG, REQUIRED_CONFIG, synthStack } from './synth.js';

const outdir = mkdtempSync(join(tmpdir(), 'order-feed-nag-'));
let app: App;

beforeAll(() => {
  app = synthStack(FULL_CONFIG, { outdir }).app;
  app.synth(); // runs the plugin registered by buildApp; throws on any unacknowledged error
});

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

function acknowledgements(root: IConstruct): { path: string; id: string; reason: string }[] {
  return root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

describe('cdk-nag AWS Solutions checks', () => {
  it('report no unacknowledged error or warning', () => {
    const report = new AwsSolutionsChecks().validateScope(app);

    expect(
      report.violations.map(
        (v) => `${v.severity} ${v.ruleName} at ${v.violatingResources[0]?.constructPath}`,
      ),
    ).toEqual([]);
  });

  it('leave an empty validation report in the cloud assembly', () => {
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations?: unknown[] }[];
    };

    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
  });

  it('acknowledge only the expected findings, each with a reason', () => {
    const found = acknowledgements(app);

    expect(found.map((ack) => `${ack.path} ${ack.id}`).sort()).toEqual(
      [
        'OrderFeedIngester/Default/Consumer/Function AwsSolutions-L1',
        'OrderFeedIngester/Default/Consumer/FunctionRole AwsSolutions-IAM5[Resource::*]',
        'OrderFeedIngester/Default/Poller/Function AwsSolutions-L1',
        'OrderFeedIngester/Default/Poller/FunctionRole AwsSolutions-IAM5[Resource::*]',
        'OrderFeedIngester/Default/Poller/FunctionRole AwsSolutions-IAM5[Resource::<QuarantineBucket2B128B57.Arn>/quarantine/*]',
        'OrderFeedIngester/Default/Quarantine/Bucket AwsSolutions-S1',
      ].sort(),
    );
    for (const ack of found) expect(ack.reason.length, `${ack.id} reason`).toBeGreaterThan(40);
  });

  it('report nothing for a throwaway stack with its own alarm topic and an e-mail subscription', () => {
    // The stack's own topic and key, the subscriber age alarms and the bucket's auto-delete custom resource.
    const { app: throwaway } = synthStack({
      ...REQUIRED_CONFIG,
      removalPolicy: 'destroy',
      alarmEmail: 'oncall@example.com',
      downstreamSubscribers: ['billing'],
    });

    expect(new AwsSolutionsChecks().validateScope(throwaway).violations).toEqual([]);
  });

  it('fail the synth of the app when a finding is not acknowledged', () => {
    // Prepare: the real app plus a queue breaking the rules (no DLQ, no TLS-only policy)
    const { app: broken, stack } = synthStack(REQUIRED_CONFIG);
    new Queue(stack, 'UnguardedQueue');

    // Act / Assess
    expect(() => broken.synth({ force: true })).toThrow(/AwsSolutions-SQS(3|4)/);
  });
});
