// Reading DynamoDB items without rounding: util-dynamodb's unmarshall turns every N into a JS number (and
// refuses one beyond 2^53). The orders table holds int64 ids, versions and amounts, so integers come back in
// their canonical int64 form (a number when safe, a bigint otherwise) and other numbers as numbers.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { int64FromText } from '../model/int64.js';

const INTEGER = /^-?\d+$/;

export function unmarshallExact(item: Record<string, AttributeValue>): Record<string, unknown> {
  return toExact(unmarshall(item, { wrapNumbers: true })) as Record<string, unknown>;
}

function toExact(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Uint8Array) return value;
  if (value instanceof Set) return new Set([...value].map(toExact));
  if (Array.isArray(value)) return value.map(toExact);
  const wrapped = (value as { value?: unknown }).value;
  if (typeof wrapped === 'string' && value.constructor?.name === 'NumberValue') {
    return INTEGER.test(wrapped) ? int64FromText(wrapped) : Number(wrapped);
  }
  const out: Record<string, unknown> = {};
  for (const [key, element] of Object.entries(value)) out[key] = toExact(element);
  return out;
}
