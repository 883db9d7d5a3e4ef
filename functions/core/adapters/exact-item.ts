// unmarshall turns every N into a number (and refuses one beyond 2^53); integers here come back as int64.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { int64FromText } from '../model/int64.js';

const INTEGER = /^-?\d+$/;

export function unmarshallExact(item: Record<string, AttributeValue>): Record<string, unknown> {
  return unmarshall(item, {
    wrapNumbers: (text) => (INTEGER.test(text) ? int64FromText(text) : Number(text)),
  });
}
