// Least privilege by action: each function's role holds exactly the AWS actions its code calls. moto runs every
// call whatever the role allows, so this compares the synthesized statements with the SDK commands found in
// each handler's module graph (esbuild's metafile: every file of ours the bundle takes in), mapped to actions.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Template } from 'aws-cdk-lib/assertions';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONSUMER_ENTRY } from '../../infra/constructs/consumer.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';
import { FULL_CONFIG, synthStack } from './synth.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** IAM's name of an action whose SDK command is named otherwise (AWS's service authorization reference). */
const ACTION_OF_COMMAND: Readonly<Record<string, string>> = {
  // SendMessageBatch is authorised by sqs:SendMessage (SQS batch actions take the single action's permission).
  'sqs:SendMessageBatch': 'sqs:SendMessage',
  'lambda:Invoke': 'lambda:InvokeFunction',
};

/** Calls that need more than their own action. */
const LIBRARY_CALLS: ReadonlyArray<{ pattern: RegExp; actions: readonly string[] }> = [
  // GetParameter WithDecryption: SSM decrypts with the parameter's KMS key on the caller's behalf, so the caller
  // needs kms:Decrypt too (granted only for a customer-managed key; the AWS-managed alias/aws/ssm key's policy
  // already allows it).
  { pattern: /new GetParameterCommand\(\{[^}]*WithDecryption: true/, actions: ['kms:Decrypt'] },
];

/** What the platform grants beside the code's calls: logs and traces, and the SQS event source's polling. */
const PLATFORM_ACTIONS =
  /^(logs|xray):|^sqs:(ReceiveMessage|ChangeMessageVisibility|GetQueueUrl|DeleteMessage|GetQueueAttributes)$/;

const called = new Map<string, Promise<string[]>>();

/** The AWS actions the code of one handler's module graph calls (bundled once per entry). */
function actionsCalledFrom(entry: string): Promise<string[]> {
  const known = called.get(entry) ?? findActions(entry);
  called.set(entry, known);
  return known;
}

async function findActions(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: ROOT,
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    outdir: 'unused',
    logLevel: 'silent',
  });
  const ownFiles = Object.keys(result.metafile.inputs).filter((path) => path.startsWith('functions/'));
  const actions = new Set<string>();
  for (const path of ownFiles) {
    const source = readFileSync(`${ROOT}${path}`, 'utf8');
    const clients = new Map<string, string>();
    for (const [, names, service] of source.matchAll(
      /import\s*\{([^}]*)\}\s*from\s*'@aws-sdk\/client-([a-z0-9-]+)'/g,
    )) {
      for (const name of (names ?? '').split(','))
        clients.set(name.replace(/^\s*type\s+/, '').trim(), service ?? '');
    }
    for (const [, command] of source.matchAll(/new (\w+)Command\(/g)) {
      const service = clients.get(`${command}Command`);
      expect(service, `${path}: ${command}Command is imported from an @aws-sdk client`).toBeDefined();
      const action = `${service}:${command}`;
      actions.add(ACTION_OF_COMMAND[action] ?? action);
    }
    for (const call of LIBRARY_CALLS) {
      if (call.pattern.test(source)) for (const action of call.actions) actions.add(action);
    }
  }
  return [...actions].sort();
}

type Statement = { Action: string | string[] };

function actionsGrantedTo(template: Template, rolePrefix: string): string[] {
  const roles = Object.keys(template.findResources('AWS::IAM::Role')).filter((id) =>
    id.startsWith(rolePrefix),
  );
  expect(roles).toHaveLength(1);
  const policies = Object.values(
    template.findResources('AWS::IAM::Policy') as Record<
      string,
      { Properties: { Roles: unknown; PolicyDocument: { Statement: Statement[] } } }
    >,
  ).filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roles[0] }]));
  const actions = policies.flatMap((policy) =>
    policy.Properties.PolicyDocument.Statement.flatMap((s) =>
      Array.isArray(s.Action) ? s.Action : [s.Action],
    ),
  );
  return [...new Set(actions)].filter((action) => !PLATFORM_ACTIONS.test(action)).sort();
}

let template: Template;

beforeAll(() => {
  // FULL_CONFIG has a customer-managed token key, so the poller's kms:Decrypt is in the template.
  template = synthStack(FULL_CONFIG).template;
});

describe('IAM by action', () => {
  it.each([
    ['poller', POLLER_ENTRY, 'PollerFunctionRole'],
    ['consumer', CONSUMER_ENTRY, 'ConsumerFunctionRole'],
  ])(
    'grants the %s exactly the DynamoDB, SQS, S3, SSM, KMS and Lambda actions its code calls',
    async (_name, entry, role) => {
      const called = await actionsCalledFrom(entry);

      expect(called.length).toBeGreaterThan(0);
      expect(actionsGrantedTo(template, role)).toEqual(called);
    },
  );

  it('finds the calls the adapters make (the mapping is not vacuous)', async () => {
    expect(await actionsCalledFrom(POLLER_ENTRY)).toEqual(
      expect.arrayContaining(['dynamodb:UpdateItem', 'sqs:SendMessage', 's3:PutObject', 'ssm:GetParameter']),
    );
    expect(await actionsCalledFrom(CONSUMER_ENTRY)).toEqual(['dynamodb:PutItem']);
  });
});
