// Quarantine for records the poller cannot publish (invalid, or too large for SQS): one S3 object per
// record, holding the reason, the raw record and the page it came from. S3 takes records of any size,
// and the key is derived from the record's content, so replaying a page overwrites instead of doubling.

import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { QuarantineError } from '../ingest/errors.js';
import type { Quarantine, QuarantinedRecord } from '../ingest/ports.js';
import { quarantineKey } from '../ingest/quarantine-key.js';
import { stringifyJsonExact } from '../model/int64.js';

// The key is the use case's (it remembers keys to write identical records once).
export { QUARANTINE_PREFIX, quarantineKey } from '../ingest/quarantine-key.js';

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
