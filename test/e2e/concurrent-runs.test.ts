// Two `npm start` processes at once against one fresh emulator and one partner API: both try to deploy
// (one deploys, the other waits for its stack and reuses it), both poll and consume concurrently under
// the pipeline's lease, fencing and version guard, and both must end drained with the table and ledger
// of one clean run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLocalAwsClients, type LocalAwsClients, parseAwsEndpoint } from '../../tools/local/runtime.js';
import { type RunningSimulator, startSimulator } from '../../tools/simulator/index.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { expectedTableAndLedger, readSummaryFile, runCli, tableAndLedger } from './cli.js';

const TOKEN = 'local-mode-concurrency-token-90c2a4';
const workDir = mkdtempSync(join(tmpdir(), 'local-mode-concurrent-'));
let moto: RunningMoto;
let aws: LocalAwsClients;
let sim: RunningSimulator;

beforeAll(async () => {
  moto = await startMoto();
  aws = createLocalAwsClients(parseAwsEndpoint(moto.endpoint));
  sim = await startSimulator({ token: TOKEN, feed: { seed: 23, orders: 250 } });
});
afterAll(async () => {
  aws?.destroy();
  await sim?.close();
  await moto?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

it('two processes started together on a fresh emulator deploy once and end with the table and ledger of one run', async () => {
  const args = (name: string) => [
    '--aws-endpoint',
    moto.endpoint,
    '--api-url',
    sim.url,
    '--summary-json',
    join(workDir, `${name}.json`),
  ];
  const env = { PARTNER_API_TOKEN: TOKEN };

  const [a, b] = await Promise.all([runCli(args('a'), env), runCli(args('b'), env)]);

  expect(a.code, a.stdout + a.stderr).toBe(0);
  expect(b.code, b.stdout + b.stderr).toBe(0);
  const summaries = [readSummaryFile(join(workDir, 'a.json')), readSummaryFile(join(workDir, 'b.json'))];
  expect(summaries.map((summary) => summary.deploy?.deployed).sort()).toEqual([false, true]);
  expect(summaries.map((summary) => summary.outcome)).toEqual(['drained', 'drained']);
  const [first, second] = summaries;
  expect(second?.ordersTable).toBe(first?.ordersTable);
  const expected = sim.expected();
  expect(await tableAndLedger(aws, first?.ordersTable ?? '')).toEqual(expectedTableAndLedger(expected));
  for (const summary of summaries) {
    expect(summary).toMatchObject({ sales: expected.sales, deadLettered: 0, queueDepth: 0 });
  }
  // Between them they applied every version at least once.
  const processed = summaries.reduce((sum, s) => sum + s.counters.applied + s.counters.stale, 0);
  expect(processed).toBeGreaterThanOrEqual(expected.distinctVersions);
}, 300_000);
