// Handlers as a Lambda cold start builds them, for the integration tests.
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { vi } from 'vitest';
import type { PollResult } from '../../functions/poller/handler.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';

export interface Handlers {
  poll(): Promise<PollResult>;
  consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse>;
}

/**
 * Imports fresh copies of both handler modules with `env` in place, as a Lambda cold start would:
 * each module reads and checks its configuration at import time.
 */
export async function coldStart(env: Record<string, string>, pollerTimeoutMs = 60_000): Promise<Handlers> {
  Object.assign(process.env, env);
  vi.resetModules();
  const poller = await import('../../functions/poller/handler.js');
  const consumer = await import('../../functions/consumer/handler.js');
  return {
    poll: () => poller.handler({}, lambdaContext('poller', pollerTimeoutMs)),
    consume: (event, context) => consumer.handler(event, context),
  };
}
