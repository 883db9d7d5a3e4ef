// Use case: reconcile the orders table with the partner, order by order (GET /v1/orders/{id}).
//   1. take the ids (deduplicated, in the order given) and work through them in chunks of CHUNK_SIZE
//   2. per chunk: fetch the partner's current state of each id (bounded concurrency, a deadline per
//      call) and validate it with parseOrder; a 401 stops the run (no further calls)
//   3. then read the stored versions of the chunk in one batch, and compare: in-sync, behind, ahead,
//      missing (and not-found, invalid-id, invalid-record, error for what the partner answered)
//   4. with `repair`, publish the partner's version of every `behind` / `missing` order as a normal
//      order-version message to every queue (the orders queue and every downstream queue)
// The table is only ever read here: the consumer's version guard and sales ledger stay the only
// writers, so a repair is exactly as safe as a duplicate delivery from the poller. Nothing is deleted
// (`not-found`) and nothing is rolled back (`ahead`): those are reported for a person to look at.
// A repair message carries `source.pageId: null` (it came from GET /v1/orders/{id}, not from a page),
// `source.origin: 'reconcile'` and `source.correlationId: 'reconcile:<runId>'` (the report names the run id).
//
// The stored versions are read *after* the partner's answers: stored versions only grow, so a stored
// version below what the partner served a moment earlier is certainly stale (`behind` is never an
// artefact of the pipeline applying a version meanwhile). The reverse race can show a spurious
// `ahead` (the partner moved on and the pipeline caught up between the two reads); `ahead` is report-only.

import { randomUUID } from 'node:crypto';
import { keyLimitProblem } from '../../../functions/core/adapters/stored-order-item.js';
import {
  buildOrderVersionMessage,
  type OutgoingMessage,
  runCorrelationId,
  SQS_MAX_MESSAGE_BYTES,
} from '../../../functions/core/contract/order-version-message.js';
import type { OrderVersionPublisher } from '../../../functions/core/ingest/ports.js';
import { type Int64, isInt64 } from '../../../functions/core/model/int64.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';
import type { Finding, Order } from '../../../functions/core/model/types.js';
import { PartnerError, partnerErrorKind } from '../../../functions/core/partner/errors.js';
import type { PartnerApi } from '../../../functions/core/partner/types.js';

/** What the orders table holds for one order. */
export interface StoredVersion {
  version: Int64;
  status: string;
}

/** Read-only view of the orders table. */
export interface StoredOrders {
  /** Stored version and status of each id that has an item; ids without an item are absent. */
  getVersions(ids: readonly Int64[]): Promise<Map<Int64, StoredVersion>>;
  /** Up to `limit` order ids from the table (see the adapter for how they are chosen). */
  sampleIds(limit: number): Promise<Int64[]>;
}

export const RESULT_KINDS = [
  'in-sync',
  'behind',
  'ahead',
  'missing',
  'not-found',
  'invalid-id',
  'invalid-record',
  'error',
] as const;

/**
 * - `in-sync`: same version in the table and at the partner.
 * - `behind`: the partner serves a higher version; the stored one is stale (repairable).
 * - `ahead`: the table holds a higher version than the partner serves now (report only).
 * - `missing`: the partner has the order, the table does not (repairable).
 * - `not-found`: 404, the partner does not know the id (report only; nothing is deleted).
 * - `invalid-id`: 400 (with the server's message), or an id that is not a non-negative int64.
 * - `invalid-record`: the partner's record fails parseOrder (or is a different order).
 * - `error`: anything else (rate limit or 5xx beyond the deadline, network, malformed body).
 */
export type ResultKind = (typeof RESULT_KINDS)[number];

export interface ReconciledOrder {
  /** int64, in canonical form (a bigint beyond 2^53). */
  id: Int64;
  result: ResultKind;
  storedVersion?: Int64;
  storedStatus?: string;
  partnerVersion?: Int64;
  partnerStatus?: string;
  /** Why (server message, parse reason, error) or what differs; never the token or customer data. */
  detail?: string;
  /** Only with `repair`, for `behind` and `missing`. */
  repair?: 'published' | 'failed';
}

export interface ReconcileReport {
  /** This run's id: repair messages carry `reconcile:<runId>` as their correlation id. */
  runId: string;
  /** One entry per distinct id, in the order the ids were given. */
  orders: ReconciledOrder[];
  counts: Record<ResultKind, number>;
  repairs: { published: number; failed: number };
  /**
   * Orders that still need attention: `behind` / `missing` not repaired, `invalid-id`,
   * `invalid-record` and `error`. `ahead` and `not-found` are reported but do not count.
   */
  unresolved: number;
}

export interface ReconcileRequest {
  ids: readonly Int64[];
  /** Publish the partner's version of `behind` and `missing` orders. Default false. */
  repair?: boolean;
  /** `source.feedId` of repair messages (the poller's FEED_ID, so subscribers see one feed). */
  feedId: string;
  /** Partner calls in flight at once. Default 4. */
  concurrency?: number;
  /** Deadline of each partner call, retries and waits included. Default 20 s. */
  callTimeoutMs?: number;
  /** Names the run in repair messages' correlation id (`reconcile:<runId>`). Default: a random UUID. */
  runId?: string;
}

export interface ReconcileDeps {
  stored: StoredOrders;
  partner: PartnerApi;
  publisher: OrderVersionPublisher;
  now: () => number;
}

/** The partner rejected the token: the run stopped, and no further call was made. */
export class ReconcileAuthError extends Error {
  readonly code = 'ERR_RECONCILE_AUTH';
  /** Ids fully reconciled before the 401 (their repairs, if any, were already published). */
  readonly partial: ReconcileReport;
  constructor(partial: ReconcileReport, options: { cause: unknown }) {
    super(
      `partner API answered 401 Unauthorized: the token was rejected; reconciliation aborted after ${partial.orders.length} order(s)`,
      options,
    );
    this.name = 'ReconcileAuthError';
    this.partial = partial;
  }
}

/** Ids per stored-version read and per publish call; also bounds memory for long id lists. */
export const CHUNK_SIZE = 100;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_CALL_TIMEOUT_MS = 20_000;

type PartnerAnswer =
  | { kind: 'order'; order: Order; findings: Finding[] }
  | { kind: 'result'; entry: ReconciledOrder }
  | { kind: 'auth'; error: unknown };

export async function reconcileOrders(
  deps: ReconcileDeps,
  request: ReconcileRequest,
): Promise<ReconcileReport> {
  const concurrency = request.concurrency ?? DEFAULT_CONCURRENCY;
  const callTimeoutMs = request.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError('concurrency must be >= 1');
  if (!Number.isInteger(callTimeoutMs) || callTimeoutMs < 1)
    throw new RangeError('callTimeoutMs must be >= 1');

  const runId = request.runId ?? randomUUID();
  if (runId === '') throw new RangeError('runId must not be empty');
  const correlationId = runCorrelationId('reconcile', runId);
  const ids = [...new Set(request.ids)];
  const orders: ReconciledOrder[] = [];
  for (let start = 0; start < ids.length; start += CHUNK_SIZE) {
    const chunk = ids.slice(start, start + CHUNK_SIZE);
    // 2. the partner's view, first
    const answers = await mapBounded(chunk, concurrency, (id) => fetchPartnerState(deps, id, callTimeoutMs));
    const auth = answers.find((answer) => answer?.kind === 'auth');
    if (auth?.kind === 'auth') throw new ReconcileAuthError(summarise(orders, runId), { cause: auth.error });

    // 3. then the table's
    const toCompare = chunk.filter((_, index) => answers[index]?.kind === 'order');
    const stored =
      toCompare.length > 0 ? await deps.stored.getVersions(toCompare) : new Map<number, StoredVersion>();
    const repairs: Array<{ entry: ReconciledOrder; message: OutgoingMessage }> = [];
    const fetchedAt = new Date(deps.now()).toISOString();
    chunk.forEach((id, index) => {
      const answer = answers[index];
      if (answer === undefined) return;
      if (answer.kind === 'result') {
        orders.push(answer.entry);
        return;
      }
      if (answer.kind !== 'order') return;
      const entry = compare(id, answer.order, stored.get(id));
      orders.push(entry);
      if (request.repair && (entry.result === 'behind' || entry.result === 'missing')) {
        const message = buildOrderVersionMessage(answer.order, {
          feedId: request.feedId,
          pageId: null,
          fetchedAt,
          findings: answer.findings,
          correlationId,
          origin: 'reconcile',
        });
        // What the poller would quarantine is not published: the consumer could only dead-letter it.
        const unstorable = keyLimitProblem(answer.order);
        if (unstorable !== undefined) {
          entry.repair = 'failed';
          entry.detail = `${entry.detail}; repair not published: ${unstorable}`;
        } else if (message.sizeBytes > SQS_MAX_MESSAGE_BYTES) {
          entry.repair = 'failed';
          entry.detail = `${entry.detail}; repair not published: message is ${message.sizeBytes} bytes, above the SQS limit`;
        } else {
          repairs.push({ entry, message });
        }
      }
    });

    // 4. repairs of this chunk, in one publish (the publisher batches per queue)
    if (repairs.length > 0) {
      try {
        await deps.publisher.publish(repairs.map((repair) => repair.message));
        for (const { entry } of repairs) entry.repair = 'published';
      } catch (error) {
        for (const { entry } of repairs) {
          entry.repair = 'failed';
          entry.detail = `${entry.detail}; repair not published: ${describe(error)}`;
        }
      }
    }
  }
  return summarise(orders, runId);
}

async function fetchPartnerState(
  deps: ReconcileDeps,
  id: Int64,
  callTimeoutMs: number,
): Promise<PartnerAnswer> {
  // Refused here: the client sends the id it is given.
  if (!isInt64(id) || id < 0) {
    return {
      kind: 'result',
      entry: { id, result: 'invalid-id', detail: 'not sent: not a non-negative int64' },
    };
  }
  let raw: unknown;
  try {
    raw = await deps.partner.getOrder(id, { deadline: deps.now() + callTimeoutMs });
  } catch (error) {
    switch (partnerErrorKind(error)) {
      case 'auth':
        return { kind: 'auth', error };
      case 'not-found':
        return { kind: 'result', entry: { id, result: 'not-found', detail: 'partner answered 404' } };
      case 'bad-request': {
        const detail = `partner answered 400: ${(error as PartnerError).serverMessage ?? 'no message'}`;
        return { kind: 'result', entry: { id, result: 'invalid-id', detail } };
      }
      default:
        return { kind: 'result', entry: { id, result: 'error', detail: describe(error) } };
    }
  }
  const parsed = parseOrder(raw);
  if (!parsed.ok) {
    const entry: ReconciledOrder = { id, result: 'invalid-record', detail: parsed.reason };
    if (parsed.version !== undefined) entry.partnerVersion = parsed.version;
    return { kind: 'result', entry };
  }
  if (parsed.order.id !== id) {
    return {
      kind: 'result',
      entry: {
        id,
        result: 'invalid-record',
        partnerVersion: parsed.order.version,
        detail: `partner returned order ${parsed.order.id} for id ${id}`,
      },
    };
  }
  return { kind: 'order', order: parsed.order, findings: parsed.findings };
}

function compare(id: Int64, order: Order, stored: StoredVersion | undefined): ReconciledOrder {
  const entry: ReconciledOrder = {
    id,
    result: 'in-sync',
    partnerVersion: order.version,
    partnerStatus: order.status,
  };
  if (stored === undefined) {
    entry.result = 'missing';
    entry.detail = 'not in the orders table';
    return entry;
  }
  entry.storedVersion = stored.version;
  entry.storedStatus = stored.status;
  if (stored.version < order.version) {
    entry.result = 'behind';
    entry.detail = `stored v${stored.version} (${stored.status}), partner v${order.version} (${order.status})`;
  } else if (stored.version > order.version) {
    entry.result = 'ahead';
    entry.detail = `partner serves v${order.version}, older than stored v${stored.version}; not repaired`;
  } else if (stored.status !== order.status) {
    entry.detail = `same version, but status differs: stored ${stored.status}, partner ${order.status}`;
  }
  return entry;
}

function summarise(orders: ReconciledOrder[], runId: string): ReconcileReport {
  const counts = Object.fromEntries(RESULT_KINDS.map((kind) => [kind, 0])) as Record<ResultKind, number>;
  const repairs = { published: 0, failed: 0 };
  let unresolved = 0;
  for (const entry of orders) {
    counts[entry.result] += 1;
    if (entry.repair === 'published') repairs.published += 1;
    if (entry.repair === 'failed') repairs.failed += 1;
    if (needsAttention(entry)) unresolved += 1;
  }
  return { runId, orders, counts, repairs, unresolved };
}

/** `behind` / `missing` not repaired, `invalid-id`, `invalid-record` and `error`. */
function needsAttention({ result, repair }: ReconciledOrder): boolean {
  if (result === 'behind' || result === 'missing') return repair !== 'published';
  return result === 'invalid-id' || result === 'invalid-record' || result === 'error';
}

function describe(error: unknown): string {
  if (error instanceof PartnerError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/**
 * Runs `task` over `items` with at most `limit` in flight; results keep the items' order. After a
 * task answers `auth`, no further task starts (the ones in flight finish).
 */
async function mapBounded(
  items: readonly Int64[],
  limit: number,
  task: (item: Int64) => Promise<PartnerAnswer>,
): Promise<Array<PartnerAnswer | undefined>> {
  const results: Array<PartnerAnswer | undefined> = new Array(items.length);
  let next = 0;
  let stop = false;
  const worker = async () => {
    while (!stop && next < items.length) {
      const index = next++;
      const item = items[index];
      if (item === undefined) continue;
      const result = await task(item);
      results[index] = result;
      if (result.kind === 'auth') stop = true;
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
