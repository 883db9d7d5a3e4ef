// `npm run chaos` as a user runs it (a child process), on the small feed: every kind of kill happens and
// the pipeline still ends exact. Nothing timed is asserted. The verdict and kill-plan logic is checked
// on its own first, so a chaos PASS cannot come from a comparison that never fails.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExpectedOrder } from '../../../tools/simulator/index.js';
import { KILL_KINDS, planKills } from '../../chaos/kill-plan.js';
import type { ChaosReport } from '../../chaos/report.js';
import { compareLedger, compareOrders } from '../../chaos/verify.js';
import { runLabCommand } from './lab-command.js';

const runChaos = (args: string[]) => runLabCommand('lab/chaos/run.ts', args);

const order = (id: number, version: number, overrides: Partial<ExpectedOrder> = {}): ExpectedOrder => ({
  id,
  version,
  status: 'accepted',
  vendorId: 'vendor-1',
  total: { amount: 1000, currency: 'EUR' },
  ...overrides,
});
const stored = (o: ExpectedOrder): Record<string, unknown> => ({ orderId: o.id, ...o });

describe('chaos verdict', () => {
  it('counts a missing order and an older stored version as lost', () => {
    const expected = new Map([
      [1, order(1, 3)],
      [2, order(2, 2)],
      [3, order(3, 1)],
    ]);
    const table = new Map([
      [2, stored(order(2, 1))],
      [3, stored(order(3, 1))],
    ]);

    const verdict = compareOrders(expected, table);

    expect(verdict.lost.map((issue) => [issue.orderId, issue.problem])).toEqual([
      [1, 'missing'],
      [2, 'older'],
    ]);
    expect(verdict.wrong).toEqual([]);
  });

  it('counts other content at the same version, a version never served and an unknown order as wrong', () => {
    const expected = new Map([
      [1, order(1, 2)],
      [2, order(2, 2)],
    ]);
    const table = new Map([
      [1, stored(order(1, 2, { status: 'cancelled' }))],
      [2, stored(order(2, 3))],
      [9, stored(order(9, 1))],
    ]);

    const verdict = compareOrders(expected, table);

    expect(verdict.lost).toEqual([]);
    expect(verdict.wrong.map((issue) => [issue.orderId, issue.problem])).toEqual([
      [1, 'content'],
      [2, 'newer-than-served'],
      [9, 'never-served'],
    ]);
  });

  it('reports every ledger row that differs or exists on one side only', () => {
    const expected = [
      { vendorId: 'vendor-1', currency: 'EUR', count: 2, amount: 300 },
      { vendorId: 'vendor-2', currency: 'EUR', count: 1, amount: 100 },
    ];
    const actual = [
      { vendorId: 'vendor-1', currency: 'EUR', count: 2, amount: 300 },
      { vendorId: 'vendor-2', currency: 'EUR', count: 1, amount: 90 },
      { vendorId: 'vendor-3', currency: 'GBP', count: 1, amount: 50 },
    ];

    expect(compareLedger(expected, expected)).toEqual([]);
    expect(compareLedger(expected, actual).map((row) => `${row.vendorId}#${row.currency}`)).toEqual([
      'vendor-2#EUR',
      'vendor-3#GBP',
    ]);
  });

  it('plans kills of every kind in rounds, the same for the same seed', () => {
    const sizes = { maxPage: 3, minDelayMs: 500, maxDelayMs: 6000 };

    const plan = planKills(7, 6, sizes);

    expect(planKills(7, 6, sizes)).toEqual(plan);
    for (const kind of KILL_KINDS) expect(plan.filter((point) => point.kind === kind)).toHaveLength(2);
    expect(planKills(7, 3, sizes, true).map((point) => point.kind)).toEqual([...KILL_KINDS]);
  });
});

describe('npm run chaos', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'chaos-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints usage and exits 2 on an unknown flag', async () => {
    const result = await runChaos(['--sed', '3']);

    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Usage: npm run chaos');
  });

  it('--quick kills local mode at each kind of point and still ends with nothing lost or wrong', async () => {
    const out = path.join(dir, 'quick.json');

    const result = await runChaos(['--quick', '--seed', '7', '--out', out]);

    const output = `${result.stdout}\n${result.stderr.slice(-4000)}`;
    const report = JSON.parse(await readFile(out, 'utf8').catch(() => 'null')) as ChaosReport | null;
    expect(report, output).not.toBeNull();
    if (!report) return;
    // Soft: a failing run reports every fact that does not hold, not just the first.
    expect.soft(report.lost, 'lost').toBe(0);
    expect.soft(report.wrong, 'wrong').toBe(0);
    expect.soft(report.lostOrders).toEqual([]);
    expect.soft(report.wrongOrders).toEqual([]);
    expect.soft(report.ledger.equal, 'ledger equal').toBe(true);
    expect.soft(report.ledger.actualRows).toBe(report.ledger.expectedRows);
    expect.soft(report.storedOrders).toBe(report.feed.orders);
    for (const kind of KILL_KINDS) expect.soft(report.kills.byKind[kind], kind).toBeGreaterThanOrEqual(1);
    expect.soft(report.runs.at(-1)?.ended).toBe('exit 0');
    expect.soft(report.poison, 'poison message').toMatchObject({
      planted: true,
      inDeadLetterQueue: true,
      inTable: false,
      deletes: [],
    });
    expect.soft(report.rejected.deadLettered).toBeGreaterThanOrEqual(1);
    expect.soft(report.faults.total).toBeGreaterThan(0);
    expect.soft(report.feed.versionsServed).toBeGreaterThanOrEqual(report.feed.distinctVersions);
    expect(report.failures).toEqual([]);
    expect(result.code, output).toBe(0);
  }, 240_000);
});
