// The functions' asynchronous invokes of each other (in their own module: only the dispatcher and the poller
// load the Lambda client): the dispatcher starts the poller with a batch, the poller asks the dispatcher for
// the next dispatch. And the account's concurrency, which bounds the pollers the dispatcher starts.
import { GetAccountSettingsCommand, InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';

export const createLambdaClient = (): LambdaClient => new LambdaClient({ maxAttempts: 3 });

/** `InvocationType: Event`: Lambda queues the event and answers 202; the target runs on its own. */
export async function invokeAsync(client: LambdaClient, functionName: string, event: unknown): Promise<void> {
  const { StatusCode } = await client.send(
    new InvokeCommand({
      FunctionName: functionName,
      InvocationType: 'Event',
      Payload: Buffer.from(JSON.stringify(event)),
    }),
  );
  if (StatusCode !== 202)
    throw new Error(
      `asynchronous invoke of ${functionName} answered ${StatusCode ?? 'no status'}, expected 202`,
    );
}

/** Concurrent executions the account leaves unreserved (GetAccountSettings), or undefined when unknown. */
export async function unreservedConcurrency(client: LambdaClient): Promise<number | undefined> {
  const { AccountLimit } = await client.send(new GetAccountSettingsCommand({}));
  return AccountLimit?.UnreservedConcurrentExecutions;
}
