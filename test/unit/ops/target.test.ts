// Finding the stack's resources and feeds from its outputs, and choosing the feed a command acts on.
import { describe, expect, it } from 'vitest';
import type { AwsAt } from '../../../tools/aws.js';
import { CommandError } from '../../../tools/cli-args.js';
import { selectRedriveQueues } from '../../../tools/ops/redrive.js';
import { resolveFeed, targetFromOutputs } from '../../../tools/ops/target.js';
import { feedPollersOf, readStackOutputs } from '../../../tools/stack.js';

const OUTPUTS = {
  OrdersTableName: 'orders-table',
  CursorTableName: 'cursor-table',
  QuarantineBucketName: 'quarantine-bucket',
  OrdersQueueUrl: 'https://sqs/1/orders',
  OrdersDeadLetterQueueUrl: 'https://sqs/1/orders-dlq',
  DownstreamQueueUrlBilling: 'https://sqs/1/billing',
  DownstreamDeadLetterQueueUrlBilling: 'https://sqs/1/billing-dlq',
  DownstreamQueueUrlAuditLog: 'https://sqs/1/audit',
  DownstreamDeadLetterQueueUrlAuditLog: 'https://sqs/1/audit-dlq',
  PollerFunctionName: 'poller-fn',
};

describe('targetFromOutputs', () => {
  it('pairs every queue with its dead-letter queue, orders first, subscribers by their configured names', () => {
    const target = targetFromOutputs(
      'Stack',
      OUTPUTS,
      { orders: 'poller-fn' },
      { billing: 'https://sqs/1/billing' },
    );

    expect(target).toEqual({
      stackName: 'Stack',
      ordersTable: 'orders-table',
      cursorTable: 'cursor-table',
      quarantineBucket: 'quarantine-bucket',
      // No HistoryTableName output: history is off for the stack.
      historyTable: undefined,
      queues: [
        {
          name: 'orders',
          kind: 'orders',
          url: 'https://sqs/1/orders',
          deadLetterUrl: 'https://sqs/1/orders-dlq',
        },
        // Not in the poller's map: the name comes back from the output key.
        {
          name: 'audit-log',
          kind: 'subscriber',
          url: 'https://sqs/1/audit',
          deadLetterUrl: 'https://sqs/1/audit-dlq',
        },
        {
          name: 'billing',
          kind: 'subscriber',
          url: 'https://sqs/1/billing',
          deadLetterUrl: 'https://sqs/1/billing-dlq',
        },
      ],
      pollers: { orders: 'poller-fn' },
      // A stack of a poller per feed: no dispatcher to ask for a dispatch.
      dispatcher: undefined,
    });
    const outputs = { ...OUTPUTS, HistoryTableName: 'history-table' };
    expect(targetFromOutputs('Stack', outputs, {}, {}).historyTable).toBe('history-table');
    // A fleet's stack (infra adds the output): its dispatcher, no poller of a feed's own.
    const fleet = targetFromOutputs('Stack', { ...OUTPUTS, DispatcherFunctionName: 'dispatcher-fn' }, {}, {});
    expect(fleet).toMatchObject({ dispatcher: 'dispatcher-fn', pollers: {} });
  });

  it('names a missing output', () => {
    const { CursorTableName: _, ...outputs } = OUTPUTS;

    expect(() => targetFromOutputs('Stack', outputs, {}, {})).toThrow(
      'stack Stack has no output CursorTableName',
    );
  });
});

describe('readStackOutputs', () => {
  /** AWS clients whose CloudFormation call fails as the SDK does without a region. */
  const failingAt = (endpoint: string | undefined) =>
    ({
      endpoint,
      cloudFormation: { send: () => Promise.reject(new Error('Region is missing')) },
    }) as unknown as AwsAt;

  it('says what to pass when the SDK has no region (no endpoint, no AWS_REGION)', async () => {
    await expect(readStackOutputs(failingAt(undefined), 'S')).rejects.toThrow(
      /^cannot describe stack S: Error: Region is missing\. Pass --aws-endpoint http:\/\/localhost:PORT for an emulator .* or set AWS_REGION and credentials/,
    );
    await expect(readStackOutputs(failingAt('http://localhost:5000'), 'S')).rejects.toThrow(
      /Region is missing$/,
    );
  });
});

describe('feedPollersOf', () => {
  it('reads the FeedPollers output of a multi-feed stack (feed ids only), none on a single-feed stack, refusing a malformed value', () => {
    const outputs = { FeedPollers: JSON.stringify({ eu: 'poller-eu', us: 'poller-us', '#x': 'nope', n: 3 }) };

    expect(feedPollersOf(outputs)).toEqual({ eu: 'poller-eu', us: 'poller-us' });
    expect(feedPollersOf({})).toEqual({});
    expect(() => feedPollersOf({ FeedPollers: '[1]' })).toThrow(CommandError);
    expect(() => feedPollersOf({ FeedPollers: '{' })).toThrow('not JSON');
  });
});

describe('resolveFeed', () => {
  it('takes the only feed by default, requires --feed among several, and refuses an unknown feed or none', () => {
    expect(resolveFeed(undefined, ['orders'])).toBe('orders');
    expect(() => resolveFeed(undefined, ['eu', 'us'])).toThrow('several feeds (eu, us): pass --feed ID');
    expect(resolveFeed('us', ['eu', 'us'])).toBe('us');
    expect(() => resolveFeed('asia', ['eu', 'us'])).toThrow('unknown feed "asia" (known: eu, us)');
    expect(() => resolveFeed(undefined, [])).toThrow('no feed');
    // A fleet of thousands: the first few, and where to see them all.
    const fleet = Array.from({ length: 3000 }, (_, index) => `feed-${String(index).padStart(4, '0')}`);
    expect(() => resolveFeed(undefined, fleet)).toThrow(
      'several feeds (feed-0000, feed-0001, feed-0002, feed-0003, feed-0004, feed-0005, feed-0006, feed-0007, feed-0008, feed-0009, … 3000 in all: feeds list): pass --feed ID',
    );
  });
});

describe('selectRedriveQueues', () => {
  const target = targetFromOutputs('Stack', OUTPUTS, {}, { billing: 'https://sqs/1/billing' });

  it('takes every queue with a dead-letter queue by default, or the one named, refusing a name without one', () => {
    expect(selectRedriveQueues(target.queues, undefined).map((queue) => queue.name)).toEqual([
      'orders',
      'audit-log',
      'billing',
    ]);
    expect(selectRedriveQueues(target.queues, 'billing').map((queue) => queue.deadLetterUrl)).toEqual([
      'https://sqs/1/billing-dlq',
    ]);
    expect(() => selectRedriveQueues(target.queues, 'nope')).toThrow(
      'no dead-letter queue for "nope" (queues: orders, audit-log, billing)',
    );
  });
});
