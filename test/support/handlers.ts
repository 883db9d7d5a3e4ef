// The real handlers for the integration tests, built by their factories (tools/harness/handlers.ts) from
// the environment the stack would give the functions and the emulator's clients.
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { PollResult } from '../../functions/poller/create-handler.js';
import { buildConsumerHandler, buildPollerHandler } from '../../tools/harness/handlers.js';
import type { AwsClients } from '../../tools/harness/pipeline.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';

export interface Handlers {
  poll(): Promise<PollResult>;
  consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse>;
}

/** Both handlers for `env`, talking to the emulator through `aws`; the poller runs with `pollerTimeoutMs`. */
export function handlersFor(
  aws: AwsClients,
  env: Record<string, string>,
  pollerTimeoutMs = 60_000,
): Handlers {
  const poller = buildPollerHandler({ env, clients: aws });
  const { consumer } = buildConsumerHandler({ env, clients: aws });
  return {
    poll: () => poller({}, lambdaContext('poller', pollerTimeoutMs)),
    consume: (event, context) => consumer(event, context),
  };
}
