// The real handlers for the integration tests, built by their factories from the environment the stack would
// give the functions and the emulator's clients; and the emulator those tests share.
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import { buildPoller, type PollerOverrides, type PollResult } from '../../functions/poller/build-poller.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import {
  type AwsClients,
  createPipelineResources,
  type PipelineResources,
  useEmulator,
} from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { type RunningMoto, startMoto } from './moto.js';

export interface Handlers {
  poll(event?: unknown): Promise<PollResult>;
  consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse>;
}

/** Both handlers for `env`, talking to the emulator through `aws`; the poller runs with `pollerTimeoutMs`. */
export function handlersFor(
  aws: AwsClients,
  env: Record<string, string>,
  options: { pollerTimeoutMs?: number; poller?: PollerOverrides } = {},
): Handlers {
  const config = loadPollerConfig(env);
  const poller = buildPoller(aws, config, {
    ...createObservability('order-feed-poller', env, config.feedId),
    ...options.poller,
  });
  const consumer = buildConsumer(
    aws,
    loadConsumerConfig(env),
    createObservability('order-feed-consumer', env),
  );
  return {
    poll: (event = {}) => poller(event, lambdaContext('poller', options.pollerTimeoutMs ?? 60_000)),
    consume: (event, context) => consumer(event, context),
  };
}

/**
 * One moto for the test file; before each test it is reset and the pipeline's resources created afresh. The
 * fields are set once the hooks have run.
 */
export function pipelineOnMoto(options: Parameters<typeof createPipelineResources>[1] = {}) {
  const state = {} as {
    moto: RunningMoto;
    aws: ReturnType<typeof useEmulator>;
    resources: PipelineResources;
  };
  beforeAll(async () => {
    state.moto = await startMoto();
    state.aws = useEmulator(state.moto);
  });
  afterAll(async () => state.moto?.stop());
  beforeEach(async () => {
    await state.moto.reset();
    state.resources = await createPipelineResources(state.aws, options);
  });
  return state;
}
