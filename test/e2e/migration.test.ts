// A deployed stack of today's per-feed shape updated in place to the fleet's, in moto, with `cdk deploy`
// (tools/deploy-local.ts): the single-feed stack and a 20-feed one, both at once. The old shape is the template
// main synthesized before the fleet (test/fixtures/pre-fleet/*.template.json: `cdk synth` of commit a82eab8 with
// the context below), created through CloudFormation with placeholder code (moto runs no function); cursors are
// written as the old poller leaves them; then the new shape is deployed over each. Asserted: the stateful
// resources (tables, queues, bucket, key, topic) keep their physical names, every cursor is kept, each feed becomes
// a registry row at the dispatcher's first run, and the next poll of each starts at its stored cursor (no request
// without one: nothing is read again). The dispatcher and the poller run in-process with the environments the
// update deployed, as local mode runs them.
//
// What moto's update does not show, so this test does not assert it: it applies no property change to a table,
// log group, KMS key or permission (the fleet changes none of the stateful resources), and it deletes removed
// resources even with `DeletionPolicy: Retain` (the removed pollers' log groups, which CloudFormation keeps).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import {
  CreateStackCommand,
  DescribeStackResourcesCommand,
  DescribeStacksCommand,
  type Output,
} from '@aws-sdk/client-cloudformation';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetFunctionConfigurationCommand } from '@aws-sdk/client-lambda';
import { ListBucketsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import { buildDispatcher } from '../../functions/dispatcher/build-dispatcher.js';
import { readDispatcherConfig } from '../../functions/dispatcher/config.js';
import { buildPoller } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import {
  bootstrapLocal,
  deployAssembly,
  LOCAL_DEFAULTS,
  type LocalFeed,
  synthLocal,
} from '../../tools/deploy-local.js';
import { TEST_TOKEN } from '../../tools/harness/pipeline.js';
import { createLocalAwsClients, type LocalAwsClients, parseAwsEndpoint } from '../../tools/local/aws.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { type RunningMoto, startMoto } from '../support/moto.js';

const SINGLE = 'PreFleetSingle';
const TWENTY = 'PreFleetTwenty';
/** The 20 feeds the fixture was synthesized with (`orderFeed.feeds`), one vendor each. */
const FEEDS: LocalFeed[] = Array.from({ length: 20 }, (_, index) => ({
  id: `feed-${String(index + 1).padStart(2, '0')}`,
  vendorIds: [`vendor-${index + 1}`],
}));
const FEEDS_OF: Record<string, LocalFeed[]> = { [SINGLE]: [{ id: 'orders' }], [TWENTY]: FEEDS };
const STATEFUL_TYPES = [
  'AWS::DynamoDB::Table',
  'AWS::SQS::Queue',
  'AWS::S3::Bucket',
  'AWS::KMS::Key',
  'AWS::SNS::Topic',
];
/** An empty zip archive: the old functions' code (moto runs none). */
const EMPTY_ZIP = Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]);
const silent = new Logger({ serviceName: 'test', logLevel: 'SILENT' });

const workDir = mkdtempSync(join(tmpdir(), 'order-feed-migration-'));
let moto: RunningMoto;
let sim: RunningSimulator;
let aws: LocalAwsClients;

beforeAll(async () => {
  moto = await startMoto();
  sim = await startSimulator({ token: TEST_TOKEN, feed: { seed: 32, orders: 60, vendors: 20 } });
  aws = createLocalAwsClients(parseAwsEndpoint(moto.endpoint));
});

afterAll(async () => {
  aws?.destroy();
  await sim?.close();
  await moto?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

function fixture(name: string): {
  Resources: Record<string, { Properties?: { Code?: { S3Key?: string } } }>;
} {
  return JSON.parse(readFileSync(new URL(`../fixtures/pre-fleet/${name}`, import.meta.url), 'utf8'));
}

async function stackOf(stackName: string) {
  const { Stacks } = await aws.cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }));
  const stack = Stacks?.[0];
  if (stack === undefined) throw new Error(`no stack ${stackName}`);
  const outputs = Object.fromEntries(
    (stack.Outputs ?? []).map((output: Output) => [output.OutputKey, output.OutputValue]),
  );
  return { status: stack.StackStatus, outputs: outputs as Record<string, string | undefined> };
}

async function statefulOf(stackName: string): Promise<Record<string, string | undefined>> {
  const { StackResources = [] } = await aws.cloudFormation.send(
    new DescribeStackResourcesCommand({ StackName: stackName }),
  );
  return Object.fromEntries(
    StackResources.filter((resource) => STATEFUL_TYPES.includes(resource.ResourceType ?? '')).map(
      (resource) => [resource.LogicalResourceId, resource.PhysicalResourceId],
    ),
  );
}

async function itemOf(table: string, feedId: string): Promise<Record<string, unknown>> {
  const { Item } = await aws.dynamo.send(
    new GetItemCommand({ TableName: table, Key: marshall({ feedId }), ConsistentRead: true }),
  );
  return Item ? unmarshall(Item) : {};
}

/** A cursor the partner gave for the feed: the second page's (pages of one), as after a run that read the first. */
async function partnerCursor(feed: LocalFeed): Promise<string> {
  const query = new URLSearchParams({ pageSize: '1' });
  for (const vendor of feed.vendorIds ?? []) query.append('vendorIds', vendor);
  const response = await fetch(`${sim.url}/v1/orderUpdates?${query}`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  const page = (await response.json()) as { hasMore: boolean; nextPageId?: string };
  if (!page.hasMore || page.nextPageId === undefined) throw new Error(`feed ${feed.id} has a single page`);
  return page.nextPageId;
}

/** The environment a deployed function runs with. */
async function environmentOf(functionName: string | undefined): Promise<Record<string, string>> {
  const configuration = await aws.lambda.send(
    new GetFunctionConfigurationCommand({ FunctionName: functionName }),
  );
  return configuration.Environment?.Variables ?? {};
}

describe('a stack of a poller per feed updated in place to the fleet', () => {
  it('keeps the stateful resources and every cursor, registers each feed, and polls each from its cursor (single feed and 20 feeds)', async () => {
    // The new shape of both stacks, synthesized at once while the old ones are created.
    const synthesized = Promise.all(
      [SINGLE, TWENTY].map((stackName) =>
        synthLocal({
          endpoint: moto.endpoint,
          stackName,
          partnerBaseUrl: sim.url,
          feeds: stackName === TWENTY ? FEEDS : undefined,
          outputsFile: join(workDir, stackName, 'outputs.json'),
          log: () => undefined,
        }),
      ),
    );
    const assemblies = await synthesized;
    await bootstrapLocal(assemblies[0] as (typeof assemblies)[number]);
    await aws.ssm.send(
      new PutParameterCommand({
        Name: LOCAL_DEFAULTS.tokenParameterName,
        Type: 'SecureString',
        Value: TEST_TOKEN,
        Overwrite: true,
      }),
    );

    // Today's stacks, as `cdk deploy` of main left them.
    const { Buckets = [] } = await aws.s3.send(new ListBucketsCommand({}));
    const assetBucket = Buckets.find((bucket) => bucket.Name?.startsWith('cdk-hnb659fds-assets-'))?.Name;
    for (const [stackName, file] of [
      [SINGLE, 'single-feed.template.json'],
      [TWENTY, 'twenty-feeds.template.json'],
    ] as const) {
      const template = fixture(file);
      for (const key of new Set(Object.values(template.Resources).map((r) => r.Properties?.Code?.S3Key)))
        if (key !== undefined)
          await aws.s3.send(new PutObjectCommand({ Bucket: assetBucket, Key: key, Body: EMPTY_ZIP }));
      await aws.cloudFormation.send(
        new CreateStackCommand({
          StackName: stackName,
          TemplateBody: JSON.stringify(template),
          Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_NAMED_IAM', 'CAPABILITY_AUTO_EXPAND'],
        }),
      );
    }
    const before: Record<string, { stateful: Record<string, unknown>; cursors: Record<string, unknown> }> =
      {};
    for (const stackName of [SINGLE, TWENTY]) {
      const { status, outputs } = await stackOf(stackName);
      expect(status).toBe('CREATE_COMPLETE');
      expect(Object.keys(outputs).filter((key) => key.startsWith('PollScheduleRuleName'))).toHaveLength(
        FEEDS_OF[stackName]?.length ?? 0,
      );
      // Each feed part-way through its stream: the old poller's lease, commit and release.
      const table = outputs.CursorTableName as string;
      const store = new DynamoCursorStore(aws.dynamo, table);
      const cursors: Record<string, unknown> = {};
      for (const feed of FEEDS_OF[stackName] ?? []) {
        const now = Date.now();
        const lease = await store.acquire(feed.id, `old-run-${feed.id}`, 0, now, now + 60_000);
        if (lease === undefined) throw new Error(`no lease on ${feed.id}`);
        const committed = await store.commit(lease, {
          pageId: await partnerCursor(feed),
          highWaterMark: '2026-01-01T00:00:00.000Z',
        });
        await store.release(committed, { outcome: 'page-limit', at: now + 1_000 });
        const { pageId, revision, highWaterMark } = await itemOf(table, feed.id);
        cursors[feed.id] = { pageId, revision, highWaterMark };
      }
      before[stackName] = { stateful: await statefulOf(stackName), cursors };
    }

    // The update: both stacks at once, each `cdk deploy` of the new shape over the old.
    const requestsBefore = sim.requests.length;
    await Promise.all(assemblies.map((assembly) => deployAssembly(assembly)));

    for (const stackName of [SINGLE, TWENTY]) {
      const feeds = FEEDS_OF[stackName] ?? [];
      const { status, outputs } = await stackOf(stackName);
      expect(status).toBe('UPDATE_COMPLETE');
      expect(Object.keys(outputs).filter((key) => key.startsWith('PollScheduleRuleName'))).toEqual([]);
      // moto's update drops its record of the alarm topic's KMS key, though the update leaves its template as it
      // was (test/infra/stack.test.ts: the stateful resources keep their logical ids and properties): left out.
      const { MonitoringAlarmTopicKeyFFA45DC9: _key, ...kept } = before[stackName]?.stateful ?? {};
      expect(await statefulOf(stackName)).toMatchObject(kept);
      const table = outputs.CursorTableName as string;
      for (const feed of feeds)
        expect({ [feed.id]: await itemOf(table, feed.id) }).toMatchObject({
          [feed.id]: before[stackName]?.cursors[feed.id],
        });

      // The dispatcher's first run (its schedule's tick) and the pollers it starts, with what was deployed.
      const poller = buildPoller(aws, loadPollerConfig(await environmentOf(outputs.PollerFunctionName)), {
        logger: silent,
        dispatchRequests: {
          request: async () => undefined,
          end: async () => 0,
        },
      });
      const runs: Array<Promise<unknown>> = [];
      const dispatcher = buildDispatcher(
        aws,
        await readDispatcherConfig(await environmentOf(outputs.DispatcherFunctionName), aws.s3),
        {
          startPoller: async (event) => void runs.push(poller(event, lambdaContext('poller', 60_000))),
          unreservedConcurrency: async () => undefined,
          logger: silent,
        },
      );
      await dispatcher({ source: 'aws.events' }, lambdaContext('dispatcher', 60_000));
      await Promise.all(runs);

      const rows = await new DynamoFeedRegistry(aws.dynamo, table).scan();
      for (const feed of feeds) {
        expect(rows.find((row) => row.feedId === feed.id)).toMatchObject({
          registered: true,
          state: 'enabled',
        });
        expect(await itemOf(table, feed.id)).toMatchObject({
          config: feed.vendorIds === undefined ? {} : { vendorIds: feed.vendorIds },
        });
      }
    }

    // Each feed's first request after the update carries its stored cursor; none starts the stream again.
    const after = sim.requests
      .slice(requestsBefore)
      .map((request) => new URL(request.url, sim.url).searchParams);
    expect(after.filter((query) => query.get('pageId') === null)).toEqual([]);
    for (const stackName of [SINGLE, TWENTY])
      for (const feed of FEEDS_OF[stackName] ?? []) {
        const first = after.find(
          (query) => query.getAll('vendorIds').join(',') === (feed.vendorIds ?? []).join(','),
        );
        expect({ [feed.id]: first?.get('pageId') }).toEqual({
          [feed.id]: (before[stackName]?.cursors[feed.id] as { pageId: string } | undefined)?.pageId,
        });
      }
  });
});
