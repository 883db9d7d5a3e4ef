// DynamoDB item size and write units, by the documented rules
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// an item is the sum of its attribute names (UTF-8) and values; strings by UTF-8 length, numbers
// about (significant digits / 2) + 1, binary by length, booleans and null 1 byte; a list or map adds
// 3 bytes plus 1 byte per element (and, for a map, its keys' names); sets sum their elements.
// A write costs ceil(size / 1 KB) units of the larger of the item before and after it; a GSI entry
// written, updated or deleted by it costs ceil(entry size / 1 KB) more (an entry is its projected
// attributes plus the table and index keys plus 100 bytes).
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export type Item = Record<string, AttributeValue>;

const KB = 1024;

export function numberSize(text: string): number {
  const digits = text
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '');
  const significant = digits.replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, significant.length) / 2) + 1;
}

export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, 'utf8');
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s, 'utf8'), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  if (value.L !== undefined) return value.L.reduce((sum, element) => sum + 1 + valueSize(element), 3);
  if (value.M !== undefined) {
    return Object.entries(value.M).reduce(
      (sum, [name, element]) => sum + 1 + Buffer.byteLength(name, 'utf8') + valueSize(element),
      3,
    );
  }
  return 0;
}

export function itemSize(item: Item): number {
  return Object.entries(item).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name, 'utf8') + valueSize(value),
    0,
  );
}

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
