// quarantine list / retry: the records the poller could not publish (invalid, or too large), one S3
// object each under `quarantine/<feedId>/…` (functions/core/adapters/s3-quarantine.ts).
//
// retry runs each record through the poller's own preparation (preparePage: parseOrder, then the size
// limits) with the current code. A record that now passes is published to every queue (the orders queue and
// each subscriber's) as the poll that fetched it would have: origin "poll", its feedId, pageId and fetch
// time, and correlationId `quarantine-retry:<runId>`. Then it is moved out of the way: copied to
// `retried/<same path>` and deleted from `quarantine/`, so a second retry does not publish it again and
// the quarantined count drops. Publish first, move after: a crash in between publishes it again on the
// next retry (a duplicate, which the contract allows), never loses it. Records that still fail stay where
// they are, with today's reason in the report.
import { CopyObjectCommand, DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { QUARANTINE_PREFIX } from '../../functions/core/adapters/s3-quarantine.js';
import {
  type OutgoingMessage,
  SQS_MAX_MESSAGE_BYTES,
} from '../../functions/core/contract/order-version-message.js';
import type { OrderVersionPublisher, QuarantinedRecord } from '../../functions/core/ingest/ports.js';
import { preparePage } from '../../functions/core/ingest/prepare-page.js';
import { parseJsonExact } from '../../functions/core/model/int64.js';
import type { AwsAt } from '../aws.js';
import { quarantinedKeys } from '../local/data.js';
import { renderTable } from './format.js';

const RETRIED_PREFIX = 'retried/';

export interface StoredQuarantineRecord {
  key: string;
  record: QuarantinedRecord;
}

export async function listQuarantined(
  aws: AwsAt,
  bucket: string,
  feedId: string | undefined,
): Promise<StoredQuarantineRecord[]> {
  const records: StoredQuarantineRecord[] = [];
  for (const key of await quarantinedKeys(aws, bucket, feedId)) {
    const output = await aws.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const text = (await output.Body?.transformToString('utf8')) ?? '';
    records.push({ key, record: parseJsonExact(text) as QuarantinedRecord });
  }
  return records;
}

export interface RetryVerdict {
  key: string;
  /** The message to publish when the record now passes. */
  message: OutgoingMessage | undefined;
  /** Why it still fails (today's reason). */
  reason: string | undefined;
}

/** Pure: today's verdict on each record, with the messages a poll would have published. */
export function judgeQuarantined(records: readonly StoredQuarantineRecord[], runId: string): RetryVerdict[] {
  return records.map(({ key, record }) => {
    const prepared = preparePage([record.raw], {
      feedId: record.feedId,
      pageId: record.pageId,
      fetchedAt: record.quarantinedAt,
      correlationId: `quarantine-retry:${runId}`,
      maxMessageBytes: SQS_MAX_MESSAGE_BYTES,
    });
    const message = prepared.messages[0];
    return message === undefined
      ? { key, message: undefined, reason: prepared.quarantined[0]?.reason ?? 'rejected' }
      : { key, message, reason: undefined };
  });
}

export interface RetryResult {
  runId: string;
  published: string[];
  stillFailing: Array<{ key: string; reason: string }>;
}

export async function retryQuarantined(
  aws: AwsAt,
  bucket: string,
  verdicts: readonly RetryVerdict[],
  publisher: OrderVersionPublisher,
  runId: string,
  progress: (line: string) => void,
): Promise<RetryResult> {
  const result: RetryResult = { runId, published: [], stillFailing: [] };
  for (const verdict of verdicts) {
    if (verdict.message === undefined) {
      result.stillFailing.push({ key: verdict.key, reason: verdict.reason ?? 'rejected' });
      continue;
    }
    await publisher.publish([verdict.message]);
    const retriedKey = `${RETRIED_PREFIX}${verdict.key.slice(QUARANTINE_PREFIX.length)}`;
    await aws.s3.send(
      new CopyObjectCommand({
        Bucket: bucket,
        Key: retriedKey,
        CopySource: `${bucket}/${verdict.key.split('/').map(encodeURIComponent).join('/')}`,
        MetadataDirective: 'REPLACE',
        ContentType: 'application/json',
        Metadata: { 'retried-at': new Date().toISOString(), 'retry-run-id': runId },
      }),
    );
    await aws.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: verdict.key }));
    result.published.push(verdict.key);
    progress(`quarantine retry: ${result.published.length} published`);
  }
  return result;
}

export function renderQuarantineList(records: readonly StoredQuarantineRecord[]): string {
  if (records.length === 0) return 'No quarantined records.';
  const rows = records.map(({ key, record }) => [
    record.feedId,
    record.orderId === undefined ? '-' : String(record.orderId),
    record.version === undefined ? '-' : String(record.version),
    record.quarantinedAt,
    record.reason,
    key,
  ]);
  return `${renderTable(['FEED', 'ORDER', 'VERSION', 'QUARANTINED AT', 'REASON', 'KEY'], rows)}\n\n${records.length} quarantined record(s)`;
}

export function renderRetryPlan(verdicts: readonly RetryVerdict[]): string {
  const passing = verdicts.filter((verdict) => verdict.message !== undefined);
  const rows = verdicts.map((verdict) => [
    verdict.message === undefined ? 'still fails' : 'passes',
    verdict.message === undefined
      ? (verdict.reason ?? '')
      : `order ${verdict.message.orderId} v${verdict.message.version}`,
    verdict.key,
  ]);
  return [
    verdicts.length === 0 ? 'No quarantined records.' : renderTable(['NOW', 'DETAIL', 'KEY'], rows),
    '',
    `${passing.length} of ${verdicts.length} pass today's validation and would be published to every queue, then moved to ${RETRIED_PREFIX}`,
  ].join('\n');
}
