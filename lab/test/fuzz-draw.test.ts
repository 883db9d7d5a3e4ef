// The fuzzer's pure parts: a seed draws the same partner every time, the fast profile draws nothing that
// takes real time, every stop a fault may cause is one the runbook documents, the invariants find what they
// name, and the command line refuses what it does not know.
import { describe, expect, it } from 'vitest';
import { BUDGET_POLICY } from '../../functions/core/ingest/request-budget.js';
import { UsageError } from '../../tools/cli-args.js';
import { FAULT_CATALOGUE } from '../../tools/simulator/faults.js';
import type { Fault, Oracle } from '../../tools/simulator/types.js';
import { drawPartner } from '../fuzz/draw.js';
import { replayCommand, type SeedReport } from '../fuzz/fuzz.js';
import { type SeedObservation, violations } from '../fuzz/invariants.js';
import { answeredNoPage, rateLimitWaitsMs, stalledMs } from '../fuzz/observe.js';
import { parseFuzzArgs } from '../fuzz/options.js';
import { seedLines, totals } from '../fuzz/report.js';
import { documentedStops, runbookStops } from '../fuzz/runbook.js';

describe('drawing a partner', () => {
  it('draws the same partner for the same seed and profile, another for another seed', () => {
    for (const seed of [1, 7, 123_456]) {
      expect(drawPartner(seed, 'full')).toEqual(drawPartner(seed, 'full'));
      expect(drawPartner(seed, 'fast')).toEqual(drawPartner(seed, 'fast'));
    }
    const partners = Array.from({ length: 20 }, (_, seed) => JSON.stringify(drawPartner(seed, 'full')));
    expect(new Set(partners).size).toBe(20);
  });

  it('over many seeds switches on every fault of the catalogue, composed, in both profiles', () => {
    for (const profile of ['fast', 'full'] as const) {
      const partners = Array.from({ length: 400 }, (_, seed) => drawPartner(seed, profile));
      const drawn = new Set(partners.flatMap((partner) => partner.kinds));
      expect([...drawn].sort()).toEqual(FAULT_CATALOGUE.map((entry) => entry.fault).sort());
      expect(partners.filter((partner) => partner.kinds.length >= 4).length).toBeGreaterThan(100);
    }
  });

  it('keeps the fast profile in-process and quick: no wait of seconds, no outage of minutes, no far-future 429', () => {
    for (let seed = 0; seed < 400; seed++) {
      const { mode, faults, feed } = drawPartner(seed, 'fast');
      expect(mode).toBe('in-process');
      expect(faults.slowMs ?? 0).toBeLessThanOrEqual(1_500);
      expect(faults.trickleIntervalMs ?? 0).toBeLessThanOrEqual(20);
      expect(Math.max(0, ...(faults.outages ?? []).map((w) => w.afterMs + w.forMs))).toBeLessThanOrEqual(
        4_000,
      );
      expect(faults.retryAfterForms ?? []).not.toContain('far-future-date');
      expect(faults.retryAfterForms ?? []).not.toContain('far-future-seconds');
      expect(feed.orders).toBeLessThanOrEqual(25);
    }
  });

  it('sends the full profile’s outages of half a minute and more through local mode, at its defaults', () => {
    const outages = Array.from({ length: 400 }, (_, seed) => drawPartner(seed, 'full')).filter(
      (partner) => partner.timedFaultsMs >= 30_000,
    );
    expect(outages.length).toBeGreaterThan(0);
    for (const partner of outages) {
      expect(partner.mode).toBe('local');
      expect(partner.pipeline).toMatchObject({
        pageSize: 100,
        maxPagesPerRun: 1,
        maxPageBodyBytes: 8 * 1024 * 1024,
      });
    }
  });

  it('prints the command that replays a seed', () => {
    expect(replayCommand(17, 'full')).toBe('npm run fuzz -- --seed 17');
    expect(replayCommand(3, 'fast', 'in-process')).toBe(
      'npm run fuzz -- --seed 3 --profile fast --in-process',
    );
  });
});

describe('documented stops', () => {
  it('reads the runbook’s stop table: each outcome with its alarm’s metric', () => {
    const stops = runbookStops();
    expect(stops).toContainEqual(expect.objectContaining({ outcome: 'stuck-cursor', alarm: 'StuckCursor' }));
    expect(stops).toContainEqual(
      expect.objectContaining({ outcome: 'order-over-body-cap', alarm: 'OrderOverBodyCap' }),
    );
    expect(stops).toContainEqual(expect.objectContaining({ outcome: 'auth-failed', alarm: 'AuthFailures' }));
  });

  it('documents every stop a fault of the catalogue may cause', () => {
    const documented = new Set(runbookStops().map((stop) => stop.outcome));
    const outcomes = FAULT_CATALOGUE.flatMap((entry) =>
      entry.class.kind === 'exact' ? [] : [entry.class.outcome],
    );
    expect(outcomes.filter((outcome) => !documented.has(outcome))).toEqual([]);
  });

  it('refuses a runbook without the table', () => {
    expect(() => documentedStops('# Runbook\nnothing here')).toThrow(/no stop table/);
  });
});

describe('the invariants', () => {
  const oracle = (keys: string[]): Oracle => {
    const orders = new Map(
      keys.map((key) => {
        const [id = 0, version = 0] = key.split(':').map(Number);
        return [
          id,
          {
            id,
            version,
            status: 'accepted' as const,
            vendorId: 'v',
            total: { amount: 100, currency: 'EUR' },
          },
        ];
      }),
    );
    return {
      orders,
      sales: [{ vendorId: 'v', currency: 'EUR', count: orders.size, amount: 100 * orders.size }],
      distinctVersions: keys.length,
      versionKeys: new Set(keys),
      entries: keys.length,
    };
  };
  const stored = (keys: string[]) => ({
    orders: new Map(
      keys.map((key) => {
        const [id = 0, version = 0] = key.split(':').map(Number);
        return [
          id,
          { id, version, status: 'accepted', vendorId: 'v', total: { amount: 100, currency: 'EUR' } },
        ];
      }),
    ),
    history: new Set(keys),
    sales: [{ vendorId: 'v', currency: 'EUR', count: keys.length, amount: 100 * keys.length }],
    quarantined: [],
    deadLettered: 0,
  });
  const base = (): SeedObservation => ({
    partner: drawPartner(1, 'fast'),
    end: { kind: 'drained' },
    stream: oracle(['1:1', '2:3']),
    delivered: oracle(['1:1', '2:3']),
    deliveredBeforeCursor: oracle(['1:1', '2:3']),
    stored: stored(['1:1', '2:3']),
    runs: [{ outcome: 'caught-up', ms: 100, pages: 1, requests: 2 }],
    requests: [
      { method: 'GET', url: '/v1/orderUpdates', authorization: 'Bearer t', status: 200, durationMs: 10 },
    ],
    metrics: {},
    tokenSeenIn: [],
    now: Date.now(),
  });
  const stops = runbookStops();

  it('pass a run that drained to exactly the stream', () => {
    expect(violations(base(), stops)).toEqual([]);
  });

  it('find a lost order, a version the history lacks, a valid record quarantined, a dead letter', () => {
    const o = base();
    o.stored = {
      ...stored(['1:1']),
      quarantined: ['quarantine/f/2/3-abc.json', 'quarantine/f/unidentified/unknown-x.json'],
      deadLettered: 1,
    };
    const found = violations(o, stops).join('\n');
    expect(found).toMatch(/1 order\(s\) lost/);
    expect(found).toMatch(/history lacks 1 version/);
    expect(found).toMatch(/1 quarantined object\(s\) hold records that are not junk/);
    expect(found).toMatch(/1 message\(s\) dead-lettered/);
  });

  it('find a stop the runbook does not list, one no fault allows, and one whose alarm never counted', () => {
    const o = base();
    o.end = { kind: 'stopped', outcome: 'gave-up' };
    expect(violations(o, stops).join('\n')).toMatch(/does not list/);
    o.end = { kind: 'stopped', outcome: 'stuck-cursor' };
    o.partner = { ...o.partner, stops: { must: [], may: [] } };
    const found = violations(o, stops).join('\n');
    expect(found).toMatch(/every fault of this partner is one a feed gets past/);
    expect(found).toMatch(/StuckCursor was never counted/);
  });

  it('find a stopped run that lost what was delivered before its cursor, or stored what never was', () => {
    const o = base();
    o.end = { kind: 'stopped', outcome: 'stuck-cursor' };
    o.metrics = { StuckCursor: 3 };
    o.partner = { ...o.partner, stops: { must: ['stuck-cursor'], may: ['stuck-cursor'] } };
    o.delivered = oracle(['1:1', '2:3']);
    o.deliveredBeforeCursor = oracle(['1:1', '2:3']);
    o.stored = stored(['1:1', '3:1']);
    const found = violations(o, stops).join('\n');
    expect(found).toMatch(/never delivered, e.g. 3:1/);
    expect(found).toMatch(/delivered before the stored cursor are not in the history, e.g. 2:3/);
  });

  it('find no progress, a request past its deadline, a tight loop, a long run, memory, a stall, a held token, the token', () => {
    const o = base();
    o.end = { kind: 'no-progress', detail: 'no page in 12 run(s)' };
    o.requests = [{ method: 'GET', url: '/', authorization: undefined, status: 200, durationMs: 45_000 }];
    o.runs = [{ outcome: 'retry-later', ms: 130_000, pages: 0, requests: 40 }];
    o.peakRssGrowthMb = 5_000;
    o.maxStallMs = 7_200;
    o.budget = { maxHoldAheadMs: 3 * 3_600_000, maxRate: 121, peakObservedRate: 6.5 };
    o.tokenSeenIn = ["the functions' stdout"];
    const found = violations(o, stops).join('\n');
    for (const pattern of [
      /no-progress: no page/,
      /outlived the 30 s total deadline/,
      /made 40 partner requests for 0 page/,
      /past the poller's 120 s timeout/,
      /peak RSS grew 5000 MB/,
      /event loop stood still for 7.2 s \(synchronous work\), over 2.0 s for bodies of 0 KiB/,
      /held its feeds 180 min ahead/,
      /rate reached 121\/s, while the feeds used at most 6.5\/s/,
      /the token appeared in the functions' stdout/,
    ])
      expect(found).toMatch(pattern);
  });
});

describe("what a seed's budget leaves out", () => {
  /** A request the simulator logged: its arrival, its status, and its path or fault where they matter. */
  const at = (receivedAt: number, status: number, more: { url?: string; fault?: Fault } = {}) => ({
    method: 'GET',
    url: more.url ?? '/p1',
    authorization: '',
    status,
    receivedAt,
    ...(more.fault === undefined ? {} : { fault: more.fault }),
  });

  it('the wait after each 429 up to what the client waits for it, grown on a repeat; not the pace of the rest', () => {
    // Retry-After 1 s: the same request's 429s in a row are waited 1, 2, 4 s (gaps of 1.5, 2 and 10 s count
    // 1, 2 and 4); 200s 5 s apart count nothing; a 429 of another request starts again at 1 s (a 0.5 s gap).
    const requests = [
      at(0, 429),
      at(1_500, 429),
      at(3_500, 429),
      at(13_500, 200),
      at(18_500, 200, { url: '/p2' }),
      at(23_500, 429, { url: '/p3' }),
      at(24_000, 200, { url: '/p3' }),
    ];
    expect(rateLimitWaitsMs(requests, () => 1_000, 30_000)).toBe(1_000 + 2_000 + 4_000 + 500);
    // The last 429 waits until now; a 5xx is no 429.
    expect(rateLimitWaitsMs([at(0, 200), at(5_000, 503), at(6_000, 429)], () => 1_000, 6_400)).toBe(400);
    // The n-th 429's own Retry-After: 0 s (a past date) waits nothing at first, 2 s on a repeat (grown from the
    // client's default); where the client gives up on the value (an hour), the token's hold of at most 5 minutes
    // holds the feed until its next request (10 s later here; seed 144).
    const retryAfters = [0, undefined, 3_600_000];
    const waits = rateLimitWaitsMs(requests, (nth) => retryAfters[nth % 3], 30_000);
    expect(waits).toBe(0 + 2_000 + 10_000 + 0);
    expect(BUDGET_POLICY.maxHoldMs).toBe(300_000);
    expect(rateLimitWaitsMs([at(0, 429)], () => 3_600_000, 600_000)).toBe(BUDGET_POLICY.maxHoldMs);
    // Since a time (the stall clock's start, seed 837): only the part of each wait after it: 1.5 s of the 2 s
    // after the second 429, the third's 4 s and the last 0.5 s.
    expect(rateLimitWaitsMs(requests, () => 1_000, 30_000, 2_000)).toBe(1_500 + 4_000 + 500);
    // Until a time too (a run the stall clock leaves out whole): the second 429's wait from 2 s to 3 s.
    expect(rateLimitWaitsMs(requests, () => 1_000, 30_000, 2_000, 3_000)).toBe(1_000);
  });

  it('the stall clock: 429 waits, and the runs the partner answered with no page at all, each counted once', () => {
    // Seed 988's kind of run: 5xx, a 429 (waited 1 s), a reset and a redirect: no page; a 200 that is a page is
    // one, a 200 that is no page (cut short) is not, a 404 (an expired cursor) is news.
    const down = [
      at(10_000, 500),
      at(10_500, 429),
      at(12_000, 0),
      at(13_000, 302),
      at(14_000, 200, { fault: 'truncated-body' }),
    ];
    expect(down.every(answeredNoPage)).toBe(true);
    expect([at(0, 200), at(0, 200, { fault: 'slow' }), at(0, 404)].some(answeredNoPage)).toBe(false);
    const requests = [at(0, 200), ...down, at(20_000, 429), at(21_000, 200)];
    // From 0 to 30 s: the down run (10 to 15 s, its 429's 1 s wait inside it, counted once) and the 429 at 20 s
    // (1 s) leave 30 - 5 - 1 = 24 s.
    expect(stalledMs(requests, () => 1_000, [{ from: 10_000, to: 15_000 }], 0, 30_000)).toBe(24_000);
    // From 12 s: only the down run's part after it (3 s), and the later 429's second: 18 - 3 - 1 = 14 s.
    expect(stalledMs(requests, () => 1_000, [{ from: 10_000, to: 15_000 }], 12_000, 30_000)).toBe(14_000);
    expect(stalledMs(requests, () => 1_000, [], 0, 30_000)).toBe(30_000 - 1_000 - 1_000);
  });
});

describe('the command line', () => {
  it('runs N seeds from S; --seed alone replays one; --help', () => {
    expect(parseFuzzArgs(['--seeds', '3', '--seed', '10'])).toMatchObject({
      seeds: [10, 11, 12],
      profile: 'full',
    });
    expect(parseFuzzArgs(['--seed', '42', '--profile', 'fast'])).toMatchObject({
      seeds: [42],
      profile: 'fast',
    });
    expect(parseFuzzArgs(['--scenario', 'gzip,outage'])).toMatchObject({ scenarios: ['gzip', 'outage'] });
    expect(parseFuzzArgs(['--help'])).toBe('help');
  });

  it.each([
    [['--seeds', '0'], /--seeds must be an integer from 1/],
    [['--seeds', 'many'], /--seeds must be an integer/],
    [['--profile', 'slow'], /--profile must be one of fast, full/],
    [['--local', '--in-process'], /exclude each other/],
    [['--scenario', 'gzipp'], /no scenario "gzipp"/],
    [['--replay', 'x.json', '--seed', '1'], /not with --seeds or --seed/],
    [['--sed', '1'], /Unknown option '--sed'/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseFuzzArgs(argv)).toThrow(UsageError);
    expect(() => parseFuzzArgs(argv)).toThrow(message);
  });
});

describe('what the fuzzer prints', () => {
  const report = (violations: string[]): SeedReport => ({
    seed: 17,
    profile: 'full',
    mode: 'in-process',
    partner: '40 orders; faults: encoding',
    kinds: ['encoding'],
    end: { kind: 'no-progress', detail: 'no page in 12 run(s)' },
    runs: 12,
    outcomes: { 'retry-later': 12 },
    faultsFired: { encoding: 60 },
    requests: 60,
    durationMs: 61_000,
    violations,
    replay: 'npm run fuzz -- --seed 17',
  });

  it('prints a failing seed with its violations and the command that replays it, and lists it again at the end', () => {
    const failed = report(['no-progress: no page in 12 run(s)']);

    expect(seedLines(failed)).toMatch(/^FAIL seed 17 \(full, in-process\)/);
    expect(seedLines(failed)).toContain(
      '    - no-progress: no page in 12 run(s)\n    replay: npm run fuzz -- --seed 17\n',
    );
    expect(totals([failed, report([])], 120_000)).toContain(
      '2 seed(s), 1 passed, 1 failed, in 2.0 min\nfaults fired: encoding 120\nreplay the failing seeds:\n  npm run fuzz -- --seed 17\n',
    );
    expect(seedLines(report([]))).not.toContain('replay');
  });
});
