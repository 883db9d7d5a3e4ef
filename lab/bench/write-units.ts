// DynamoDB write units, by the documented rules
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// a write costs ceil(size / 1 KB) units of the larger of the item before and after it; a GSI entry
// written, updated or deleted by it costs ceil(entry size / 1 KB) more (an entry is its projected
// attributes plus the table and index keys plus 100 bytes). Item sizes: functions/core/adapters/dynamo-item-size.ts.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type Item, itemSize, valueSize } from '../../functions/core/adapters/dynamo-item-size.js';

const KB = 1024;

export const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / KB));

export interface IndexShape {
  keyAttributes: readonly string[];
  projected: readonly string[];
}

function indexEntry(item: Item, index: IndexShape): { size: number; content: string } | undefined {
  if (!index.keyAttributes.every((name) => item[name] !== undefined)) return undefined;
  let size = 100;
  const content: Array<[string, AttributeValue]> = [];
  for (const name of new Set([...index.keyAttributes, ...index.projected])) {
    const value = item[name];
    if (value === undefined) continue;
    size += Buffer.byteLength(name, 'utf8') + valueSize(value);
    content.push([name, value]);
  }
  return { size, content: JSON.stringify(content) };
}

/** Write units of one successful PutItem replacing `before` (undefined: a new item) with `after`. */
export function putWriteUnits(
  before: Item | undefined,
  after: Item,
  indexes: readonly IndexShape[],
): { table: number; indexes: number } {
  const table = writeUnits(Math.max(before ? itemSize(before) : 0, itemSize(after)));
  let index = 0;
  for (const shape of indexes) {
    const old = before ? indexEntry(before, shape) : undefined;
    const next = indexEntry(after, shape);
    // An entry whose keys and projected attributes are unchanged is not rewritten.
    if (old?.content === next?.content) continue;
    const sameKey =
      old !== undefined &&
      next !== undefined &&
      shape.keyAttributes.every((name) => JSON.stringify(before?.[name]) === JSON.stringify(after[name]));
    if (old !== undefined && next !== undefined && sameKey) {
      index += writeUnits(Math.max(old.size, next.size));
    } else {
      // An entry appears, disappears, or moves to another key (a delete plus a put).
      if (old !== undefined) index += writeUnits(old.size);
      if (next !== undefined) index += writeUnits(next.size);
    }
  }
  return { table, indexes: index };
}
