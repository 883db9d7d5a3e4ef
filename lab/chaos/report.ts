// The chaos run's figures: the JSON written with --out and the text printed at the end.
import type { FaultOptions } from '../../tools/simulator/index.js';
import type { KillKind } from './kill-plan.js';
import type { KillRecord, PoisonTrace, RunStats } from './kill-switch.js';
import type { LedgerDifference, OrderIssue } from './verify.js';

export interface RunRecord extends RunStats {
  /** How the child ended: `exit 0`, `exit 1`, `SIGKILL`. */
  ended: string;
  durationMs: number;
  kill?: KillRecord;
}

export interface ChaosReport {
  command: string;
  seed: number;
  options: { orders: number; kills: number; quick: boolean };
  machine: { cpus: number; cpuModel: string; memoryGb: number; node: string; platform: string };
  startedAt: string;
  durationMs: number;
  feed: {
    orders: number;
    distinctVersions: number;
    /** Versions in every page the simulator answered (repeats, replays and duplicates included). */
    versionsServed: number;
    vendors: number;
    currencies: string[];
    duplicateVersions: number;
    outOfOrderVersions: number;
  };
  faults: {
    configured: FaultOptions;
    injected: Record<string, number>;
    total: number;
    /** 429s alternate the two Retry-After forms, starting with delta-seconds (the simulator's rule). */
    retryAfter: { deltaSeconds: number; httpDate: number };
  };
  kills: {
    planned: number;
    triggered: number;
    byKind: Record<KillKind, number>;
    records: KillRecord[];
  };
  runs: RunRecord[];
  restarts: {
    /** Restarted runs whose first lease acquisition was refused (the killed run's lease was still held). */
    blockedByDeadLease: number;
    /** Longest time from such a refusal until the restart released the dead run's lease. */
    maxLeaseBlockedMs: number | undefined;
    /** Lease acquisitions refused to restarted runs before their first success. */
    leaseRefusals: number;
    /**
     * Longest time from a restart's spawn to its first lease (includes process start-up and the poller
     * waiting for the orders queue to be shallow after a kill left messages in flight).
     */
    maxFirstLeaseMs: number;
  };
  writes: {
    /** PutItem on the orders table answered 200, over every run. */
    applied: number;
    /** PutItem answered ConditionalCheckFailedException (duplicate or older version), over every run. */
    stale: number;
    otherErrors: number;
    /** Final run only: versions skipped as superseded within a batch (local mode's stale minus the proxy's). */
    supersededInBatchFinalRun: number | undefined;
  };
  rejected: { quarantined: number; deadLettered: number; total: number };
  poison: { planted: boolean; messageId: string; inDeadLetterQueue: boolean; inTable: boolean } & PoisonTrace;
  lost: number;
  wrong: number;
  lostOrders: OrderIssue[];
  wrongOrders: OrderIssue[];
  ledger: { equal: boolean; expectedRows: number; actualRows: number; differences: LedgerDifference[] };
  storedOrders: number;
  awsCalls: Record<string, number>;
  /** local mode's --summary-json of the final run. */
  finalSummary: unknown;
  pass: boolean;
  failures: string[];
}

const n = (value: number) => value.toLocaleString('en-US');

export function renderReport(report: ChaosReport): string {
  const lines: string[] = [];
  const row = (label: string, value: string) => lines.push(`  ${label.padEnd(26)} ${value}`);
  const faults = Object.entries(report.faults.injected)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
  const kills = Object.entries(report.kills.byKind)
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
  lines.push(
    `chaos: seed ${report.seed}, ${n(report.feed.orders)} orders, ${n(report.feed.distinctVersions)} distinct versions, ` +
      `${report.kills.triggered}/${report.kills.planned} kills, ${(report.durationMs / 1000).toFixed(0)} s`,
  );
  row('faults injected', `${report.faults.total} (${faults || 'none'})`);
  row(
    '429 Retry-After forms',
    `${report.faults.retryAfter.deltaSeconds} delta-seconds, ${report.faults.retryAfter.httpDate} HTTP-date`,
  );
  row('kills (SIGKILL)', `${report.kills.triggered} (${kills})`);
  for (const kill of report.kills.records) {
    const at = kill.atMs === undefined ? '' : ` at ${(kill.atMs / 1000).toFixed(1)} s`;
    lines.push(
      `    run ${kill.run} ${kill.kind}${at}: ${kill.triggered ? kill.detail : `not triggered (${kill.planned})`}`,
    );
  }
  row('runs of local mode', `${report.runs.length} (${report.runs.map((run) => run.ended).join(', ')})`);
  row(
    'dead lease on restart',
    report.restarts.maxLeaseBlockedMs === undefined
      ? 'never met'
      : `${report.restarts.blockedByDeadLease} restart(s) refused ${report.restarts.leaseRefusals}×, released within ` +
          `${(report.restarts.maxLeaseBlockedMs / 1000).toFixed(1)} s`,
  );
  row('restart to first lease', `${(report.restarts.maxFirstLeaseMs / 1000).toFixed(1)} s at most`);

  row('versions served', n(report.feed.versionsServed));
  row('applied (PutItem 200)', n(report.writes.applied));
  row('stale (PutItem CCF)', n(report.writes.stale));
  row(
    'superseded in a batch',
    report.writes.supersededInBatchFinalRun === undefined
      ? 'n/a'
      : `${n(report.writes.supersededInBatchFinalRun)} (final run only)`,
  );
  row(
    'rejected',
    `${report.rejected.total} (${report.rejected.quarantined} quarantined, ${report.rejected.deadLettered} dead-lettered)`,
  );
  row(
    'poison message',
    report.poison.inDeadLetterQueue && !report.poison.inTable ? 'in the DLQ' : 'NOT in the DLQ',
  );
  row('orders stored / expected', `${n(report.storedOrders)} / ${n(report.feed.orders)}`);
  row('lost', String(report.lost));
  row('wrong', String(report.wrong));
  row('sales ledger', report.ledger.equal ? `equal (${report.ledger.expectedRows} rows)` : 'DIFFERS');
  lines.push(report.pass ? 'PASS' : `FAIL: ${report.failures.join('; ')}`);
  return `${lines.join('\n')}\n`;
}
