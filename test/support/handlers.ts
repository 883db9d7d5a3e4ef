// The real handlers for the integration tests, built by their factories from the environment the stack would
// give the functions and the emulator's clients; and the emulator those tests share.
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import type { FeedRunResult, PollerOverrides } from '../../functions/poller/build-poller.js';
import {
  type AwsClients,
  createPipelineResources,
  type PipelineResources,
  useEmulator,
} from '../../tools/harness/pipeline.js';
import { singleFeedPoller } from '../../tools/harness/single-feed.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { type RunningMoto, workerMoto } from './moto.js';

export interface Handlers {
  /** One run of the environment's feed: the poller on a batch of that feed (its row written first). */
  poll(): Promise<FeedRunResult>;
  consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse>;
}

/**
 * Both handlers for `env` (the deployment's variables with a feed's: FEED_ID, PARTNER_TOKEN_PARAMETER, …, which
 * become its registry row), talking to the emulator through `aws`; the poller runs with `pollerTimeoutMs`.
 */
export function handlersFor(
  aws: AwsClients,
  env: Record<string, string>,
  options: { pollerTimeoutMs?: number; poller?: PollerOverrides } = {},
): Handlers {
  const poller = singleFeedPoller(aws, env, {
    ...createObservability('order-feed-poller', env),
    ...options.poller,
  });
  const consumer = buildConsumer(
    aws,
    loadConsumerConfig(env),
    createObservability('order-feed-consumer', env),
  );
  return {
    poll: () => poller.poll(lambdaContext('poller', options.pollerTimeoutMs ?? 60_000)),
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
    state.moto = await workerMoto();
    state.aws = useEmulator(state.moto);
  });
  afterAll(async () => state.moto?.stop());
  beforeEach(async () => {
    await state.moto.reset();
    state.resources = await createPipelineResources(state.aws, options);
  });
  return state;
}
