// The downstream module's applyIfNewer against emulated DynamoDB (moto over HTTP): only a newer version is
// written, a redelivery is a no-op, int64 versions compare exactly, and concurrent writers end with the highest.
import { CreateTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  applyIfNewer,
  type OrderVersionMessage,
  parseOrderVersionMessage,
} from 'order-feed-ingester/contract';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import { buildOrderVersionMessage } from '../../functions/core/contract/order-version-message.js';
import type { Int64 } from '../../functions/core/model/int64.js';
import { EMULATOR_ENV } from '../../tools/local/moto.js';
import { sampleOrder, toOrder } from '../fixtures/orders.js';
import { messageSource } from '../support/message-source.js';
import { type RunningMoto, workerMoto } from '../support/moto.js';

let moto: RunningMoto;
let client: DynamoDBClient;
const TABLE = 'downstream-orders';

beforeAll(async () => {
  moto = await workerMoto();
  Object.assign(process.env, EMULATOR_ENV);
  client = new DynamoDBClient({ endpoint: moto.endpoint });
});
afterAll(async () => {
  client?.destroy();
  await moto?.stop();
});
beforeEach(async () => {
  await moto.reset();
  for (const [name, key] of [
    [TABLE, 'orderId'],
    ['keyed-by-pk', 'pk'],
  ] as const) {
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: key, AttributeType: 'N' }],
        KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      }),
    );
  }
});

/** A message as a downstream service receives it: built by the poller's code, read by the module. */
function message(
  id: Int64,
  version: Int64,
  status = 'accepted',
  correlationId = 'poll:req-1:1',
): OrderVersionMessage {
  const order = { ...toOrder(sampleOrder({ id: 1, status })), id, version };
  return parseOrderVersionMessage(buildOrderVersionMessage(order, messageSource({ correlationId })).body);
}

async function stored(id: Int64, table = TABLE, key = 'orderId') {
  const output = await client.send(
    new GetItemCommand({ TableName: table, Key: { [key]: { N: String(id) } }, ConsistentRead: true }),
  );
  return output.Item ? unmarshallExact(output.Item) : undefined;
}

const apply = (m: OrderVersionMessage) => applyIfNewer({ client, tableName: TABLE, message: m });

describe('applyIfNewer', () => {
  it('stores the first version, ignores a redelivery and a lower version, and takes a higher one', async () => {
    expect(await apply(message(7, 3, 'placed', 'poll:req-1:1'))).toEqual({ outcome: 'applied' });
    expect(await apply(message(7, 3, 'placed', 'poll:req-2:1'))).toEqual({
      outcome: 'stale',
      storedVersion: 3,
    });
    expect(await apply(message(7, 2, 'placed'))).toEqual({ outcome: 'stale', storedVersion: 3 });
    expect(await stored(7)).toMatchObject({ orderId: 7, version: 3, correlationId: 'poll:req-1:1' });

    // The item it replaced comes back (int64 exact): what a caller needs to see what the write changed.
    expect(await apply(message(7, 4, 'cancelled', 'reconcile:r-9'))).toMatchObject({
      outcome: 'applied',
      replaced: { orderId: 7, version: 3, status: 'placed', correlationId: 'poll:req-1:1' },
    });

    expect(await stored(7)).toMatchObject({
      orderId: 7,
      id: 7,
      version: 4,
      status: 'cancelled',
      correlationId: 'reconcile:r-9',
      total: { amount: 3098, currency: 'EUR' },
    });
  });

  it('compares int64 versions exactly: one apart beyond 2^53, under a 2^63 - 1 id', async () => {
    const id = 2n ** 63n - 1n;
    const higher = 2n ** 53n + 2n;
    const lower = 2n ** 53n + 1n; // the same JS number as `higher` once rounded

    expect(await apply(message(id, higher))).toEqual({ outcome: 'applied' });
    expect(await apply(message(id, lower))).toEqual({ outcome: 'stale', storedVersion: higher });
    expect((await stored(id))?.version).toBe(higher);
  });

  it('ends with the highest version when writers race, whatever order they run in', async () => {
    const versions = [5, 1, 9, 3, 7, 2, 8, 4, 6, 9, 1];

    const results = await Promise.all(versions.map((version) => apply(message(11, version))));

    expect((await stored(11))?.version).toBe(9);
    // Version 9 was sent twice: exactly one of them wrote.
    const nines = results.filter((_, index) => versions[index] === 9);
    expect(nines.map((result) => result.outcome).sort()).toEqual(['applied', 'stale']);
  });

  it('uses the table’s own key attribute and a projection of the caller’s choice, always with key and version', async () => {
    await applyIfNewer({
      client,
      tableName: 'keyed-by-pk',
      keyAttribute: 'pk',
      message: message(21, 2),
      // The projection cannot replace the key or the version the guard compares.
      item: (m) => ({ status: m.order.status, total: m.order.total.amount, pk: 'x', version: 'x' }),
    });
    const result = await applyIfNewer({
      client,
      tableName: 'keyed-by-pk',
      keyAttribute: 'pk',
      message: message(21, 1),
    });

    expect(result).toEqual({ outcome: 'stale', storedVersion: 2 });
    expect(await stored(21, 'keyed-by-pk', 'pk')).toEqual({
      pk: 21,
      version: 2,
      status: 'accepted',
      total: 3098,
    });
  });

  it('names the key it needs when the table is keyed otherwise (a string orderId)', async () => {
    await client.send(
      new CreateTableCommand({
        TableName: 'string-keyed',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'orderId', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'orderId', KeyType: 'HASH' }],
      }),
    );
    const error = await applyIfNewer({ client, tableName: 'string-keyed', message: message(1, 1) }).catch(
      (caught: unknown) => caught as Error & { code?: string },
    );
    expect(error).toMatchObject({ name: 'TableKeyError', code: 'ERR_TABLE_KEY' });
    expect((error as Error).message).toMatch(
      /partition key must be a Number attribute "orderId".*keyAttribute/,
    );
  });

  it('throws what is not a version conflict (here: no such table)', async () => {
    await expect(
      applyIfNewer({ client, tableName: 'no-such-table', message: message(1, 1) }),
    ).rejects.toThrow(/ResourceNotFound|non-existent table|not found/i);
  });
});
