// Self-continuation on AWS: the poller invokes its own function asynchronously (InvocationType Event), so
// the next run starts as soon as this one has released the feed's lease. Lambda queues the event and
// answers 202 at once; the new run takes only the lease this run handed over to its chain step, so at most
// one chain per feed runs even if the schedule fires at the same moment. The SDK retries Invoke (maxAttempts 3)
// and Lambda may deliver an async event more than once and retries it after a function error
// (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html): a duplicate finds the step taken and
// does nothing (DynamoCursorStore.acquire).
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
