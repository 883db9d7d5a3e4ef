// The cursor table alone, keyed as the stack keys it: for the tests of what lives on it (cursors, leases, the
// request budget, the feed registry) without the rest of the pipeline's resources.
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CURSOR_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';

export async function createCursorTable(dynamo: DynamoDBClient, tableName: string): Promise<void> {
  const { name, type } = CURSOR_TABLE_SCHEMA.partitionKey;
  await dynamo.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: name, AttributeType: type }],
      KeySchema: [{ AttributeName: name, KeyType: 'HASH' }],
    }),
  );
}
