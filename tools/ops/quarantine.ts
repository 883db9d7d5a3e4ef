// quarantine list / retry: the records the poller could not publish (invalid, or too large), under
// `quarantine/<feedId>/…` (functions/core/adapters/s3-quarantine.ts): one object per distinct record, and per
// page one object that holds the distinct records beyond the first 100 (`records` set, `raw` their list).
//
// retry runs each record on its own (each record of an object that holds several) through the poller's own
// preparation (preparePage: parseOrder, then the size limits) with the current code. A record that now passes
// is published to every queue (the orders queue and each subscriber's) as the poll that fetched it would have:
// origin "poll", its feedId, pageId and fetch time, and correlationId `quarantine-retry:<runId>`. Then the
// object is moved out of the way: copied to `retried/<same path>` and deleted from `quarantine/`, so a second
// retry does not publish it again and the quarantined count drops. An object of several records some of which
// still fail keeps only those (rewritten in place), and the ones published go to
// `retried/<same path without .json>.<runId>.json`. Publish first, move or rewrite after: a crash in between
// publishes them again on the next retry (duplicates, which the version guard absorbs), never loses one.
// Records that still fail stay, each reported with today's reason.
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { QUARANTINE_PREFIX } from '../../functions/core/adapters/s3-quarantine.js';
import {
  type OutgoingMessage,
  SQS_MAX_MESSAGE_BYTES,
} from '../../functions/core/contract/order-version-message.js';
import type { OrderVersionPublisher, QuarantinedRecord } from '../../functions/core/ingest/ports.js';
import { preparePage } from '../../functions/core/ingest/prepare-page.js';
import { parseJsonExact, stringifyJsonExact } from '../../functions/core/model/int64.js';
import type { AwsAt } from '../aws.js';
import { quarantinedKeys } from '../local/data.js';
import { renderTable } from './format.js';

const RETRIED_PREFIX = 'retried/';
/** Messages published at once (the poller's slice): bounded memory and sends for an object of thousands. */
const PUBLISH_AT_ONCE = 100;
/** Rows a plan or a report shows per object of several records; --json lists every one. */
const ROWS_PER_OBJECT = 20;
/** How objects of several records said so before `records` marked them. */
const OLDER_SEVERAL = /^\d+ more records of this page could not be published/;

export interface StoredQuarantineRecord {
  key: string;
  record: QuarantinedRecord;
}

export async function listQuarantined(
  aws: Pick<AwsAt, 's3'>,
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

function holdsSeveral(record: QuarantinedRecord): record is QuarantinedRecord & { raw: unknown[] } {
  return Array.isArray(record.raw) && (record.records !== undefined || OLDER_SEVERAL.test(record.reason));
}

/** The records an object stores: the list of one that holds several, else its one record. */
export function recordsOf(record: QuarantinedRecord): unknown[] {
  return holdsSeveral(record) ? record.raw : [record.raw];
}

export interface RecordVerdict {
  /** Its position in an object of several records; undefined: the object is this record. */
  index: number | undefined;
  raw: unknown;
  /** The message to publish when the record now passes. */
  message: OutgoingMessage | undefined;
  /** Why it still fails (today's reason). */
  reason: string | undefined;
}

export interface RetryVerdict {
  key: string;
  record: QuarantinedRecord;
  records: RecordVerdict[];
}

/** Pure: today's verdict on each record of each object, with the messages a poll would have published. */
export function judgeQuarantined(objects: readonly StoredQuarantineRecord[], runId: string): RetryVerdict[] {
  return objects.map(({ key, record }) => {
    const several = holdsSeveral(record);
    const records = recordsOf(record).map((raw, index): RecordVerdict => {
      const prepared = preparePage([raw], {
        feedId: record.feedId,
        pageId: record.pageId,
        fetchedAt: record.quarantinedAt,
        correlationId: `quarantine-retry:${runId}`,
        maxMessageBytes: SQS_MAX_MESSAGE_BYTES,
      });
      const message = prepared.messages[0];
      return {
        index: several ? index : undefined,
        raw,
        message,
        reason: message === undefined ? (prepared.quarantined[0]?.reason ?? 'rejected') : undefined,
      };
    });
    return { key, record, records };
  });
}

/** One record of an object: its key, and its position when the object holds several. */
export interface RecordRef {
  key: string;
  index?: number;
}

export interface RetryResult {
  runId: string;
  published: Array<RecordRef & { orderId: string; version: string }>;
  stillFailing: Array<RecordRef & { reason: string }>;
}

export async function retryQuarantined(
  aws: Pick<AwsAt, 's3'>,
  bucket: string,
  verdicts: readonly RetryVerdict[],
  publisher: OrderVersionPublisher,
  runId: string,
  progress: (line: string) => void,
): Promise<RetryResult> {
  const result: RetryResult = { runId, published: [], stillFailing: [] };
  for (const { key, record, records } of verdicts) {
    const passing = records.filter((verdict) => verdict.message !== undefined);
    const failing = records.filter((verdict) => verdict.message === undefined);
    for (const { index, reason } of failing)
      result.stillFailing.push({ ...refOf(key, index), reason: reason ?? 'rejected' });
    if (passing.length === 0) continue;
    const messages = passing.map((verdict) => verdict.message as OutgoingMessage);
    for (let start = 0; start < messages.length; start += PUBLISH_AT_ONCE) {
      await publisher.publish(messages.slice(start, start + PUBLISH_AT_ONCE));
    }
    const path = key.slice(QUARANTINE_PREFIX.length);
    if (failing.length === 0) {
      await aws.s3.send(
        new CopyObjectCommand({
          Bucket: bucket,
          Key: `${RETRIED_PREFIX}${path}`,
          CopySource: `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`,
          MetadataDirective: 'REPLACE',
          ContentType: 'application/json',
          Metadata: { 'retried-at': new Date().toISOString(), 'retry-run-id': runId },
        }),
      );
      await aws.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    } else {
      // Published ones to retried/ (under this run's id: an earlier partial retry keeps its own), then the
      // object keeps only the records that still fail, with today's reasons.
      await putJson(aws, bucket, `${RETRIED_PREFIX}${path.replace(/\.json$/, '')}.${runId}.json`, {
        ...holding(record, passing),
        reason: `published by quarantine retry ${runId}`,
      });
      await putJson(aws, bucket, key, {
        ...holding(record, failing),
        reason: `${failing.length} records of this page still fail (quarantine retry ${runId} published ${passing.length}); raw lists them in page order`,
        issues: countedReasons(failing),
      });
    }
    for (const { index, message } of passing) {
      result.published.push({
        ...refOf(key, index),
        orderId: String(message?.orderId),
        version: String(message?.version),
      });
    }
    progress(`quarantine retry: ${result.published.length} published`);
  }
  return result;
}

function refOf(key: string, index: number | undefined): RecordRef {
  return index === undefined ? { key } : { key, index };
}

/** The object's fields, holding `verdicts`' records as a list. */
function holding(record: QuarantinedRecord, verdicts: readonly RecordVerdict[]): QuarantinedRecord {
  return { ...record, records: verdicts.length, raw: verdicts.map((verdict) => verdict.raw) };
}

function countedReasons(verdicts: readonly RecordVerdict[]): string[] {
  const counts = new Map<string, number>();
  for (const { reason = 'rejected' } of verdicts) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  return [...counts].map(([reason, count]) => `${count} × ${reason}`);
}

async function putJson(
  aws: Pick<AwsAt, 's3'>,
  bucket: string,
  key: string,
  record: QuarantinedRecord,
): Promise<void> {
  await aws.s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: stringifyJsonExact(record),
      ContentType: 'application/json',
    }),
  );
}

export function renderQuarantineList(objects: readonly StoredQuarantineRecord[]): string {
  if (objects.length === 0) return 'No quarantined records.';
  const rows = objects.map(({ key, record }) => [
    record.feedId,
    record.orderId === undefined ? '-' : String(record.orderId),
    record.version === undefined ? '-' : String(record.version),
    String(recordsOf(record).length),
    record.quarantinedAt,
    record.reason,
    key,
  ]);
  const records = objects.reduce((sum, { record }) => sum + recordsOf(record).length, 0);
  return `${renderTable(['FEED', 'ORDER', 'VERSION', 'RECORDS', 'QUARANTINED AT', 'REASON', 'KEY'], rows)}\n\n${records} quarantined record(s) in ${objects.length} object(s)`;
}

export function renderRetryPlan(verdicts: readonly RetryVerdict[]): string {
  const rows: string[][] = [];
  for (const { key, records } of verdicts) {
    for (const verdict of records.slice(0, ROWS_PER_OBJECT)) {
      rows.push([
        verdict.message === undefined ? 'still fails' : 'passes',
        verdict.message === undefined
          ? (verdict.reason ?? '')
          : `order ${verdict.message.orderId} v${verdict.message.version}`,
        renderRef(refOf(key, verdict.index)),
      ]);
    }
    const more = records.slice(ROWS_PER_OBJECT);
    if (more.length > 0) {
      const passing = more.filter((verdict) => verdict.message !== undefined).length;
      rows.push(['…', `${more.length} more records: ${passing} pass (--json lists each)`, key]);
    }
  }
  const all = verdicts.flatMap((verdict) => verdict.records);
  const passing = all.filter((verdict) => verdict.message !== undefined);
  return [
    verdicts.length === 0 ? 'No quarantined records.' : renderTable(['NOW', 'DETAIL', 'RECORD'], rows),
    '',
    `${passing.length} of ${all.length} records pass today's validation and would be published to every queue; an object whose records all pass is moved to ${RETRIED_PREFIX}, one of several records keeps those that still fail`,
  ].join('\n');
}

/** `key`, or `key#index` for a record of an object that holds several. */
export function renderRef({ key, index }: RecordRef): string {
  return index === undefined ? key : `${key}#${index}`;
}
