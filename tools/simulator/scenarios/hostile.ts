// Partners nobody scripted (issue 24): each serves ordinary generated orders (epoch-ms timestamps) and
// misbehaves in one way, described by its quirk (build.ts) or its faults (the catalogue, ../faults.ts) and
// carried out by server.ts. What a correct
// ingester ends with is in expectations.ts and in tools/simulator/README.md.

import type { SimOrder } from '../model.js';
import { generatedPoll, latestAtServeTime, MINUTE, present, type ScenarioDefinition } from './build.js';

/** The first of `values`, which must be there. */
const first = <T>(values: readonly T[]): T => present(values[0])[0] as T;

/** A single-poll stream of `versions` generated entries, for the scenarios whose data is not the point. */
const plain = (seed: number, idBase: number, versions = 12) =>
  latestAtServeTime(generatedPoll({ seed, idBase, versions, vendors: 2 }));

/** `bytes` characters of filler text: long values, few of them (moto is slow on items with many attributes). */
function filler(label: string, bytes: number): string {
  return `${label}: ${'picked aisle by aisle, bagged cold with cold; '.repeat(Math.ceil(bytes / 46))}`.slice(
    0,
    bytes,
  );
}

/** About 150 KB per version: the first item's name carries 150,000 characters. */
function large(order: SimOrder): SimOrder {
  return {
    ...order,
    items: order.items.map((item, index) =>
      index === 0 ? { ...item, name: filler(item.name, 150_000) } : item,
    ),
  };
}

// 75 versions of ~150 KB: a page of 100 (the default pageSize) is about 11 MB, over the 10 MiB body cap.
export const largeOrders: ScenarioDefinition = {
  id: 'large-orders',
  summary: '75 versions of ~150 KB each: a page of 100 is ~11 MB, over the 10 MiB body cap',
  polls: latestAtServeTime(
    generatedPoll({ seed: 118, idBase: 3_018_000_000, versions: 75, vendors: 2 }).map((poll) =>
      poll.map(large),
    ),
  ),
};

export const trickle: ScenarioDefinition = {
  id: 'trickle',
  summary: '12 versions; the first page request sends its body one byte a second (once per token)',
  polls: plain(119, 3_019_000_000),
  faults: { trickle: 1, limits: { trickle: 1 } },
};

export const redirect: ScenarioDefinition = {
  id: 'redirect',
  summary: '12 versions; the first page request answers 302 to a login page, Location with a query (once)',
  polls: plain(120, 3_020_000_000),
  faults: { redirect: 1, limits: { redirect: 1 } },
};

export const html200: ScenarioDefinition = {
  id: 'html-200',
  summary: '12 versions; the first two page requests answer 200 with an HTML maintenance page',
  polls: plain(121, 3_021_000_000),
  faults: { nonPage200: 1, nonPageBodies: ['html'], limits: { 'non-page-200': 2 } },
};

export const cursorCycle: ScenarioDefinition = {
  id: 'cursor-cycle',
  summary:
    '9 versions in pages of 3; the third page hands back the second page’s cursor: A → B → A, with data',
  polls: plain(122, 3_022_000_000, 9),
  quirk: { kind: 'cursor-cycle', segment: 3 },
  stop: 'stuck-cursor',
};

// Four distinct invalid records (no fields, no version, an unknown status, a string version), 7,500 times each.
const FLOOD_RECORDS = [
  {},
  { id: 3_023_000_901 },
  { id: 3_023_000_902, version: 1, status: 'shipped' },
  { id: 3_023_000_903, version: 'one' },
] as const;

// Three orders of 10 versions, then three more served beyond the flood: newer versions of two of those orders
// (3023000064 accepted: a sale; 3023000057 cancelled: its sale reversed) and a new order.
const [floodStream = []] = generatedPoll({ seed: 123, idBase: 3_023_000_000, versions: 10, vendors: 2 });
const [accepted57, placed64] = present(floodStream[8], floodStream[9]) as [SimOrder, SimOrder];
const beyondFlood: SimOrder[] = [
  { ...placed64, version: 2, status: 'accepted', acceptedAt: placed64.placedAt + 4 * MINUTE },
  { ...accepted57, version: 3, status: 'cancelled', cancelledAt: accepted57.placedAt + 30 * MINUTE },
  { ...accepted57, id: 3_023_000_950, version: 1 },
];

export const recordFlood: ScenarioDefinition = {
  id: 'record-flood',
  summary:
    '13 versions; the first page also carries 30,000 tiny invalid records (4 distinct), whatever pageSize, before its last 3 versions',
  polls: latestAtServeTime([[...floodStream, ...beyondFlood]]),
  quirk: { kind: 'record-flood', records: FLOOD_RECORDS, copies: 7_500, after: beyondFlood.length },
};

const overLongPoll = first(plain(124, 3_024_000_000));
const template = first(overLongPoll).order;
/** A vendorId over 2 KB: the sales index key would exceed DynamoDB's 2,048-byte limit. */
const overLongVendor: SimOrder = {
  ...template,
  id: 3_024_000_999,
  version: 1,
  vendorId: filler('vendor', 3_000),
};

export const overLongValues: ScenarioDefinition = {
  id: 'over-long-values',
  summary:
    '13 versions, one with a 3,000-character vendorId; the first page request carries a 450 KB nextPageId',
  polls: [
    [...overLongPoll.slice(0, 5), { order: overLongVendor, latestVersion: true }, ...overLongPoll.slice(5)],
  ],
  quirk: { kind: 'over-long-cursor', bytes: 450_000 },
  refusedOrderIds: [overLongVendor.id],
};

// Poll 1 (30 versions) ends with a cursor that has expired when asked; the replay from the start ends at the
// same place with a fresh cursor, which then serves poll 2 (45 more versions).
const deep = first(generatedPoll({ seed: 125, idBase: 3_025_000_000, versions: 75, vendors: 2 }));
export const deepExpiry: ScenarioDefinition = {
  id: 'deep-expiry',
  summary: '30 versions, whose last cursor has expired when asked (once); then 45 more after the replay',
  polls: latestAtServeTime([deep.slice(0, 30), deep.slice(30)]),
  quirk: { kind: 'deep-expiry' },
};
