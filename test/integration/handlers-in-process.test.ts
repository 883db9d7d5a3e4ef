// The handlers are built by factories, so one process can run several pipelines side by side (local mode,
// tests and benchmarks rely on it), and the Lambda entry modules (handler.ts) still wire the real thing
// from their environment at import, as a cold start does.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type AwsClients,
  createPipelineResources,
  drainQueue,
  pipelineEnv,
  scanOrders,
  TEST_TOKEN,
} from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { EMULATOR_ENV } from '../../tools/local/moto.js';
import { type RunningSimulator, SCENARIO_EXPECTATIONS, startSimulator } from '../../tools/simulator/index.js';
import { handlersFor } from '../support/handlers.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { readLedger } from '../support/pipeline.js';

const motos: RunningMoto[] = [];
let sim: RunningSimulator;

function clientsFor(moto: RunningMoto): AwsClients {
  const config = { endpoint: moto.endpoint, region: EMULATOR_ENV.AWS_REGION };
  return {
    dynamo: new DynamoDBClient(config),
    sqs: new SQSClient({ ...config, useQueueUrlAsEndpoint: false }),
    s3: new S3Client({ ...config, forcePathStyle: true }),
    ssm: new SSMClient(config),
  };
}

beforeAll(async () => {
  Object.assign(process.env, EMULATOR_ENV);
  motos.push(await startMoto(), await startMoto());
  sim = await startSimulator({ token: TEST_TOKEN });
});
afterAll(async () => {
  await sim?.close();
  for (const moto of motos) await moto.stop();
});

describe('handlers built by their factories', () => {
  it('run two pipelines in one process, each against its own partner scenario and AWS, without mixing them', async () => {
    const scenarios = ['test-versioning', 'test-multi-location'] as const;
    const pipelines = await Promise.all(
      motos.map(async (moto, index) => {
        const aws = clientsFor(moto);
        const resources = await createPipelineResources(aws);
        const scenario = scenarios[index] as (typeof scenarios)[number];
        const handlers = handlersFor(aws, pipelineEnv(resources, `${sim.url}/${scenario}`));
        return { aws, resources, scenario, handlers };
      }),
    );

    // Interleaved: every run of one pipeline, then of the other, as many runs as the longer scenario needs.
    const runs = Math.max(...scenarios.map((scenario) => SCENARIO_EXPECTATIONS[scenario].polls)) + 1;
    for (let run = 0; run < runs; run++) {
      for (const { aws, resources, handlers } of pipelines) {
        await handlers.poll();
        await drainQueue(aws, resources.ordersQueueUrl, handlers);
      }
    }

    for (const { aws, resources, scenario } of pipelines) {
      const orders = [...(await scanOrders(aws, resources.ordersTable)).values()]
        .map((item) => ({ id: item.id, version: item.version, status: item.status }))
        .sort((a, b) => Number(a.id) - Number(b.id));
      const expected = SCENARIO_EXPECTATIONS[scenario];
      expect(orders).toEqual(
        expected.orders.map((order) => ({ id: order.id, version: order.version, status: order.status })),
      );
      expect(await readLedger(aws, resources.ordersTable)).toEqual(expected.sales);
    }
  });

  it('are what the Lambda entry modules wire from their environment at cold start', async () => {
    const moto = motos[0] as RunningMoto;
    await moto.reset();
    const aws = clientsFor(moto);
    const resources = await createPipelineResources(aws);
    Object.assign(process.env, pipelineEnv(resources, `${sim.url}/test-delivery`), {
      AWS_ENDPOINT_URL: moto.endpoint,
    });
    vi.resetModules();
    const poller = await import('../../functions/poller/handler.js');
    const consumer = await import('../../functions/consumer/handler.js');

    const outcome = await poller.handler({}, lambdaContext('poller', 60_000));
    await drainQueue(aws, resources.ordersQueueUrl, { consume: consumer.handler });

    expect(outcome.kind).toBe('caught-up');
    const stored = await scanOrders(aws, resources.ordersTable);
    expect(stored.size).toBe(SCENARIO_EXPECTATIONS['test-delivery'].orders.length);
  });
});
