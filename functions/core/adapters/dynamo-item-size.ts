// DynamoDB item size by the documented rules
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export type Item = Record<string, AttributeValue>;

function numberSize(text: string): number {
  // Significant digits of the mantissa.
  const significant = text
    .replace(/[eE].*$/, '')
    .replace(/[-.]/g, '')
    .replace(/^0+|0+$/g, '');
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
