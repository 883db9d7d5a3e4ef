// history: what happened to one order. The order history table (partition key orderId, sort key version,
// one item per stored version: the orders table's attributes plus fetchedAt, storedAt, feedId,
// correlationId, expiresAt and arrivedAfterVersion) read with a Query in ascending version, each version
// shown with what changed from the version before it. The change summary is a pure function over two
// orders (orderChanges), unit-tested on the simulator's scenarios.
import { type AttributeValue, paginateQuery } from '@aws-sdk/client-dynamodb';
import { unmarshallExact } from '../../functions/core/adapters/exact-item.js';
import { type Int64, int64FromText } from '../../functions/core/model/int64.js';
import type { MonetaryAmount, Order, OrderItem } from '../../functions/core/model/types.js';
import type { AwsAt } from '../aws.js';
import { orderOfStoredItem } from '../store/stored-order.js';
import { renderTable } from './format.js';

export type ChangeKind =
  | 'status'
  | 'timestamp'
  | 'line-added'
  | 'line-removed'
  | 'fulfilled'
  | 'substitution'
  | 'adjustment'
  | 'fee'
  | 'total';

export interface OrderChange {
  kind: ChangeKind;
  text: string;
}

const TIMESTAMPS = ['acceptedAt', 'cancelledAt', 'dispatchedAt', 'deliveredAt', 'returnedAt'] as const;

const money = (value: MonetaryAmount | undefined): string =>
  value === undefined ? 'none' : `${value.amount} ${value.currency}`;
const sameMoney = (a: MonetaryAmount | undefined, b: MonetaryAmount | undefined): boolean =>
  a?.amount === b?.amount && a?.currency === b?.currency;
const line = (item: OrderItem | undefined, id: string): string =>
  item === undefined ? id : `${id} "${item.name}"`;

/**
 * What changed from `before` to `after` (two versions of one order), in reading order: status moves and
 * timestamps newly set; lines added and removed; quantityFulfilled changes; substitutions (original ->
 * substitute); adjustments with the items they adjust; fee and total changes.
 */
export function orderChanges(before: Order, after: Order): OrderChange[] {
  const changes: OrderChange[] = [];
  const add = (kind: ChangeKind, text: string) => changes.push({ kind, text });
  if (before.status !== after.status) add('status', `status ${before.status} -> ${after.status}`);
  for (const field of TIMESTAMPS) {
    const value = after[field];
    if (value !== undefined && before[field] !== value) {
      add('timestamp', `${field} ${before[field] === undefined ? 'set' : `${before[field]} ->`} ${value}`);
    }
  }
  const beforeItems = new Map(before.items.map((item) => [item.id, item]));
  const afterItems = new Map(after.items.map((item) => [item.id, item]));
  const anyItem = (id: string) => afterItems.get(id) ?? beforeItems.get(id);
  for (const item of after.items) {
    const old = beforeItems.get(item.id);
    if (old === undefined) {
      add(
        'line-added',
        `+ ${line(item, item.id)} ${item.type} x${item.quantityOrdered} (fulfilled ${item.quantityFulfilled}) total ${money(item.total)}`,
      );
    } else if (old.quantityFulfilled !== item.quantityFulfilled) {
      add(
        'fulfilled',
        `${line(item, item.id)} fulfilled ${old.quantityFulfilled} -> ${item.quantityFulfilled}`,
      );
    }
  }
  for (const item of before.items) {
    if (!afterItems.has(item.id)) add('line-removed', `- ${line(item, item.id)} ${item.type}`);
  }
  // A substitution is linked from both sides (substitutedFor on the substitute, substitutedBy on the
  // original); either side alone is enough, and each pair is told once.
  const pairsOf = (order: Order) => {
    const pairs = new Set<string>();
    for (const item of order.items) {
      for (const original of item.substitutionDetails?.substitutedFor ?? [])
        pairs.add(`${original}\u0000${item.id}`);
      for (const substitute of item.substitutionDetails?.substitutedBy ?? [])
        pairs.add(`${item.id}\u0000${substitute}`);
    }
    return pairs;
  };
  const hadPairs = pairsOf(before);
  for (const pair of pairsOf(after)) {
    if (hadPairs.has(pair)) continue;
    const [original = '', substitute = ''] = pair.split('\u0000');
    add(
      'substitution',
      `substitution ${line(anyItem(original), original)} -> ${line(anyItem(substitute), substitute)}`,
    );
  }
  for (const item of after.items) {
    const adjusted = item.priceAdjustmentDetails?.itemsAdjusted ?? [];
    const hadAdjusted = beforeItems.get(item.id)?.priceAdjustmentDetails?.itemsAdjusted ?? [];
    if (adjusted.length > 0 && adjusted.join('\u0000') !== hadAdjusted.join('\u0000')) {
      add(
        'adjustment',
        `adjustment ${line(item, item.id)} ${money(item.total)} on ${adjusted.map((id) => line(anyItem(id), id)).join(', ')}`,
      );
    }
  }
  for (const fee of ['deliveryFee', 'serviceFee'] as const) {
    if (!sameMoney(before[fee], after[fee]))
      add('fee', `${fee} ${money(before[fee])} -> ${money(after[fee])}`);
  }
  if (!sameMoney(before.total, after.total))
    add('total', `total ${money(before.total)} -> ${money(after.total)}`);
  return changes;
}

/** One stored version read back from its history item. */
export interface HistoryEntry {
  order: Order;
  fetchedAt: string | undefined;
  storedAt: string | undefined;
  feedId: string | undefined;
  correlationId: string | undefined;
  /** The higher version already stored when this one arrived, if one was. */
  arrivedAfterVersion: Int64 | undefined;
}

export function historyEntryOf(raw: Record<string, AttributeValue>): HistoryEntry {
  const item = unmarshallExact(raw);
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const after = item.arrivedAfterVersion;
  return {
    order: orderOfStoredItem(raw).order,
    fetchedAt: text(item.fetchedAt),
    storedAt: text(item.storedAt),
    feedId: text(item.feedId),
    correlationId: text(item.correlationId),
    arrivedAfterVersion: typeof after === 'number' || typeof after === 'bigint' ? after : undefined,
  };
}

export interface HistoryVersion {
  version: Int64;
  fetchedAt: string | undefined;
  storedAt: string | undefined;
  feedId: string | undefined;
  status: Order['status'];
  total: MonetaryAmount;
  /** Arrived after a higher version of the order had been stored. */
  outOfOrder: boolean;
  arrivedAfterVersion: Int64 | undefined;
  /** Versions missing between the version before and this one (none stored), first and last. */
  gapBefore: { from: Int64; to: Int64 } | undefined;
  /** From the version before (empty for the first version stored). */
  changes: OrderChange[];
}

export interface OrderHistory {
  orderId: string;
  versions: HistoryVersion[];
}

const big = (value: Int64): bigint => BigInt(value);

/** The history of one order from its entries (any order; sorted here by exact version). */
export function buildHistory(orderId: string, entries: readonly HistoryEntry[]): OrderHistory {
  const sorted = [...entries].sort((a, b) => {
    const diff = big(a.order.version) - big(b.order.version);
    return diff < 0n ? -1 : diff > 0n ? 1 : 0;
  });
  const versions = sorted.map((entry, index): HistoryVersion => {
    const previous = sorted[index - 1]?.order;
    const version = entry.order.version;
    const gap = previous === undefined ? 0n : big(version) - big(previous.version) - 1n;
    return {
      version,
      fetchedAt: entry.fetchedAt,
      storedAt: entry.storedAt,
      feedId: entry.feedId,
      status: entry.order.status,
      total: entry.order.total,
      outOfOrder: entry.arrivedAfterVersion !== undefined,
      arrivedAfterVersion: entry.arrivedAfterVersion,
      gapBefore:
        previous === undefined || gap <= 0n
          ? undefined
          : {
              from: int64FromText(String(big(previous.version) + 1n)),
              to: int64FromText(String(big(version) - 1n)),
            },
      changes: previous === undefined ? [] : orderChanges(previous, entry.order),
    };
  });
  return { orderId, versions };
}

export function renderHistory(history: OrderHistory): string {
  const rows = history.versions.map((entry) => [
    String(entry.version),
    entry.fetchedAt ?? '-',
    entry.status,
    money(entry.total),
    entry.outOfOrder ? `out of order (after v${entry.arrivedAfterVersion})` : '',
  ]);
  const lines = [
    `order ${history.orderId}: ${history.versions.length} stored version(s)`,
    '',
    renderTable(['VERSION', 'FETCHED AT', 'STATUS', 'TOTAL', 'NOTE'], rows),
  ];
  for (const entry of history.versions) {
    lines.push('', `v${entry.version}${entry.outOfOrder ? ' (arrived out of order)' : ''}:`);
    if (entry.gapBefore !== undefined) {
      const { from, to } = entry.gapBefore;
      lines.push(`  gap: no version ${from === to ? `${from}` : `${from} to ${to}`} stored`);
    }
    if (entry === history.versions[0]) lines.push('  first stored version');
    else if (entry.changes.length === 0) lines.push('  no change in status, lines, fees or total');
    for (const change of entry.changes) lines.push(`  ${change.text}`);
  }
  return lines.join('\n');
}

/** Reads every stored version of one order, in ascending version. */
export type HistoryReader = (orderId: string) => Promise<Array<Record<string, AttributeValue>>>;

export function awsHistoryReader(aws: AwsAt, historyTable: string): HistoryReader {
  return async (orderId) => {
    const items: Array<Record<string, AttributeValue>> = [];
    const pages = paginateQuery(
      { client: aws.dynamo },
      {
        TableName: historyTable,
        KeyConditionExpression: 'orderId = :id',
        ExpressionAttributeValues: { ':id': { N: orderId } },
        ScanIndexForward: true,
        ConsistentRead: true,
      },
    );
    for await (const page of pages) items.push(...(page.Items ?? []));
    return items;
  };
}
