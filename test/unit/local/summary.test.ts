// Local mode's end-of-run summary: the history line counts the entries and names one command to run; a
// MISMATCH on a reused stack is explained; each --subscriber queue comes with the command that reads it.
import { describe, expect, it } from 'vitest';
import type { LocalSummary } from '../../../tools/local/runtime.js';
import { formatSubscribers, formatSummary } from '../../../tools/local/terminal.js';

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

  it('says how to keep the data when the run’s own emulator stopped with it', () => {
    const lines = formatSummary(
      { ...SUMMARY, history: { table: 'history', entries: 5, exampleOrderId: '42' } },
      false,
    );

    expect(lines.find((line) => line.startsWith('History'))).toBe(
      'History: 5 order versions kept; to look one up, run against an emulator that outlives the run (python3 tools/local/moto_serialized.py -H 127.0.0.1 -p 5000, then npm start -- --aws-endpoint http://localhost:5000) and: npm run ops -- history 42 --aws-endpoint http://localhost:5000',
    );
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
