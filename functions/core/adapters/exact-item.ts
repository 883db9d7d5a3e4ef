// Reading DynamoDB items without rounding: util-dynamodb's unmarshall turns every N into a JS number (and
// refuses one beyond 2^53). The orders table holds int64 ids, versions and amounts, so integers come back in
// their canonical int64 form (a number when safe, a bigint otherwise) and other numbers as numbers.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { int64FromText } from '../model/int64.js';

const INTEGER = /^-?\d+$/;

export function unmarshallExact(item: Record<string, AttributeValue>): Record<string, unknown> {
  return unmarshall(item, {
    wrapNumbers: (text) => (INTEGER.test(text) ? int64FromText(text) : Number(text)),
  });
}
