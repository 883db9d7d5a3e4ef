// Several feeds in one deployment, end to end: the stack deployed into moto with three feeds (two that shard
// the vendors, one that reads them all and so overlaps both), their pollers run side by side by local mode.
// Each feed keeps its own cursor and lease; the partner sees each feed's filter; and the orders table and
// sales ledger are exactly what one clean single-feed run leaves (the version guard absorbs the overlap).
// The partner limits the token the three feeds share (the simulator's per-token bucket), so they pace
// themselves through the token's shared request budget, and the table, ledger and history stay exact.
// Also how `npm start -- --shards` deals the vendors (its usage errors: test/unit/local/start-cli.test.ts).
import { paginateScan } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalAwsClients,
  type LocalAwsClients,
  type LocalSummary,
  parseAwsEndpoint,
  runLocal,
  shardFeeds,
} from '../../tools/local/runtime.js';
import { generatedVendorIds } from '../../tools/simulator/generated-feed.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { expectedTableAndLedger, tableAndLedger } from './cli.js';

const TOKEN = 'feeds-test-token-0b6f3a1d';
const FEEDS = [
  { id: 'eu', vendorIds: ['vendor-1', 'vendor-2'] },
  { id: 'uk', vendorIds: ['vendor-3', 'vendor-4', 'vendor-5'] },
  { id: 'everything' },
];

let moto: RunningMoto;
let aws: LocalAwsClients;
let sim: RunningSimulator;
let summary: LocalSummary;

beforeAll(async () => {
  moto = await startMoto();
  aws = createLocalAwsClients(parseAwsEndpoint(moto.endpoint));
  sim = await startSimulator({
    token: TOKEN,
    // Enough that each feed pages more than once, so their cursors differ (with 40 orders two feeds ended on
    // one pageId, and the per-feed cursor assertion below could not tell them apart).
    feed: { seed: 7, orders: 100 },
    tokenRateLimit: { requestsPerSecond: 4, burst: 2 },
  });
  summary = await runLocal({
    apiUrl: sim.url,
    token: TOKEN,
    awsEndpoint: moto.endpoint,
    feeds: FEEDS,
  }).done;
}, 240_000);

afterAll(async () => {
  aws?.destroy();
  await sim?.close();
  await moto?.stop();
});

async function cursorItems(): Promise<Record<string, Record<string, unknown>>> {
  const items: Record<string, Record<string, unknown>> = {};
  for await (const page of paginateScan({ client: aws.dynamo }, { TableName: summary.cursorTable })) {
    for (const raw of page.Items ?? []) {
      const item = unmarshall(raw);
      if (typeof item.feedId === 'string' && !item.feedId.includes('#')) items[item.feedId] = item;
    }
  }
  return items;
}

describe('three feeds, two sharding the vendors and one overlapping both', () => {
  it('drains into exactly the table and ledger of one clean run, nothing dead-lettered or quarantined', async () => {
    expect(summary.outcome).toBe('drained');
    expect(await tableAndLedger(aws, summary.ordersTable)).toEqual(expectedTableAndLedger(sim.expected()));
    expect(summary.deadLettered).toBe(0);
    expect(summary.quarantined).toEqual([]);
    // Every version once in the history, however often the overlap or a 429's retry fetched it.
    expect(summary.history?.entries).toBe(sim.expected().distinctVersions);
  });

  it("takes the three feeds' requests from one budget for their shared token", async () => {
    const budgets: string[] = [];
    for await (const page of paginateScan({ client: aws.dynamo }, { TableName: summary.cursorTable })) {
      for (const raw of page.Items ?? []) {
        const { feedId } = unmarshall(raw);
        if (typeof feedId === 'string' && feedId.startsWith('budget#') && !feedId.endsWith('#429s'))
          budgets.push(feedId);
      }
    }

    expect(budgets).toHaveLength(1);
  });

  it('keeps one cursor item per feed, each caught up with its own cursor and no lease left', async () => {
    const items = await cursorItems();

    expect(Object.keys(items).sort()).toEqual(['eu', 'everything', 'uk']);
    for (const item of Object.values(items)) {
      expect(item.leaseOwner).toBeUndefined();
      expect(item.lastCaughtUpAt).toEqual(expect.any(String));
      expect(item.revision).toBeGreaterThan(0);
    }
    const cursors = Object.values(items).map((item) => item.pageId);
    expect(new Set(cursors).size).toBe(3);
  });

  it("asked the partner with each feed's own vendor filter, and without one for the feed of all vendors", () => {
    const streamQueries = sim.requests
      .filter((request) => request.url.startsWith('/v1/orderUpdates'))
      .map((request) => new URL(request.url, 'http://x').searchParams.getAll('vendorIds').join(','));

    expect(new Set(streamQueries)).toEqual(new Set(['vendor-1,vendor-2', 'vendor-3,vendor-4,vendor-5', '']));
  });
});

describe('npm start -- --shards', () => {
  it('deals the generated feed’s vendors over the shards, every vendor exactly once', () => {
    const feeds = shardFeeds(3);

    expect(feeds.map((feed) => feed.id)).toEqual(['shard-1', 'shard-2', 'shard-3']);
    expect(feeds.flatMap((feed) => feed.vendorIds ?? []).sort()).toEqual(generatedVendorIds().sort());
  });
});
