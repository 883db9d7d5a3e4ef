// Read-only view of the orders table for reconciliation: stored version and status by id
// (BatchGetItem, 100 keys a call, unprocessed keys retried with backoff) and a sample of ids (Scan).
// Reads are strongly consistent, so a version the consumer has just applied is seen.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  type DynamoDBClient,
  type KeysAndAttributes,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshallExact } from '../../../functions/core/adapters/exact-item.js';
import { ORDERS_TABLE_SCHEMA } from '../../../functions/core/adapters/table-schemas.js';
import { backoffWithFullJitter } from '../../../functions/core/backoff.js';
import { type Int64, int64FromText, isInt64 } from '../../../functions/core/model/int64.js';
import type { StoredOrders, StoredVersion } from './reconcile-orders.js';

const KEY = ORDERS_TABLE_SCHEMA.partitionKey.name;
/** BatchGetItem's limit per call. */
const MAX_KEYS_PER_BATCH = 100;
/** Calls per chunk while DynamoDB keeps answering UnprocessedKeys (throttling); backoff from 50 ms. */
const MAX_BATCH_ATTEMPTS = 8;
const BASE_DELAY_MS = 50;
const MAX_DELAY_MS = 5_000;
/** Segments the table is divided into for sampling. */
const SAMPLE_SEGMENTS = 16;

export class DynamoStoredOrders implements StoredOrders {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async getVersions(ids: readonly Int64[]): Promise<Map<Int64, StoredVersion>> {
    // Canonical int64s (a number when safe, else a bigint) are equal as Set and Map keys exactly when equal.
    const distinct = [...new Set(ids)];
    const found = new Map<Int64, StoredVersion>();
    for (let start = 0; start < distinct.length; start += MAX_KEYS_PER_BATCH) {
      await this.readChunk(distinct.slice(start, start + MAX_KEYS_PER_BATCH), found);
    }
    return found;
  }

  private async readChunk(ids: Int64[], found: Map<Int64, StoredVersion>): Promise<void> {
    let pending: KeysAndAttributes | undefined = {
      Keys: ids.map((id) => ({ [KEY]: { N: String(id) } })),
      // `status` is a DynamoDB reserved word; `version` and `orderId` are not.
      ProjectionExpression: `${KEY}, version, #status`,
      ExpressionAttributeNames: { '#status': 'status' },
      ConsistentRead: true,
    };
    for (let attempt = 1; pending?.Keys?.length; attempt++) {
      if (attempt > MAX_BATCH_ATTEMPTS) {
        throw new Error(
          `${this.tableName}: ${pending.Keys.length} key(s) still unprocessed by BatchGetItem after ${MAX_BATCH_ATTEMPTS} attempts`,
        );
      }
      if (attempt > 1) await sleep(backoffWithFullJitter(attempt - 1, BASE_DELAY_MS, MAX_DELAY_MS));
      const output: BatchGetItemCommandOutput = await this.client.send(
        new BatchGetItemCommand({ RequestItems: { [this.tableName]: pending } }),
      );
      for (const raw of output.Responses?.[this.tableName] ?? []) {
        const item = unmarshallExact(raw);
        const id = item[KEY];
        if (isInt64(id) && isInt64(item.version)) {
          found.set(id, {
            version: item.version,
            status: typeof item.status === 'string' ? item.status : '',
          });
        }
      }
      pending = output.UnprocessedKeys?.[this.tableName];
    }
  }

  /**
   * Up to `limit` ids. Not a uniform random sample: the table's key space is split into
   * `SAMPLE_SEGMENTS` parallel-scan segments, and ids are taken in scan order starting at a random
   * segment (wrapping around), so each run looks at a different stretch of the table at the cost of a
   * plain Scan of `limit` keys. Scan order is the order of the keys' hashes, unrelated to id or age.
   */
  async sampleIds(limit: number): Promise<Int64[]> {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
    const ids: Int64[] = [];
    const first = Math.floor(Math.random() * SAMPLE_SEGMENTS) % SAMPLE_SEGMENTS;
    for (let step = 0; step < SAMPLE_SEGMENTS && ids.length < limit; step++) {
      const segment = (first + step) % SAMPLE_SEGMENTS;
      let startKey: Record<string, AttributeValue> | undefined;
      do {
        const output = await this.client.send(
          new ScanCommand({
            TableName: this.tableName,
            ProjectionExpression: KEY,
            Segment: segment,
            TotalSegments: SAMPLE_SEGMENTS,
            Limit: limit - ids.length,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        );
        // Exact: a 64-bit id beyond 2^53 is a bigint (model/int64.ts), asked for as it is.
        for (const raw of output.Items ?? []) {
          const text = raw[KEY]?.N;
          if (text !== undefined && /^\d+$/.test(text)) ids.push(int64FromText(text));
        }
        startKey = output.LastEvaluatedKey;
      } while (startKey && ids.length < limit);
    }
    return ids.slice(0, limit);
  }
}
