// Local mode's end-of-run summary: the history line counts the entries and names one command to run.
import { describe, expect, it } from 'vitest';
import type { LocalSummary } from '../../../tools/local/runtime.js';
import { formatSummary } from '../../../tools/local/terminal.js';

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
  it('counts the history entries and names the command that shows an order of this run', () => {
    const lines = formatSummary({
      ...SUMMARY,
      history: { table: 'history', entries: 5, exampleOrderId: '9007199254740993' },
    });

    expect(lines).toContain(
      'History: 5 order versions kept; look at one: npm run ops -- history 9007199254740993 --aws-endpoint http://127.0.0.1:2',
    );
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

  it('has no history line when the stack keeps no history', () => {
    expect(formatSummary(SUMMARY).some((line) => line.startsWith('History'))).toBe(false);
  });
});
