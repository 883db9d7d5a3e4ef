// The invariants checked after every seed, as pure functions over what the seed left behind (the drivers
// gather it: in-process.ts, local-mode.ts). Each returns the violations it finds, [] when it holds:
//   end        drained, or stopped at a documented stop (the runbook's table) that a fault of this partner
//              allows, with its alarm's metric counted; never "no progress", never over the seed's budget
//   data       drained: the orders table, the sales ledger and the history exactly the simulator's oracle of
//              the whole stream; stopped: nothing stored the partner never delivered, nothing lost of what
//              it delivered before the committed cursor, the ledger the sales of the stored orders
//   rejected   quarantined only junk the partner flooded (never a valid order), nothing dead-lettered
//   requests   per poller run at most REQUESTS_PER_PAGE × (pages + 1) partner requests; none longer than
//              the client's total deadline (the simulator's own record of each request)
//   runs       none longer than the poller's Lambda timeout
//   resources  peak RSS growth within the poller's memory for the cap (infra: 36 × the cap); no
//              synchronous stall of the event loop longer than linear in the largest body (allowedStallMs)
//   budget     a token's hold at most MAX_HOLD_MS ahead; its rate at most twice what the feeds used
//   token      in no output: logs, errors, summaries, request URLs

import type { Oracle, RequestLogEntry } from '../../tools/simulator/types.js';
import { compareLedger, compareOrders, factsOf, type LedgerRow } from '../chaos/verify.js';
import type { Partner } from './draw.js';
import type { DocumentedStop } from './runbook.js';

/** The client's total deadline per request (functions/core/partner/client.ts DEFAULT_TIMEOUTS), plus slack. */
export const REQUEST_DEADLINE_MS = 30_000;
const REQUEST_SLACK_MS = 3_000;
/** A poller run's Lambda timeout (infra/constructs/poller.ts POLLER_TIMEOUT). */
export const POLLER_TIMEOUT_MS = 120_000;
/** Requests one page may take: 5 attempts, 5 waited 429s, a shrink of the page size to 1, a recovery. */
export const REQUESTS_PER_PAGE = 16;
/**
 * The longest synchronous stretch tolerated (a parse, a decode, a validation): linear in the largest body the
 * partner sent, as decoded (at most the cap): 2 s, and half a second per MiB. A super-linear parse of a
 * 64 KiB body blows it; a page of 12,000 records does not.
 */
export function allowedStallMs(largestBodyBytes: number, capBytes: number): number {
  return 2_000 + (500 * Math.min(largestBodyBytes, capBytes)) / 1024 / 1024;
}
/** What local mode's process holds besides a page (the runtime, tsx, the SDK, the consumer), measured here. */
export const LOCAL_MODE_BASELINE_MB = 400;
/** The longest hold of a token's feeds tolerated ("a few minutes" is documented; an hour is a stopped token). */
export const MAX_HOLD_MS = 15 * 60_000;

export type SeedEnd =
  | { kind: 'drained' }
  | { kind: 'stopped'; outcome: string }
  | { kind: 'no-progress'; detail: string }
  | { kind: 'over-budget'; detail: string }
  | { kind: 'crashed'; detail: string };

export interface RunRecord {
  outcome: string;
  ms: number;
  pages: number;
  requests: number;
}

export interface StoredState {
  /** The orders table, by order id (items as unmarshalled). */
  orders: ReadonlyMap<number | bigint, Record<string, unknown>>;
  /** The history's `orderId:version` keys. */
  history: ReadonlySet<string>;
  sales: readonly LedgerRow[];
  quarantined: readonly string[];
  deadLettered: number;
}

export interface SeedObservation {
  partner: Partner;
  end: SeedEnd;
  stream: Oracle;
  delivered: Oracle;
  /** What the partner delivered before the stored cursor: what a stopped feed must hold. */
  deliveredBeforeCursor: Oracle;
  stored: StoredState;
  runs: readonly RunRecord[];
  requests: readonly RequestLogEntry[];
  /** Metrics counted by the functions (in-process only). */
  metrics?: Readonly<Record<string, number>>;
  peakRssGrowthMb?: number | undefined;
  /** Local mode: the child process's peak resident memory. */
  localPeakRssMb?: number;
  maxStallMs?: number | undefined;
  /** Where the token turned up (an output's name each time). */
  tokenSeenIn: readonly string[];
  /** The token's budget as read after each run; `cap`: partnerRequestsPerSecond, when set. */
  budget?: { maxHoldAheadMs: number; maxRate: number; peakObservedRate: number; cap?: number | undefined };
  now: number;
}

/** Ids the simulator's junk records carry (tools/simulator/server.ts JUNK_RECORDS), or none. */
const JUNK_IDS = new Set(['unidentified', '4999990001', '4999990002', '4999990003']);

function endViolations(o: SeedObservation, stops: readonly DocumentedStop[]): string[] {
  const { end, partner } = o;
  if (end.kind === 'drained') return [];
  if (end.kind !== 'stopped') return [`${end.kind}: ${end.detail}`];
  const documented = stops.find((stop) => stop.outcome === end.outcome);
  const problems: string[] = [];
  if (!documented) {
    problems.push(`stopped at '${end.outcome}', which tools/RUNBOOK.md's stop table does not list`);
  } else if (o.metrics && documented.alarm && !(o.metrics[documented.alarm] ?? 0)) {
    problems.push(`stopped at '${end.outcome}' but its alarm's metric ${documented.alarm} was never counted`);
  }
  if (!partner.stops.may.includes(end.outcome)) {
    problems.push(
      `stopped at '${end.outcome}', though every fault of this partner is one a feed gets past (allowed: ${partner.stops.may.join(', ') || 'none'})`,
    );
  }
  return problems;
}

const keyOf = (id: unknown, version: unknown) => `${String(id)}:${String(version)}`;

function dataViolations(o: SeedObservation): string[] {
  const { stored, end } = o;
  const problems: string[] = [];
  if (end.kind === 'drained') {
    const orders = compareOrders(o.stream.orders, stored.orders);
    if (orders.lost.length > 0)
      problems.push(`${orders.lost.length} order(s) lost, e.g. ${JSON.stringify(orders.lost.slice(0, 2))}`);
    if (orders.wrong.length > 0)
      problems.push(
        `${orders.wrong.length} order(s) wrong, e.g. ${JSON.stringify(orders.wrong.slice(0, 2))}`,
      );
    const ledger = compareLedger(o.stream.sales, stored.sales);
    if (ledger.length > 0)
      problems.push(`${ledger.length} ledger row(s) differ, e.g. ${JSON.stringify(ledger[0])}`);
    const missing = [...o.stream.versionKeys].filter((key) => !stored.history.has(key));
    const extra = [...stored.history].filter((key) => !o.stream.versionKeys.has(key));
    if (missing.length > 0) problems.push(`history lacks ${missing.length} version(s), e.g. ${missing[0]}`);
    if (extra.length > 0)
      problems.push(`history has ${extra.length} version(s) never served, e.g. ${extra[0]}`);
    return problems;
  }
  if (end.kind !== 'stopped') return problems;
  const neverDelivered = [...stored.history].filter((key) => !o.delivered.versionKeys.has(key));
  const lost = [...o.deliveredBeforeCursor.versionKeys].filter((key) => !stored.history.has(key));
  if (neverDelivered.length > 0)
    problems.push(
      `history has ${neverDelivered.length} version(s) never delivered, e.g. ${neverDelivered[0]}`,
    );
  if (lost.length > 0)
    problems.push(
      `${lost.length} version(s) delivered before the stored cursor are not in the history, e.g. ${lost[0]}`,
    );
  // The table holds, per order, the highest version the history holds; the ledger follows the table.
  const highest = new Map<string, number>();
  for (const key of stored.history) {
    const [id = '', version = '0'] = key.split(':');
    highest.set(id, Math.max(Number(version), highest.get(id) ?? 0));
  }
  const accepted: Array<{ vendorId: string; currency: string; amount: number }> = [];
  for (const [id, item] of stored.orders) {
    const facts = factsOf(item);
    if (facts?.version !== highest.get(String(id)))
      problems.push(
        `order ${String(id)} stored at v${facts?.version}, its history's highest is v${highest.get(String(id))}`,
      );
    if (facts?.status === 'accepted') accepted.push({ ...facts.total, vendorId: facts.vendorId });
  }
  for (const id of highest.keys()) {
    if (![...stored.orders.keys()].some((stored) => String(stored) === id))
      problems.push(`order ${id} has history but no row in the orders table`);
  }
  const sales = new Map<string, { vendorId: string; currency: string; count: number; amount: number }>();
  for (const sale of accepted) {
    const key = `${sale.vendorId}#${sale.currency}`;
    const row = sales.get(key) ?? { vendorId: sale.vendorId, currency: sale.currency, count: 0, amount: 0 };
    row.count += 1;
    row.amount += sale.amount;
    sales.set(key, row);
  }
  const ledger = compareLedger([...sales.values()], stored.sales);
  if (ledger.length > 0)
    problems.push(
      `${ledger.length} ledger row(s) differ from the stored orders, e.g. ${JSON.stringify(ledger[0])}`,
    );
  return problems;
}

function rejectedViolations({ stored }: SeedObservation): string[] {
  const valid = stored.quarantined.filter((key) => !JUNK_IDS.has(key.split('/')[2] ?? ''));
  return [
    ...(valid.length > 0
      ? [`${valid.length} quarantined object(s) hold records that are not junk, e.g. ${valid[0]}`]
      : []),
    ...(stored.deadLettered > 0 ? [`${stored.deadLettered} message(s) dead-lettered`] : []),
  ];
}

function requestViolations(o: SeedObservation): string[] {
  const problems: string[] = [];
  o.runs.forEach((run, index) => {
    if (run.requests > REQUESTS_PER_PAGE * (run.pages + 1))
      problems.push(`run ${index + 1} made ${run.requests} partner requests for ${run.pages} page(s)`);
    if (run.ms > POLLER_TIMEOUT_MS)
      problems.push(
        `run ${index + 1} took ${Math.round(run.ms / 1000)} s, past the poller's ${POLLER_TIMEOUT_MS / 1000} s timeout`,
      );
  });
  const limit = REQUEST_DEADLINE_MS + REQUEST_SLACK_MS;
  const long = o.requests.filter((r) => (r.durationMs ?? o.now - (r.receivedAt ?? o.now)) > limit);
  if (long.length > 0) {
    const worst = Math.max(...long.map((r) => r.durationMs ?? o.now - (r.receivedAt ?? o.now)));
    problems.push(
      `${long.length} partner request(s) outlived the ${REQUEST_DEADLINE_MS / 1000} s total deadline (longest ${Math.round(worst / 1000)} s, ${long[0]?.fault ?? 'no fault'})`,
    );
  }
  return problems;
}

function resourceViolations(o: SeedObservation): string[] {
  const problems: string[] = [];
  const capMb = o.partner.pipeline.maxPageBodyBytes / 1024 / 1024;
  // infra/constructs/poller.ts: a page's worst case is 36 × the cap, beside the runtime; here the same
  // process also holds the consumer and the simulator, hence the allowance.
  const allowedMb = 36 * capMb + 160;
  if (o.peakRssGrowthMb !== undefined && o.peakRssGrowthMb > allowedMb)
    problems.push(
      `peak RSS grew ${Math.round(o.peakRssGrowthMb)} MB, over ${Math.round(allowedMb)} MB for a ${capMb} MiB cap`,
    );
  // Local mode's process: its whole pipeline (and tsx) beside the page.
  const localAllowedMb = 36 * capMb + LOCAL_MODE_BASELINE_MB;
  if (o.localPeakRssMb !== undefined && o.localPeakRssMb > localAllowedMb)
    problems.push(
      `local mode's peak RSS was ${Math.round(o.localPeakRssMb)} MB, over ${Math.round(localAllowedMb)} MB for a ${capMb} MiB cap`,
    );
  const largest = Math.max(0, ...o.requests.map((r) => r.bytes ?? 0));
  const allowedStall = allowedStallMs(largest, o.partner.pipeline.maxPageBodyBytes);
  if (o.maxStallMs !== undefined && o.maxStallMs > allowedStall)
    problems.push(
      `the event loop stood still for ${(o.maxStallMs / 1000).toFixed(1)} s (synchronous work), over ${(allowedStall / 1000).toFixed(1)} s for bodies of ${(largest / 1024).toFixed(0)} KiB at most`,
    );
  if (o.budget) {
    const { maxHoldAheadMs, maxRate, peakObservedRate, cap } = o.budget;
    if (maxHoldAheadMs > MAX_HOLD_MS)
      problems.push(`the token's budget held its feeds ${Math.round(maxHoldAheadMs / 60_000)} min ahead`);
    // With a cap the rate stays at or under it; without one, near what the feeds used (AIMD, issue 31).
    if (!Number.isFinite(maxRate) || maxRate > (cap ?? 2 * peakObservedRate + 1))
      problems.push(
        `the token's budget rate reached ${round(maxRate)}/s, while the feeds used at most ${round(peakObservedRate)}/s`,
      );
  }
  return problems;
}

const round = (value: number) => (Number.isFinite(value) ? Math.round(value * 10) / 10 : value);

/** Every violation of the seed, [] when it passed. */
export function violations(o: SeedObservation, stops: readonly DocumentedStop[]): string[] {
  return [
    ...endViolations(o, stops),
    ...dataViolations(o),
    ...rejectedViolations(o),
    ...requestViolations(o),
    ...resourceViolations(o),
    ...o.tokenSeenIn.map((where) => `the token appeared in ${where}`),
  ];
}

/** The version keys an oracle lists, for a history comparison. */
export function historyKey(entry: Record<string, unknown>): string {
  return keyOf(entry.orderId, entry.version);
}
