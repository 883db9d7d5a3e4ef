// Self-continuation on AWS: the poller invokes its own function asynchronously (InvocationType Event), so
// the next run starts as soon as this one has released the feed's lease. Lambda queues the event and
// answers 202 at once; the new run takes the lease like any run, so at most one run per feed holds the
// cursor even if the schedule fires at the same moment.
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { ContinuationEvent } from '../ingest/continuation.js';
import type { Continuation } from '../ingest/ports.js';

/** The poller's Lambda client, created once per container (in its own module: only the poller loads it). */
export const createLambdaClient = (): LambdaClient => new LambdaClient({ maxAttempts: 3 });

export class LambdaContinuation implements Continuation {
  constructor(private readonly client: LambdaClient) {}

  /** `functionArn`: the poller's own, from the invocation context (so a version or alias is kept). */
  async request(event: ContinuationEvent, functionArn: string): Promise<void> {
    const output = await this.client.send(
      new InvokeCommand({
        FunctionName: functionArn,
        InvocationType: 'Event',
        Payload: Buffer.from(JSON.stringify(event)),
      }),
    );
    if (output.StatusCode !== 202) {
      throw new Error(`continuation invoke answered ${output.StatusCode ?? 'no status'}, expected 202`);
    }
  }
}
