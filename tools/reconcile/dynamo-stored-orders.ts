// Read-only view of the orders table for reconciliation: stored version and status by id
// (BatchGetItem, 100 keys a call, unprocessed keys retried with backoff) and a sample of ids (Scan).
// Reads are strongly consistent, so a version the consumer has just applied is seen.

import {
  type AttributeValue,
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  type DynamoDBClient,
  type KeysAndAttributes,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import { ORDERS_TABLE_SCHEMA } from '../../functions/core/adapters/table-schemas.js';
import { type Int64, int64FromText, isInt64 } from '../../functions/core/model/int64.js';
import type { StoredOrders, StoredVersion } from './reconcile-orders.js';

const KEY = ORDERS_TABLE_SCHEMA.partitionKey.name;
/** BatchGetItem's limit per call. */
const MAX_KEYS_PER_BATCH = 100;

export interface DynamoStoredOrdersOptions {
  /** Calls per chunk while DynamoDB keeps answering UnprocessedKeys (throttling). Default 8. */
  maxBatchAttempts?: number;
  baseDelayMs?: number;
  /** Segments the table is divided into for sampling. Default 16. */
  sampleSegments?: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export class UnprocessedKeysError extends Error {
  readonly code = 'ERR_UNPROCESSED_KEYS';
  constructor(tableName: string, remaining: number, attempts: number) {
    super(`${tableName}: ${remaining} key(s) still unprocessed by BatchGetItem after ${attempts} attempts`);
    this.name = 'UnprocessedKeysError';
  }
}

export class DynamoStoredOrders implements StoredOrders {
  private readonly maxBatchAttempts: number;
  private readonly baseDelayMs: number;
  private readonly sampleSegments: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    options: DynamoStoredOrdersOptions = {},
  ) {
    this.maxBatchAttempts = options.maxBatchAttempts ?? 8;
    this.baseDelayMs = options.baseDelayMs ?? 50;
    this.sampleSegments = options.sampleSegments ?? 16;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

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
      if (attempt > this.maxBatchAttempts) {
        throw new UnprocessedKeysError(this.tableName, pending.Keys.length, this.maxBatchAttempts);
      }
      if (attempt > 1) await this.sleep(this.baseDelayMs * 2 ** (attempt - 2) * (0.5 + this.random() / 2));
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
   * `sampleSegments` parallel-scan segments, and ids are taken in scan order starting at a random
   * segment (wrapping around), so each run looks at a different stretch of the table at the cost of a
   * plain Scan of `limit` keys. Scan order is the order of the keys' hashes, unrelated to id or age.
   */
  async sampleIds(limit: number): Promise<Int64[]> {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
    const ids: Int64[] = [];
    const first = Math.floor(this.random() * this.sampleSegments) % this.sampleSegments;
    for (let step = 0; step < this.sampleSegments && ids.length < limit; step++) {
      const segment = (first + step) % this.sampleSegments;
      let startKey: Record<string, AttributeValue> | undefined;
      do {
        const output = await this.client.send(
          new ScanCommand({
            TableName: this.tableName,
            ProjectionExpression: KEY,
            Segment: segment,
            TotalSegments: this.sampleSegments,
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
