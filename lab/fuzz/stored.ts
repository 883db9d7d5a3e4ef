// What a seed left in the emulated AWS, read the same way whichever driver ran it: the history's
// `orderId:version` keys, the messages a queue holds (the dead-letter queue's), and the stream position of a
// feed's stored cursor (the simulator's own cursor format).
import { GetItemCommand, paginateScan } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import type { AwsAt } from '../../tools/aws.js';
import { decodeCursor } from '../../tools/simulator/cursor.js';

export async function historyKeys(aws: Pick<AwsAt, 'dynamo'>, table: string): Promise<Set<string>> {
  const keys = new Set<string>();
  const scan = {
    TableName: table,
    ConsistentRead: true,
    ProjectionExpression: 'orderId, #v',
    ExpressionAttributeNames: { '#v': 'version' },
  };
  for await (const page of paginateScan({ client: aws.dynamo }, scan)) {
    for (const raw of page.Items ?? []) {
      const item = unmarshallExact(raw);
      keys.add(`${String(item.orderId)}:${String(item.version)}`);
    }
  }
  return keys;
}

/** The messages waiting on a queue (each received once, hidden for five minutes). */
export async function countMessages(aws: Pick<AwsAt, 'sqs'>, queueUrl: string): Promise<number> {
  let count = 0;
  for (;;) {
    const { Messages = [] } = await aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 300 }),
    );
    if (Messages.length === 0) return count;
    count += Messages.length;
  }
}

/** The stream position of the feed's stored cursor; 0 without one. */
export async function storedCursorPosition(
  aws: Pick<AwsAt, 'dynamo'>,
  cursorTable: string,
  feedId: string,
): Promise<number> {
  const { Item } = await aws.dynamo.send(
    new GetItemCommand({ TableName: cursorTable, Key: { feedId: { S: feedId } }, ConsistentRead: true }),
  );
  const pageId = Item?.pageId?.S;
  return pageId === undefined ? 0 : (decodeCursor(pageId)?.p ?? 0);
}
