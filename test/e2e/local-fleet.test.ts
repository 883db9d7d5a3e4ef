// `npm start -- --feeds N` (tools/local/fleet.ts) through its CLI as a user runs it: a fleet of 50 feeds
// registered at runtime, the dispatcher and the poller batches run in-process, one feed on a revoked token.
// Then `npm run ops -- feeds list` and `status` (in-process, as the CLI runs them) against the emulator it ran in. The oracle is the generated
// feed itself, rebuilt here from the same options (same seed, orders and vendors: the same feed).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paginateScan } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocalAwsClients, type LocalAwsClients, parseAwsEndpoint } from '../../tools/local/runtime.js';
import { startSimulator } from '../../tools/simulator/index.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { runOpsCaptured } from '../support/ops.js';
import { expectedTableAndLedger, killRunning, readSummaryFile, runCli, tableAndLedger } from './cli.js';

const FEEDS = 49;
const ORDERS = 60;
const SEED = 11;
const workDir = mkdtempSync(join(tmpdir(), 'local-fleet-test-'));
let moto: RunningMoto;
let aws: LocalAwsClients;

beforeAll(async () => {
  moto = await startMoto();
  aws = createLocalAwsClients(parseAwsEndpoint(moto.endpoint));
});
afterEach(killRunning);
afterAll(async () => {
  aws?.destroy();
  await moto?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

/** What the generated feed of these options serves: the latest version of each order, the sales, the versions. */
async function oracle() {
  const sim = await startSimulator({ token: 'oracle', feed: { seed: SEED, orders: ORDERS, vendors: FEEDS } });
  try {
    return sim.expected();
  } finally {
    await sim.close();
  }
}

/** Every history entry as `orderId:version`. */
async function historyEntries(table: string): Promise<string[]> {
  const entries: string[] = [];
  const pages = paginateScan(
    { client: aws.dynamo },
    { TableName: table, ProjectionExpression: 'orderId, version', ConsistentRead: true },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) entries.push(`${item.orderId?.N}:${item.version?.N}`);
  }
  return entries;
}

describe('npm start -- --feeds N', () => {
  it('drains a fleet of 50 feeds on shared tokens into exactly the feed’s table, ledger and history, while the feed on a revoked token stops alone with its reason in ops', async () => {
    const summaryPath = join(workDir, 'fleet.json');

    const run = await runCli([
      ...['--aws-endpoint', moto.endpoint, '--feeds', String(FEEDS), '--revoked-token-feeds', '1'],
      ...['--orders', String(ORDERS), '--seed', String(SEED), '--summary-json', summaryPath],
    ]);

    // The fleet ends as its worst feed: the refused token (exit 3), once every other feed drained.
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.stderr).toContain('for 1 feed(s): revoked-1; the other feeds went on');
    const summary = readSummaryFile(summaryPath);
    const feeds = summary.feeds ?? [];
    expect(feeds).toHaveLength(FEEDS + 1);
    const healthy = feeds.filter((feed) => !feed.revokedToken);
    expect(healthy.every((feed) => feed.outcome === 'drained' && feed.lastRun === 'caught-up')).toBe(true);
    // Distinct vendor sets, four feeds to a token parameter (one request budget each).
    const vendors = healthy.flatMap((feed) => feed.vendorIds);
    expect(new Set(vendors).size).toBe(vendors.length);
    expect(new Set(healthy.map((feed) => feed.tokenParameter)).size).toBe(Math.ceil(FEEDS / 4));
    const [revoked] = feeds.filter((feed) => feed.revokedToken);
    expect(revoked).toMatchObject({ feedId: 'revoked-1', outcome: 'auth-failed', lastRun: 'auth-failed' });
    expect(revoked?.stopReason).toContain('401');
    expect(revoked?.counters.versionsPublished).toBe(0);

    // Totals: the table, ledger and history are exactly the generated feed's (the revoked feed re-reads
    // feed-001's vendors, so nothing of the feed is left unread).
    const expected = await oracle();
    expect(summary).toMatchObject({
      outcome: 'auth-failed',
      orders: expected.orders.size,
      matchesExpected: { orders: true, sales: true },
      deadLettered: 0,
      queueDepth: 0,
      quarantined: [],
    });
    expect(summary.counters.versionsPublished).toBe(
      feeds.reduce((sum, feed) => sum + feed.counters.versionsPublished, 0),
    );
    expect(await tableAndLedger(aws, summary.ordersTable)).toEqual(expectedTableAndLedger(expected));
    const history = await historyEntries(summary.history?.table ?? '');
    expect(history).toHaveLength(expected.distinctVersions);
    expect(summary.history?.entries).toBe(expected.distinctVersions);
    for (const order of expected.orders.values()) expect(history).toContain(`${order.id}:${order.version}`);

    // npm run ops against the emulator local mode ran in: the fleet's rows, the deployment's own feed paused.
    const ops = (...args: string[]) => runOpsCaptured([...args, '--aws-endpoint', moto.endpoint]);
    const list = await ops('feeds', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<{
      feedId: string;
      state: string;
      authBackoffUntil?: string;
      cursor: { lastRunOutcome?: string };
    }>;
    const byId = new Map(rows.map((row) => [row.feedId, row]));
    expect(rows).toHaveLength(FEEDS + 2);
    expect(byId.get('orders')?.state).toBe('paused');
    expect(byId.get('feed-001')?.cursor.lastRunOutcome).toBe('caught-up');
    expect(byId.get('revoked-1')).toMatchObject({ cursor: { lastRunOutcome: 'auth-failed' } });
    expect(byId.get('revoked-1')?.authBackoffUntil).toBeDefined();
    const status = await ops('status', '--feed', 'revoked-1');
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('auth-failed');
  }, 180_000);
});
