// Where a quarantined record is stored: a key derived from its content, so replaying a page overwrites
// instead of doubling (hand-off.ts also writes identical records once per page by it).
import { createHash } from 'node:crypto';
import { stringifyJsonExact } from '../model/int64.js';
import type { QuarantinedRecord } from './ports.js';

export const QUARANTINE_PREFIX = 'quarantine/';

/**
 * `quarantine/<feedId>/<orderId|unidentified>/<version|unknown>-<content hash>.json`: no partner text, so under
 * 200 bytes (feed id ≤ 64 characters, int64 ids ≤ 20 digits) whatever the record holds; S3 allows 1,024.
 */
export function quarantineKey(
  record: Pick<QuarantinedRecord, 'feedId' | 'orderId' | 'version' | 'raw'>,
): string {
  const hash = createHash('sha256')
    .update(stringifyJsonExact(record.raw) ?? 'undefined')
    .digest('hex')
    .slice(0, 16);
  const order = record.orderId === undefined ? 'unidentified' : String(record.orderId);
  const version = record.version === undefined ? 'unknown' : String(record.version);
  return `${QUARANTINE_PREFIX}${encodeURIComponent(record.feedId)}/${order}/${version}-${hash}.json`;
}
