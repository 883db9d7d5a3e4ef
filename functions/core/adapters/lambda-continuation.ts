// Self-continuation on AWS: the poller invokes its own function asynchronously (InvocationType Event), so
// the next run starts as soon as this one has released the feed's lease. Lambda queues the event and
// answers 202 at once; the new run takes the lease like any run, so at most one run per feed holds the
// cursor even if the schedule fires at the same moment.
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { ContinuationEvent } from '../ingest/continuation.js';
import type { Continuation } from '../ingest/ports.js';

export class LambdaContinuation implements Continuation {
  constructor(
    private readonly client: LambdaClient,
    /** The poller's own function (its ARN from the invocation context, so a version or alias is kept). */
    private readonly functionArn: () => string,
  ) {}

  async request(event: ContinuationEvent): Promise<void> {
    const output = await this.client.send(
      new InvokeCommand({
        FunctionName: this.functionArn(),
        InvocationType: 'Event',
        Payload: Buffer.from(JSON.stringify(event)),
      }),
    );
    if (output.StatusCode !== 202) {
      throw new Error(`continuation invoke answered ${output.StatusCode ?? 'no status'}, expected 202`);
    }
  }
}
