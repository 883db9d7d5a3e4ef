// Local mode's end-of-run summary: the history line counts the entries and names one command to run (this
// run's own, with an order it stored); a MISMATCH on a reused stack is explained; each --subscriber queue
// comes with the command that reads it; a run worth resuming says where its data is and how to resume. And
// the progress line of a waiting feed.
import { describe, expect, it } from 'vitest';
import { busiestOrder } from '../../../tools/local/data.js';
import type { LocalSummary } from '../../../tools/local/runtime.js';
import { parseCli, resumeCommand } from '../../../tools/local/start.js';
import {
  formatProgress,
  formatResume,
  formatSubscribers,
  formatSummary,
  KEPT_EMULATOR,
} from '../../../tools/local/terminal.js';

const SUMMARY: LocalSummary = {
  region: 'us-east-1',
  stackName: 'OrderFeedIngester',
  ordersTable: 'orders',
  cursorTable: 'cursors',
  queueUrl: 'http://localhost/queue',
  deadLetterQueueUrl: 'http://localhost/dlq',
  quarantineBucket: 'quarantine',
  apiUrl: 'http://127.0.0.1:1',
  awsEndpoint: 'http://127.0.0.1:2',
  outcome: 'drained',
  elapsedMs: 1000,
  deploy: undefined,
  sales: [],
  ordersByStatus: { accepted: 2 },
  orders: 2,
  quarantined: [],
  deadLettered: 0,
  queueDepth: 0,
  counters: {
    polls: 1,
    pages: 1,
    versionsPublished: 5,
    applied: 5,
    stale: 0,
    rejected: 0,
    failedMessages: 0,
    partnerRetries: 0,
    rateLimitWaits: 0,
    cursorRecoveries: 0,
  },
};

describe('formatSummary', () => {
  it('counts the history entries and names the command that shows an order of this run; none without history', () => {
    const lines = formatSummary({
      ...SUMMARY,
      history: { table: 'history', entries: 5, exampleOrderId: '9007199254740993' },
    });

    expect(lines).toContain(
      'History: 5 order versions kept; look at one: npm run ops -- history 9007199254740993 --aws-endpoint http://127.0.0.1:2',
    );
    expect(formatSummary(SUMMARY).some((line) => line.startsWith('History'))).toBe(false);
  });

  it('says how to keep the data when the run’s own emulator stopped with it: this run again, its scenario included, against one that outlives it', () => {
    const cli = parseCli(['--scenario', 'test-versioning', '--give-up-after', '90s']);
    const lines = formatSummary(
      { ...SUMMARY, history: { table: 'history', entries: 5, exampleOrderId: '3009000001' } },
      false,
      false,
      resumeCommand(cli, KEPT_EMULATOR),
    );

    expect(lines.find((line) => line.startsWith('History'))).toBe(
      'History: 5 order versions kept; to look one up, run against an emulator that outlives the run (python3 tools/local/moto_serialized.py -H 127.0.0.1 -p 5000, then npm start -- --aws-endpoint http://localhost:5000 --scenario test-versioning --give-up-after 90s) and: npm run ops -- history 3009000001 --aws-endpoint http://localhost:5000',
    );
  });

  it('names an order this run stored (the most versions since it began), not one an earlier run on the same emulator left', () => {
    const stored = (orderId: string, storedAt?: string) => ({ orderId, storedAt });
    const earlier = [1, 2, 3].map(() => stored('2000000001', '2026-05-01T09:00:00.000Z'));
    const thisRun = [
      stored('3009000001', '2026-05-01T10:00:01.000Z'),
      stored('3009000001', '2026-05-01T10:00:02.000Z'),
    ];

    expect(busiestOrder([...earlier, ...thisRun, stored('7')], '2026-05-01T10:00:00.000Z')).toBe(
      '3009000001',
    );
    // A run that stored nothing new (all duplicates): the table's busiest.
    expect(busiestOrder(earlier, '2026-05-01T10:00:00.000Z')).toBe('2000000001');
    expect(busiestOrder([])).toBeUndefined();
  });
});

describe('formatSummary on a MISMATCH', () => {
  const mismatch: LocalSummary = {
    ...SUMMARY,
    deploy: { deployed: false, ms: 10 },
    matchesExpected: { orders: false, sales: true },
  };
  const explanation = (lines: string[]) => lines.find((line) => line.includes('kept earlier runs'));

  it('explains that a reused stack without --reset-data holds earlier runs’ data, and how to check this run alone', () => {
    const lines = formatSummary(mismatch);

    expect(lines).toContain('Check: MISMATCH with the simulator’s expected state (orders differ, sales ok).');
    expect(explanation(lines)).toBe(
      '  The emulator at http://127.0.0.1:2 kept earlier runs’ orders and sales on this stack, which the check counts too: run again with --reset-data (or on a fresh emulator) to check this run alone.',
    );
  });

  it('has no such explanation after --reset-data or a fresh deploy', () => {
    expect(explanation(formatSummary(mismatch, true, true))).toBeUndefined();
    expect(explanation(formatSummary({ ...mismatch, deploy: { deployed: true, ms: 10 } }))).toBeUndefined();
  });
});

describe('formatSubscribers', () => {
  const queues = { billing: 'https://sqs.us-east-1.amazonaws.com/123456789012/billing-queue' };

  it('names the command that reads a kept subscriber queue without removing its messages', () => {
    expect(formatSubscribers(queues, SUMMARY, true)).toEqual([
      'Subscriber billing: nothing here drains its queue, which keeps every published message; read them (they stay queued) with:\n' +
        '  AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing aws sqs receive-message --endpoint-url http://127.0.0.1:2 --region us-east-1 --queue-url https://sqs.us-east-1.amazonaws.com/123456789012/billing-queue --max-number-of-messages 10 --visibility-timeout 0 --message-attribute-names All',
    ]);
  });

  it('says how to keep the queue when the run’s own emulator stopped with it', () => {
    expect(formatSubscribers(queues, SUMMARY, false)[0]).toMatch(
      /^Subscriber billing: its messages went with this run’s emulator; .* npm start -- --aws-endpoint http:\/\/localhost:5000 --subscriber billing\)/,
    );
  });
});

describe('after a give-up', () => {
  const gaveUp: LocalSummary = {
    ...SUMMARY,
    outcome: 'gave-up',
    detail:
      'gave up waiting for the partner after 15s without progress (no page committed, no version applied)',
    keptEmulator: { endpoint: 'http://localhost:41191', pid: 4242 },
  };
  const command = 'npm start -- --aws-endpoint http://localhost:41191 --api-url http://127.0.0.1:9/x';

  it('heads the summary with why it gave up', () => {
    expect(formatSummary(gaveUp)[0]).toBe(`Gave up: ${gaveUp.detail}.`);
  });

  it('names the emulator it left running, its pid and how to stop it, then the command that resumes', () => {
    expect(formatResume(gaveUp, command, { tokenFromEnvironment: true })).toEqual([
      'Data kept: the emulator this run started still runs at http://localhost:41191 (pid 4242); stop it, when done, with: kill 4242',
      'Resume from the stored cursor (with PARTNER_API_TOKEN set, as for this run):',
      `  ${command}`,
    ]);
  });

  it('says the data is in the given emulator, and after a 401 that the resume needs a valid token', () => {
    const { keptEmulator: _, ...given } = { ...gaveUp, outcome: 'auth-failed' as const };

    expect(formatResume(given, command, { tokenFromEnvironment: false })).toEqual([
      'Data kept in the emulator at http://127.0.0.1:2.',
      'With a valid token, resume from the stored cursor:',
      `  ${command}`,
    ]);
  });
});

describe('formatProgress', () => {
  it('says, for a waiting feed, the failure the poller reported, when the next run starts and when local mode gives up', () => {
    const text = formatProgress({
      elapsedMs: 14_000,
      counters: { ...SUMMARY.counters, polls: 4, pages: 0 },
      queueDepth: 0,
      lagSeconds: undefined,
      lastPoll: 'retry-later',
      waiting: [
        {
          feedId: 'orders',
          failure:
            'ended retry-later: partner unreachable: GET /v1/orderUpdates: network failure (ECONNREFUSED)',
          failedRuns: 4,
          nextRunInMs: 6_200,
          givesUpInMs: 586_000,
        },
      ],
    });

    expect(text.split('\n')).toEqual([
      '[ 14s] polls 4 | pages 0 | published 5 | applied 5 | stale 0 | failed 0 | queue 0 | lag - (retry-later)',
      '       waiting for the partner: 4 failed run(s), the last ended retry-later: partner unreachable: GET /v1/orderUpdates: network failure (ECONNREFUSED); next run in 6s; gives up in 9m 46s unless a page is committed or a version applied',
    ]);
  });
});
