// Self-continuation on AWS: the poller invokes its own function asynchronously (InvocationType Event); Lambda
// queues the event and answers 202 at once. Duplicates (SDK retries, Lambda's at-least-once delivery) find
// their chain step taken and do nothing (continuation.ts).
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { ContinuationEvent } from '../ingest/continuation.js';
import type { Continuation } from '../ingest/ports.js';

/** The poller's Lambda client, created once per container (in its own module: only the poller loads it). */
export const createLambdaClient = (): LambdaClient => new LambdaClient({ maxAttempts: 3 });

export class LambdaContinuation implements Continuation {
  constructor(private readonly client: LambdaClient) {}

  /** `functionArn`: the poller's own, from the invocation context (so a version or alias is kept). */
  async request(event: ContinuationEvent, functionArn: string): Promise<void> {
    const { StatusCode } = await this.client.send(
      new InvokeCommand({
        FunctionName: functionArn,
        InvocationType: 'Event',
        Payload: Buffer.from(JSON.stringify(event)),
      }),
    );
    if (StatusCode !== 202)
      throw new Error(`continuation invoke answered ${StatusCode ?? 'no status'}, expected 202`);
  }
}
