import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { ContinuationEvent } from '../ingest/continuation.js';
import type { Continuation } from '../ingest/ports.js';

/** In its own module: only the poller loads the Lambda client. */
export const createLambdaClient = (): LambdaClient => new LambdaClient({ maxAttempts: 3 });

export class LambdaContinuation implements Continuation {
  constructor(private readonly client: LambdaClient) {}

  /** `functionArn`: from the invocation context, so a version or alias is kept. */
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
