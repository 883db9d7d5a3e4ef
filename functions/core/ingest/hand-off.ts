// Hands one page off before its cursor may move: every valid version published, the rest quarantined, in
// slices so that memory and S3 writes in flight stay bounded whatever the page holds, and in parts across runs
// when one run cannot do it all (functions/README.md: memory and time per page).
import { createHash, type Hash } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { stringifyJsonExact } from '../model/int64.js';
import type { FindingMetricName, FunctionMetrics } from '../observability/metric-names.js';
import type { OrderVersionPublisher, PartialPage, Quarantine, QuarantinedRecord } from './ports.js';
import { type PageContext, type PreparedPage, preparePage } from './prepare-page.js';
import { quarantineKey } from './quarantine-key.js';

/** Records prepared and handed off at once: a page of the API's largest size is one slice. */
const SLICE_RECORDS = 100;
/** Quarantine objects a page writes one by one (a page of the API's largest size fits); the rest share one. */
const QUARANTINE_OBJECTS_PER_PAGE = 100;
/** S3 writes in flight at once (S3 takes 3,500 PUTs a second per prefix; a burst of thousands is throttled). */
const QUARANTINE_CONCURRENCY = 8;
/** Keys remembered per page to write identical records once (a bounded set: ~1 MB at most). */
const KEYS_REMEMBERED = 10_000;
/** Log lines about findings per page; the metrics count them all. */
const FINDING_LINES_PER_PAGE = 100;

interface HandOffDeps {
  publisher: OrderVersionPublisher;
  quarantine: Quarantine;
  metrics: Pick<FunctionMetrics, 'count'>;
  log: Pick<Logger, 'info' | 'warn'>;
}

/** When the hand-off must stop, and what of the page an earlier run already handed off. */
export interface HandOffTime {
  /** Epoch ms after which no slice starts (one always does): the rest waits for the next run. */
  until: number;
  now: () => number;
  /** The part an earlier run handed off; skipped when this page starts with the same records. */
  handedBefore?: PartialPage | undefined;
}

interface HandedOff {
  versionsPublished: number;
  /** Records quarantined, duplicates and the ones stored together included. */
  quarantined: number;
  /** Highest event timestamp among the page's valid orders (UTC ISO), if any. */
  highWaterMark: string | undefined;
  /** Set when time ran out: the page's first records handed off so far (earlier runs' included). */
  partial?: PartialPage;
}

export async function handOffPage(
  deps: HandOffDeps,
  records: readonly unknown[],
  context: PageContext,
  time?: HandOffTime,
): Promise<HandedOff> {
  const page = new PageQuarantine(context);
  const handed: HandedOff = { versionsPublished: 0, quarantined: 0, highWaterMark: undefined };
  const { first, handedOff } = resume(deps, records, context, time?.handedBefore);
  let findingLines = 0;
  for (let start = first; start < records.length; start += SLICE_RECORDS) {
    if (time && handedOff && start > first && time.now() >= time.until) {
      handed.partial = { records: start, digest: handedOff.copy().digest('base64url') };
      break;
    }
    const slice = records.slice(start, start + SLICE_RECORDS);
    handedOff?.update(served(slice));
    const prepared = preparePage(slice, context);
    const oneByOne = page.sort(prepared.quarantined);
    await Promise.all([
      deps.publisher.publish(prepared.messages),
      forEachLimited(oneByOne, QUARANTINE_CONCURRENCY, (record) => deps.quarantine.put(record)),
    ]);
    handed.versionsPublished += prepared.messages.length;
    handed.quarantined += prepared.quarantined.length;
    const mark = prepared.highWaterMark;
    if (mark !== undefined && (handed.highWaterMark === undefined || mark > handed.highWaterMark)) {
      handed.highWaterMark = mark;
    }
    findingLines = logSlice(deps, context, prepared, oneByOne, findingLines);
  }
  await page.storeTogether(deps);
  const { feedId, correlationId } = context;
  const counts = { versionsPublished: handed.versionsPublished, quarantined: handed.quarantined };
  if (handed.partial) {
    deps.log.warn("page handed off in part: the run's time ran out; the next run asks for it again", {
      feedId,
      correlationId,
      ...counts,
      records: records.length,
      handedOff: handed.partial.records,
    });
  } else {
    deps.log.info('page handed off', { feedId, correlationId, ...counts });
  }
  return handed;
}

/**
 * Where the hand-off starts, and the digest of what it has handed off (a page of more than one slice may be
 * committed in part; hashed slice by slice as it goes, so stopping costs nothing): after the part an earlier
 * run handed off, when this page starts with the same records. A partner may serve a cursor's page differently;
 * then the whole page again (duplicates, no loss).
 */
function resume(
  deps: HandOffDeps,
  records: readonly unknown[],
  { feedId, correlationId }: PageContext,
  before: PartialPage | undefined,
): { first: number; handedOff: Hash | undefined } {
  if (records.length <= SLICE_RECORDS) return { first: 0, handedOff: undefined };
  if (before === undefined) return { first: 0, handedOff: createHash('sha256') };
  const prefix = createHash('sha256');
  const fits = before.records <= records.length;
  for (let start = 0; fits && start < before.records; start += SLICE_RECORDS) {
    prefix.update(served(records.slice(start, start + SLICE_RECORDS)));
  }
  const same = fits && prefix.copy().digest('base64url') === before.digest;
  deps.log.info(
    same
      ? 'resuming a page an earlier run handed off in part'
      : 'the page differs from the one an earlier run handed off in part; handing it off whole',
    { feedId, correlationId, records: records.length, handedOff: before.records },
  );
  return same ? { first: before.records, handedOff: prefix } : { first: 0, handedOff: createHash('sha256') };
}

/**
 * A slice's records as the digest reads them: their JSON, `latestVersion` left out (it says whether a newer
 * version existed when the record was served, so a page asked again may change it, never the order version).
 */
function served(slice: readonly unknown[]): string {
  return stringifyJsonExact(
    slice.map((record) =>
      typeof record === 'object' && record !== null && 'latestVersion' in record
        ? { ...record, latestVersion: undefined }
        : record,
    ),
  );
}

/** Which quarantined records of a page are written one by one, which are identical to one already written,
 *  and which go together into one object. */
class PageQuarantine {
  private readonly keys = new Set<string>();
  private objects = 0;
  private readonly together: unknown[] = [];
  private readonly reasons = new Map<string, number>();

  constructor(private readonly context: PageContext) {}

  /** The records of a slice to write one by one (the rest are kept for storeTogether). */
  sort(quarantined: readonly QuarantinedRecord[]): QuarantinedRecord[] {
    const oneByOne: QuarantinedRecord[] = [];
    for (const record of quarantined) {
      const key = quarantineKey(record);
      // The same content has the same key: one object holds it however often the page repeats it.
      if (this.keys.has(key)) continue;
      if (this.keys.size < KEYS_REMEMBERED) this.keys.add(key);
      if (this.objects < QUARANTINE_OBJECTS_PER_PAGE) {
        this.objects += 1;
        oneByOne.push(record);
      } else {
        this.together.push(record.raw);
        if (this.reasons.size < 20 || this.reasons.has(record.reason)) {
          this.reasons.set(record.reason, (this.reasons.get(record.reason) ?? 0) + 1);
        }
      }
    }
    return oneByOne;
  }

  /** One object with every invalid record beyond the one-by-one budget, in page order: its `raw` is their list. */
  async storeTogether(deps: HandOffDeps): Promise<void> {
    const records = this.together.length;
    if (records === 0) return;
    const { feedId, pageId, fetchedAt, correlationId } = this.context;
    const key = await deps.quarantine.put({
      feedId,
      pageId,
      reason: `${records} more records of this page could not be published (beyond the ${QUARANTINE_OBJECTS_PER_PAGE} quarantined one by one); raw lists them in page order`,
      issues: [...this.reasons].map(([reason, count]) => `${count} × ${reason}`),
      raw: this.together,
      records,
      quarantinedAt: fetchedAt,
    });
    deps.log.warn('records quarantined together', { feedId, pageId, correlationId, records, key });
  }
}

/** Metrics and log lines of a slice: one line per record quarantined one by one, findings up to a cap. */
function logSlice(
  deps: HandOffDeps,
  { feedId, correlationId }: PageContext,
  prepared: PreparedPage,
  oneByOne: readonly QuarantinedRecord[],
  findingLinesBefore: number,
): number {
  if (prepared.messages.length > 0) deps.metrics.count('VersionsPublished', prepared.messages.length);
  if (prepared.quarantined.length > 0) deps.metrics.count('RecordsQuarantined', prepared.quarantined.length);
  if (prepared.oversized > 0) deps.metrics.count('OversizedRecords', prepared.oversized);
  for (const { reason, orderId, version, pageId } of oneByOne) {
    deps.log.warn('record quarantined', { feedId, reason, orderId, version, pageId, correlationId });
  }
  // Findings (schema drift, consistency-rule violations) travel in the messages; operators see them here:
  // a count per kind, and one line per record naming the order, version and codes (no customer data).
  let lines = findingLinesBefore;
  for (const { orderId, version, codes } of prepared.withFindings) {
    for (const code of codes) deps.metrics.count(findingMetricName(code));
    if (lines++ < FINDING_LINES_PER_PAGE) {
      deps.log.warn('order version has findings', {
        feedId,
        orderId,
        version,
        findingCodes: codes,
        correlationId,
      });
    }
  }
  return lines;
}

/** `payments-sum-mismatch` → `FindingPaymentsSumMismatch`: one metric per finding kind (a fixed set). */
export function findingMetricName(code: string): FindingMetricName {
  const parts = code.split(/[^A-Za-z0-9]+/).map((part) => part.charAt(0).toUpperCase() + part.slice(1));
  return `Finding${parts.join('')}`;
}

/** Runs `work` over `items` with at most `limit` at once; fails with the first failure (after all settle). */
async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}
