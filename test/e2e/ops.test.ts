// The real stack deployed into a fresh moto with `cdk deploy` (what only a deploy shows: CloudFormation
// creates it with every output, the functions' environment names the resources created, the shipped bundles
// load), one run of the fleet against the partner simulator (the dispatcher, the pollers it starts and the
// consumer, built in-process from the environments deployed, ticks and dispatch requests as the schedule and
// Lambda would deliver them), then `npm run ops` against that stack: each command in-process through runOps, as an
// operator would, the state it leaves checked through the AWS APIs; a real `tsx` process for the exit status
// of a backfill stopped by Ctrl-C (a bad flag's: help.test.ts). The stack's template is asserted in test/infra.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  GetFunctionConfigurationCommand,
  ListEventSourceMappingsCommand,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { quarantineKey } from '../../functions/core/adapters/s3-quarantine.js';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import { stringifyJsonExact } from '../../functions/core/model/int64.js';
import { buildDispatcher } from '../../functions/dispatcher/build-dispatcher.js';
import { readDispatcherConfig, readInitialFeeds } from '../../functions/dispatcher/config.js';
import { buildPoller } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import { STACK_NAME } from '../../infra/app.js';
import { deployLocal, LOCAL_DEFAULTS } from '../../tools/deploy-local.js';
import { drainQueue, TEST_TOKEN } from '../../tools/harness/pipeline.js';
import { createLocalAwsClients, type LocalAwsClients, parseAwsEndpoint } from '../../tools/local/aws.js';
import { storeToken } from '../../tools/local/deployment.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { checkpointKey } from '../../tools/ops/backfill.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { readSalesLedger } from '../../tools/store/sales-ledger.js';
import { scanOrders } from '../../tools/store/stored-order.js';
import { sampleOrder } from '../fixtures/orders.js';
import { EMULATOR_ENV, type RunningMoto, startMoto } from '../support/moto.js';
import { runOpsCaptured } from '../support/ops.js';
import { startCli } from './cli.js';

const SETUP_TIMEOUT_MS = 240_000;
const FEED = 'orders';
const workDir = mkdtempSync(join(tmpdir(), 'order-feed-ops-'));
let moto: RunningMoto;
let sim: RunningSimulator;
let aws: LocalAwsClients;
/** The deployment's token parameter (deploy-local's default), as `deployment.tokenParameterName` was. */
const deployment = { tokenParameterName: LOCAL_DEFAULTS.tokenParameterName };
let outputs: Record<string, string>;

beforeAll(async () => {
  moto = await startMoto();
  sim = await startSimulator({ token: TEST_TOKEN, feed: { seed: 12, orders: 40, vendors: 3 } });
  outputs = await deployLocal({
    endpoint: moto.endpoint,
    outputsFile: join(workDir, 'outputs.json'),
    partnerBaseUrl: sim.url,
    subscribers: ['billing'],
    log: () => undefined,
  });
  aws = createLocalAwsClients(parseAwsEndpoint(moto.endpoint));
  await storeToken(aws, deployment.tokenParameterName, TEST_TOKEN);
  expect(await runFleet()).toBe('caught-up');
}, SETUP_TIMEOUT_MS);

/**
 * The fleet until the stack's feed is caught up: the dispatcher's first run seeds its row and starts a poller
 * per batch; each poller that asks for a dispatch gets one; the consumer drains the orders queue in between.
 */
async function runFleet(): Promise<unknown> {
  const silent = new Logger({ serviceName: 'ops-e2e', logLevel: 'SILENT' });
  const environment = async (key: string) =>
    (await aws.lambda.send(new GetFunctionConfigurationCommand({ FunctionName: output(key) }))).Environment
      ?.Variables ?? {};
  const requests: number[] = [];
  const poller = buildPoller(aws, loadPollerConfig(await environment('PollerFunctionName')), {
    logger: silent,
    dispatchRequests: {
      request: async (at) => void requests.push(at),
      end: async () => 0,
    },
  });
  const runs: Array<Promise<unknown>> = [];
  const dispatcherConfig = await readDispatcherConfig(await environment('DispatcherFunctionName'), aws.s3);
  const dispatcher = buildDispatcher(aws, dispatcherConfig, {
    startPoller: async (event) => void runs.push(poller(event, lambdaContext('poller', 60_000))),
    unreservedConcurrency: async () => undefined,
    logger: silent,
  });
  const consumer = buildConsumer(aws, loadConsumerConfig(await environment('ConsumerFunctionName')), {
    logger: silent,
  });
  // moto's copy of the consumer's event source mapping receives messages it cannot deliver (it runs no function)
  // until they are dead-lettered: disabled, as local mode does; the consumer runs here.
  const { EventSourceMappings = [] } = await aws.lambda.send(
    new ListEventSourceMappingsCommand({ FunctionName: output('ConsumerFunctionName') }),
  );
  for (const mapping of EventSourceMappings)
    await aws.lambda.send(new UpdateEventSourceMappingCommand({ UUID: mapping.UUID, Enabled: false }));
  let event: unknown = { source: 'aws.events' };
  for (let round = 0; round < 50; round += 1) {
    await dispatcher(event, lambdaContext('dispatcher', 60_000));
    await Promise.all(runs.splice(0));
    await drainQueue(aws, output('OrdersQueueUrl'), { consume: consumer });
    const requestedAt = requests.splice(0).at(-1);
    if (requestedAt === undefined) break;
    event = { dispatchRequest: { requestedAt } };
  }
  return (await cursorItem()).lastRunOutcome;
}

afterAll(async () => {
  aws?.destroy();
  await sim?.close();
  await moto?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

const ops = (...argv: string[]) => runOpsCaptured([...argv, '--aws-endpoint', moto.endpoint]);

async function opsJson<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
  const ran = await ops(...argv, '--json');
  expect(ran.code, ran.stderr).toBe(0);
  return JSON.parse(ran.stdout) as T;
}

const output = (key: string): string => {
  const value = outputs[key];
  if (value === undefined) throw new Error(`no output ${key}`);
  return value;
};

/** The template cdk deploy synthesized. */
const template = () =>
  JSON.parse(readFileSync(join(workDir, 'cdk.out', `${STACK_NAME}.template.json`), 'utf8')) as {
    Outputs: Record<string, unknown>;
    Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }>;
  };

/** The functions' configuration, as deployed. */
function deployedEnvironment(): Record<string, string> {
  return {
    CURSOR_TABLE_NAME: output('CursorTableName'),
    POLLER_FUNCTION_NAME: output('PollerFunctionName'),
    PARTNER_BASE_URL: sim.url,
    ORDERS_QUEUE_URL: output('OrdersQueueUrl'),
    DOWNSTREAM_QUEUE_URLS: '{}',
    QUARANTINE_BUCKET_NAME: output('QuarantineBucketName'),
    ORDERS_TABLE_NAME: output('OrdersTableName'),
  };
}

async function cursorItem(feedId = FEED): Promise<Record<string, unknown>> {
  const { Item } = await aws.dynamo.send(
    new GetItemCommand({
      TableName: output('CursorTableName'),
      Key: marshall({ feedId }),
      ConsistentRead: true,
    }),
  );
  return Item ? unmarshall(Item) : {};
}

async function setCursor(attributes: Record<string, unknown>): Promise<void> {
  const names = Object.keys(attributes);
  await aws.dynamo.send(
    new UpdateItemCommand({
      TableName: output('CursorTableName'),
      Key: marshall({ feedId: FEED }),
      UpdateExpression: `SET ${names.map((name) => `#${name} = :${name}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(names.map((name) => [`#${name}`, name])),
      ExpressionAttributeValues: marshall(
        Object.fromEntries(names.map((name) => [`:${name}`, attributes[name]])),
      ),
    }),
  );
}

/** Receives and deletes every message of a queue. */
async function takeAll(queueUrl: string): Promise<Message[]> {
  const taken: Message[] = [];
  for (;;) {
    const { Messages = [] } = await aws.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 60,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return taken;
    taken.push(...Messages);
    await aws.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
}

describe('the stack cdk deploy created in the emulator', () => {
  it('is created with every output, the one poller and the dispatcher named', async () => {
    const { Stacks } = await aws.cloudFormation.send(new DescribeStacksCommand({ StackName: STACK_NAME }));
    const described = Object.fromEntries(
      (Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]),
    );

    expect(Stacks?.[0]?.StackStatus).toBe('CREATE_COMPLETE');
    expect(described).toEqual(outputs);
    // Every output of the template (which outputs it has: test/infra/stack.test.ts).
    expect(Object.keys(described).sort()).toEqual(Object.keys(template().Outputs).sort());
    // No alarmTopicArn given: the stack's own topic.
    expect(described.AlarmTopicArn).toMatch(/^arn:aws:sns:[a-z0-9-]+:\d{12}:/);
    expect(described).toMatchObject({
      PollerFunctionName: expect.any(String),
      DispatcherFunctionName: expect.any(String),
    });
  });

  // The queues' retention and redrive, and the mapping's partial batch responses: test/infra/stack.test.ts.
  it("gives the functions the deployed resources' names, and the consumer the orders queue", async () => {
    const configuration = (key: string) =>
      aws.lambda.send(new GetFunctionConfigurationCommand({ FunctionName: output(key) }));
    const [poller, consumer] = [
      await configuration('PollerFunctionName'),
      await configuration('ConsumerFunctionName'),
    ];
    const { EventSourceMappings } = await aws.lambda.send(
      new ListEventSourceMappingsCommand({ FunctionName: output('ConsumerFunctionName') }),
    );
    const { Attributes: orders = {} } = await aws.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: output('OrdersQueueUrl'), AttributeNames: ['QueueArn'] }),
    );

    expect(poller.Runtime).toBe('nodejs22.x');
    expect(poller.Environment?.Variables).toMatchObject({
      CURSOR_TABLE_NAME: output('CursorTableName'),
      ORDERS_QUEUE_URL: output('OrdersQueueUrl'),
      QUARANTINE_BUCKET_NAME: output('QuarantineBucketName'),
      PARTNER_BASE_URL: sim.url,
      DOWNSTREAM_QUEUE_URLS: JSON.stringify({ billing: output('DownstreamQueueUrlBilling') }),
    });
    const dispatcher = await configuration('DispatcherFunctionName');
    expect(dispatcher.Environment?.Variables).toMatchObject({
      CURSOR_TABLE_NAME: output('CursorTableName'),
      POLLER_FUNCTION_NAME: output('PollerFunctionName'),
    });
    expect(
      JSON.parse((await readInitialFeeds(dispatcher.Environment?.Variables ?? {}, aws.s3)) ?? '{}'),
    ).toMatchObject({
      shared: { tokenParameterName: deployment.tokenParameterName },
      feeds: [{ id: FEED }],
    });
    expect(consumer.Environment?.Variables).toMatchObject({ ORDERS_TABLE_NAME: output('OrdersTableName') });
    expect(EventSourceMappings?.map((mapping) => mapping.EventSourceArn)).toEqual([orders.QueueArn]);
  });

  it('ships bundles that load as ESM and export handler, with source maps of our own code only', () => {
    const bundles = Object.values(template().Resources)
      .filter((resource) => resource.Type === 'AWS::Lambda::Function')
      .map((resource) =>
        join(workDir, 'cdk.out', `asset.${resource.Properties.Code?.S3Key?.replace(/\.zip$/, '')}`),
      );
    // Enough configuration for either handler's cold start (nothing is called at import).
    const env = { ...process.env, ...EMULATOR_ENV, ...deployedEnvironment() };

    expect(bundles).toHaveLength(3);
    const sources = bundles.flatMap((bundle) => {
      // A child process: the module runs its cold-start code (config checks, client creation) on import,
      // with source maps on as the functions' NODE_OPTIONS has it.
      const loaded = spawnSync(
        process.execPath,
        [
          '--enable-source-maps',
          '--input-type=module',
          '-e',
          "console.log(typeof (await import('./index.mjs')).handler)",
        ],
        { cwd: bundle, env, encoding: 'utf8' },
      );
      expect(loaded.stdout.trim(), loaded.stderr).toBe('function');
      return (JSON.parse(readFileSync(join(bundle, 'index.mjs.map'), 'utf8')) as { sources: string[] })
        .sources;
    });
    expect(sources.filter((source) => source.includes('node_modules'))).toEqual([]);
    expect(
      sources.filter((source) => /functions\/(poller|dispatcher|consumer)\/handler\.ts$/.test(source)),
    ).toHaveLength(3);
  });
});

describe('npm run ops', () => {
  it('status reports the feed, every queue, the quarantine and the ledger', async () => {
    type Status = {
      feeds: Array<{ feedId: string; cursor: Record<string, unknown>; leaseLive: boolean }>;
      queues: Array<{
        name: string;
        role: string;
        visible: number;
        oldestAgeSeconds?: number;
        ageNote: string;
      }>;
      ledger: Array<{ vendorId: string; count: number }>;
    };
    const report = await opsJson<Status>('status');
    const table = await ops('status');

    expect(report.feeds.map((feed) => feed.feedId)).toEqual([FEED]);
    expect(report.feeds[0]?.cursor.revision).toBe((await cursorItem()).revision);
    expect(report.feeds[0]?.leaseLive).toBe(false);
    expect(report.queues.map((queue) => `${queue.name}/${queue.role}`)).toEqual([
      'orders/queue',
      'orders/dead-letter',
      'billing/queue',
      'billing/dead-letter',
    ]);
    // Nobody reads the billing queue locally: it holds every version the poller published.
    expect(report.queues.find((queue) => queue.name === 'billing' && queue.role === 'queue')?.visible).toBe(
      sim.expected().distinctVersions,
    );
    expect(report.queues.every((queue) => queue.oldestAgeSeconds === undefined && queue.ageNote !== '')).toBe(
      true,
    );
    expect(report.ledger).toEqual(
      JSON.parse(stringifyJsonExact(await readSalesLedger(aws.dynamo, output('OrdersTableName')))),
    );
    expect(report.ledger.reduce((sum, total) => sum + total.count, 0)).toBe(
      sim.expected().sales.reduce((sum, sale) => sum + sale.count, 0),
    );
    expect(table.code).toBe(0);
    // The local run ended caught up, and the poller recorded that when it gave its lease up.
    expect(report.feeds[0]?.cursor.lastRunOutcome).toBe('caught-up');
    expect(table.stdout).toMatch(/caught-up at \d{4}-\d\d-\d\dT/);
  });

  it('reset-cursor plans without --yes, refuses under a live lease, and with --yes clears the cursor and bumps the revision', async () => {
    const before = await cursorItem();
    expect(before.pageId).toBeDefined();

    const planned = await ops('reset-cursor');
    expect(planned.code).toBe(0);
    expect(planned.stdout).toContain('add --yes');
    expect(await cursorItem()).toEqual(before);

    await setCursor({ leaseOwner: 'run-in-progress', leaseExpiresAt: Date.now() + 60_000 });
    const refused = await ops('reset-cursor', '--yes');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('leased by run-in-progress');
    expect((await cursorItem()).pageId).toBe(before.pageId);

    const forced = await ops('reset-cursor', '--yes', '--force');
    const after = await cursorItem();
    expect(forced.code, forced.stderr).toBe(0);
    expect(after.pageId).toBeUndefined();
    expect(after.highWaterMark).toBeUndefined();
    expect(after.revision).toBe((before.revision as number) + 1);
  });

  it('replay sets the cursor to the page, clear-auth-backoff removes the backoff, each bumping the revision', async () => {
    await setCursor({ leaseExpiresAt: 0, authFailures: 3, authRetryNotBefore: Date.now() + 3_600_000 });
    const before = await cursorItem();

    const replayed = await ops('replay', '--from-page', 'page-token-123', '--yes');
    const afterReplay = await cursorItem();
    const cleared = await ops('clear-auth-backoff', '--feed', FEED, '--yes');
    const after = await cursorItem();

    expect(replayed.code, replayed.stderr).toBe(0);
    expect(afterReplay.pageId).toBe('page-token-123');
    expect(afterReplay.revision).toBe((before.revision as number) + 1);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(after.authFailures).toBeUndefined();
    expect(after.authRetryNotBefore).toBeUndefined();
    expect(after.revision).toBe((before.revision as number) + 2);
  });

  it('redrive moves every dead-lettered message back to its source queue with its attributes, losing none', async () => {
    const dlq = output('OrdersDeadLetterQueueUrl');
    const queue = output('OrdersQueueUrl');
    await takeAll(queue);
    const bodies = Array.from({ length: 23 }, (_, index) => `{"poison":${index}}`);
    for (let start = 0; start < bodies.length; start += 10) {
      await aws.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: dlq,
          Entries: bodies.slice(start, start + 10).map((body, index) => ({
            Id: String(index),
            MessageBody: body,
            MessageAttributes: {
              correlationId: { DataType: 'String', StringValue: `poll:test:${start + index}` },
            },
          })),
        }),
      );
    }

    const ran = await ops('redrive', '--queue', 'orders', '--yes');
    const moved = await takeAll(queue);

    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toContain('redrive orders: 23 of ~23 moved');
    expect(moved.map((message) => message.Body).sort()).toEqual([...bodies].sort());
    expect(
      moved.every((message) =>
        message.MessageAttributes?.correlationId?.StringValue?.startsWith('poll:test:'),
      ),
    ).toBe(true);
    expect(await takeAll(dlq)).toEqual([]);
  });

  it('backfill sends the latest stored version of every order to the subscriber, stopping at Ctrl-C (exit 130) and resuming', async () => {
    const billing = output('DownstreamQueueUrlBilling');
    await takeAll(billing);
    // Order id → stored version, both as exact text.
    const stored = new Map(
      [...(await scanOrders(aws, output('OrdersTableName')))].map(([id, item]) => [
        String(id),
        String(item.version),
      ]),
    );

    // A real `ops backfill` process at 5 messages/s, sent SIGINT when it reports its first batch: it stops at
    // the next batch boundary, leaving its checkpoint.
    const args = [
      'backfill',
      '--subscriber',
      'billing',
      '--rate',
      '5',
      '--yes',
      '--aws-endpoint',
      moto.endpoint,
    ];
    const backfill = startCli(args, {}, 'tools/ops/cli.ts');
    await backfill.waitForLine(/backfill billing: \d+ of/);
    backfill.kill('SIGINT');
    const interrupted = await backfill.exited;
    const afterInterrupt = await cursorItem(checkpointKey('billing'));
    const resumed = await ops('backfill', '--subscriber', 'billing', '--rate', '1000', '--yes');
    const messages = (await takeAll(billing)).map((message) => parseOrderVersionMessage(message.Body ?? ''));

    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(interrupted.stdout).toContain('stopped (interrupt)');
    expect(afterInterrupt).toMatchObject({ status: 'running' });
    expect(afterInterrupt.sent).toBeGreaterThan(0);
    expect(afterInterrupt.sent).toBeLessThan(stored.size);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('resumed');
    expect(resumed.stdout).toContain('finished');
    expect(messages).toHaveLength(stored.size);
    expect(
      new Map(messages.map((message) => [String(message.order.id), String(message.order.version)])),
    ).toEqual(stored);
    // Each message's origin and correlation id (backfill:<runId>): test/unit/ops/backfill.test.ts.
    expect((await cursorItem(checkpointKey('billing'))).status).toBe('done');
    // The checkpoint's key is not a feed: status still shows the one feed.
    expect((await opsJson<{ feeds: unknown[] }>('status')).feeds).toHaveLength(1);
  });

  it('budget shows the token’s hold; budget release plans without --yes, ends the hold with --yes, refuses an unknown token', async () => {
    const token = deployment.tokenParameterName;
    // The local run left the token's budget (no 429: not limited); a 429's hold as the poller writes it.
    const holdUntil = Date.now() + 4 * 60_000;
    await aws.dynamo.send(
      new UpdateItemCommand({
        TableName: output('CursorTableName'),
        Key: marshall({ feedId: `budget#${token}` }),
        UpdateExpression: 'SET holdUntil = :until, nextSlotAt = :until, rate = :rate, intervalMs = :interval',
        ConditionExpression: 'attribute_exists(feedId)',
        ExpressionAttributeValues: marshall({ ':until': holdUntil, ':rate': 2.1, ':interval': 476.19 }),
      }),
    );
    const budgetItem = async () => Object.keys(await cursorItem(`budget#${token}`)).length > 0;

    const listed = await ops('budget');
    const json = await opsJson<Array<{ tokenParameter: string; holdUntil: number; rate: number }>>('budget');
    const planned = await ops('budget', 'release', '--token-parameter', token);
    const keptAfterPlan = await budgetItem();
    const released = await ops('budget', 'release', '--token-parameter', token, '--yes');
    const unknown = await ops('budget', 'release', '--token-parameter', '/no/such/token', '--yes');

    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`${token}\\s+2\\.1/s\\s+held until ${new Date(holdUntil).toISOString()}`),
    );
    expect(json).toMatchObject([{ tokenParameter: token, holdUntil, rate: 2.1 }]);
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toContain(`release the request budget of token parameter ${token}:`);
    expect(planned.stdout).toContain('add --yes');
    expect(keptAfterPlan).toBe(true);
    expect(released.code, released.stderr).toBe(0);
    expect(released.stdout).toContain('Done: the budget is released.');
    expect(await budgetItem()).toBe(false);
    expect((await ops('budget')).stdout).toContain('No request budget yet');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('token parameter /no/such/token has no request budget');
  });

  it('quarantine list shows the reasons; retry publishes a record that now passes to every queue, once', async () => {
    const bucket = output('QuarantineBucketName');
    const valid = sampleOrder({ id: 990_001, version: 4 });
    const nowValid = {
      feedId: FEED,
      pageId: 'page-7',
      reason: 'rejected by an older parser',
      issues: [],
      orderId: 990_001,
      version: 4,
      raw: valid,
      quarantinedAt: '2026-01-01T00:00:00.000Z',
    };
    const stillInvalid = {
      ...nowValid,
      orderId: 990_002,
      raw: { id: 990_002, version: 1 },
      reason: 'missing fields',
    };
    for (const record of [nowValid, stillInvalid]) {
      await aws.s3.send(
        new PutObjectCommand({ Bucket: bucket, Key: quarantineKey(record), Body: JSON.stringify(record) }),
      );
    }
    await takeAll(output('OrdersQueueUrl'));
    await takeAll(output('DownstreamQueueUrlBilling'));

    const listed = await ops('quarantine', 'list');
    const retried = await ops('quarantine', 'retry', '--yes');
    const ordersQueue = await takeAll(output('OrdersQueueUrl'));
    const billingQueue = await takeAll(output('DownstreamQueueUrlBilling'));
    const again = await opsJson<{ published: string[] }>('quarantine', 'retry', '--yes');
    const { Contents = [] } = await aws.s3.send(new ListObjectsV2Command({ Bucket: bucket }));

    // Read from the bucket (what is printed, and each message's source: test/unit/ops/formatting.test.ts).
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('rejected by an older parser');
    expect(retried.code, retried.stderr).toBe(0);
    for (const messages of [ordersQueue, billingQueue]) {
      expect(messages.map((message) => parseOrderVersionMessage(message.Body ?? '').order.id)).toEqual([
        990_001,
      ]);
    }
    expect(again.published).toEqual([]);
    const keys = Contents.map((object) => object.Key);
    expect(keys).toContain(quarantineKey(stillInvalid));
    expect(keys).not.toContain(quarantineKey(nowValid));
    expect(keys).toContain(`retried/${quarantineKey(nowValid).slice('quarantine/'.length)}`);
  });

  // Last: it adds a second feed, which the commands above would then ask --feed for.
  it('feeds add writes a row into the deployed cursor table beside the feed the stack polls; list, show and status see both', async () => {
    const token = deployment.tokenParameterName;

    const added = await opsJson<{ applied: boolean; dispatch: string }>(
      ...['feeds', 'add', 'eu', '--token-parameter', token, '--vendor-ids', 'vendor-1'],
    );
    const listed = await opsJson<Array<{ feedId: string; registered: boolean; state: string }>>(
      'feeds',
      'list',
    );
    const shown = await ops('feeds', 'show', FEED);
    const status = await opsJson<{ fleet: Record<string, number> }>('status');

    // The dispatcher is asked for a dispatch at once (what that leads to: test/integration/ops-feeds.test.ts).
    expect(added).toEqual(expect.objectContaining({ applied: true, dispatch: 'requested' }));
    expect(await cursorItem('eu')).toMatchObject({
      feedState: 'enabled',
      config: { vendorIds: ['vendor-1'] },
    });
    expect(listed.map((feed) => [feed.feedId, feed.registered, feed.state])).toEqual([
      ['eu', true, 'enabled'],
      [FEED, true, 'enabled'],
    ]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/last run\s+caught-up at /);
    // The stack's feed became a registry row at the dispatcher's first run: nothing counts as unregistered.
    expect(status.fleet).toMatchObject({ feeds: 2, enabled: 2, unregistered: 0 });
  });
});
