import { createHash } from 'node:crypto';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { QuarantineError } from '../ingest/errors.js';
import type { Quarantine, QuarantinedRecord } from '../ingest/ports.js';
import { stringifyJsonExact } from '../model/int64.js';

export const QUARANTINE_PREFIX = 'quarantine/';

export class S3Quarantine implements Quarantine {
  constructor(
    private readonly client: S3Client,
    private readonly bucketName: string,
  ) {}

  async put(record: QuarantinedRecord): Promise<string> {
    const key = quarantineKey(record);
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucketName,
          Key: key,
          Body: stringifyJsonExact(record),
          ContentType: 'application/json',
        }),
      );
      return key;
    } catch (error) {
      throw new QuarantineError(`could not store quarantined record at ${key}`, { cause: error });
    }
  }
}

/**
 * `quarantine/<feedId>/<orderId|unidentified>/<version|unknown>-<content hash>.json`: no partner text, so under
 * S3's 1,024 bytes whatever the record holds; a replayed page overwrites instead of doubling.
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
