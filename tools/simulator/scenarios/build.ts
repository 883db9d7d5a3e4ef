// Helpers for the canned scenarios: times are ms relative to the simulator's anchor (its start time), so
// `ago(30)` is "30 minutes before the simulator started"; `latestAtServeTime` sets `latestVersion` the
// way the service would when each poll is served.

import { buildStream, generateHistories } from '../generated-feed.js';
import { cloneDraft, type ItemDraft, materialize, type OrderDraft, type SimOrder } from '../model.js';
import type { AnyScenarioId, FaultOptions } from '../types.js';

export const MINUTE = 60_000;

/** Minutes before the anchor, as a relative timestamp (whole seconds). */
export const ago = (minutes: number): number => -Math.round(minutes * 60) * 1000;

export interface ScenarioEntry {
  order: SimOrder;
  latestVersion: boolean;
}

/**
 * How a hostile scenario misbehaves with its own data (scenarios/hostile.ts); what it does to requests, it
 * declares as `faults` like any named fault. The once ones count per token, like the stateful spec scenarios,
 * but a request without pageId does not reset them: a recovery must get past them.
 */
export type ScenarioQuirk =
  /** Pages end at multiples of `segment`; the last page hands back the cursor of the second: A → B → A. */
  | { kind: 'cursor-cycle'; segment: number }
  /**
   * The first page (no pageId) also carries `copies` copies of each of `records` (invalid), whatever pageSize,
   * before its last `after` entries.
   */
  | { kind: 'record-flood'; records: readonly unknown[]; copies: number; after: number }
  /** The first page request answers its page with a nextPageId of `bytes` characters. */
  | { kind: 'over-long-cursor'; bytes: number }
  /** The cursor at the end of poll 1 answers 404 pageId not found the first time it is asked. */
  | { kind: 'deep-expiry' };

export interface ScenarioDefinition {
  id: AnyScenarioId;
  /** One line on what the scenario serves (printed by the CLI). */
  summary: string;
  /** The stream, split into polls: each poll's last page has hasMore false; its cursor leads to the next poll. */
  polls: ScenarioEntry[][];
  quirk?: ScenarioQuirk;
  /**
   * The catalogue's faults (../faults.ts) on this scenario's page requests, per token, with dice of their own
   * (seed default 1): e.g. `{ encoding: 1, codings: ['gzip'] }` codes every answer; a fault with probability 1
   * and a limit of 1 fires on the first page request (after `afterRequests` unfaulted ones).
   */
  faults?: Omit<FaultOptions, 'seed'> & { seed?: number };
  /** Orders a correct ingester quarantines at ingestion (e.g. a vendorId too long for a key): never stored. */
  refusedOrderIds?: readonly number[];
  /** Distinct invalid records its faults flood pages with: a correct ingester quarantines each once. */
  junkRecords?: number;
  /** Orders no ingester can read (one over the body cap, where the feed stops): never stored, never quarantined. */
  unreadableOrderIds?: readonly number[];
  /** The poll outcome a correct ingester stops at (a documented stop); absent: it drains the stream. */
  stop?: string;
}

/** A product line; `extra` adds barcode, options, details, etc. */
export function product(
  id: string,
  name: string,
  price: number,
  quantity: number,
  extra: Partial<ItemDraft> = {},
): ItemDraft {
  return {
    id,
    name,
    type: 'product',
    price,
    quantityOrdered: quantity,
    quantityFulfilled: quantity,
    ...extra,
  };
}

/** Materialises successive versions: each step receives a copy of the previous draft to change. */
export function versions(first: OrderDraft, ...steps: Array<(draft: OrderDraft) => void>): SimOrder[] {
  const out = [materialize(first)];
  let draft = first;
  for (const step of steps) {
    draft = cloneDraft(draft);
    draft.version += 1;
    step(draft);
    out.push(materialize(draft));
  }
  return out;
}

/** latestVersion = no higher version of the order was served in this poll or an earlier one. */
export function latestAtServeTime(polls: SimOrder[][]): ScenarioEntry[][] {
  const known = new Map<number, number>();
  return polls.map((poll) => {
    for (const order of poll) known.set(order.id, Math.max(order.version, known.get(order.id) ?? 0));
    return poll.map((order) => ({ order, latestVersion: order.version === known.get(order.id) }));
  });
}

/** A bulk single-poll stream from the feed generator (epoch-ms timestamps, as the sample payloads). */
export function generatedPoll(options: {
  seed: number;
  idBase: number;
  versions: number;
  vendors: number;
}): SimOrder[][] {
  const histories = generateHistories({
    seed: options.seed,
    orders: options.versions,
    vendors: options.vendors,
    currencies: ['EUR'],
    idBase: options.idBase,
    spanMs: 2 * 24 * 60 * MINUTE,
    timestamps: 'epoch',
  });
  const stream = buildStream(histories, { seed: options.seed }, ago(5));
  return [stream.slice(0, options.versions).map((entry) => entry.order)];
}

/** The values, asserting none is missing (destructured versions are `T | undefined` under strict indexing). */
export function present<T>(...values: Array<T | undefined>): T[] {
  return values.map((value, index) => {
    if (value === undefined) throw new Error(`scenario data: value ${index} is missing`);
    return value;
  });
}
