// The ops command line: commands, shared and command flags, and what is refused as a usage error.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../tools/cli-args.js';
import { DEFAULT_STACK_NAME, DEFAULT_STALEST, parseOpsArgs } from '../../../tools/ops/args.js';

describe('parseOpsArgs', () => {
  it('reads a command with the shared defaults', () => {
    expect(parseOpsArgs(['status'])).toEqual({
      command: 'status',
      shared: {
        stackName: DEFAULT_STACK_NAME,
        awsEndpoint: undefined,
        feed: undefined,
        json: false,
        yes: false,
        force: false,
      },
    });
  });

  it('reads shared flags, normalising a localhost endpoint to 127.0.0.1', () => {
    const parsed = parseOpsArgs([
      'reset-cursor',
      '--feed',
      'eu.orders-1',
      '--stack-name',
      'Other',
      '--aws-endpoint',
      'http://localhost:5000',
      '--json',
      '--yes',
      '--force',
    ]);

    expect(parsed).toEqual({
      command: 'reset-cursor',
      shared: {
        stackName: 'Other',
        awsEndpoint: 'http://127.0.0.1:5000',
        feed: 'eu.orders-1',
        json: true,
        yes: true,
        force: true,
      },
    });
  });

  it.each([
    // Two-word commands.
    [['quarantine', 'retry', '--yes'], { command: 'quarantine retry' }],
    [['quarantine', 'list'], { command: 'quarantine list' }],
    // replay, redrive and backfill flags.
    [['replay', '--from-page', 'abc'], { fromPage: 'abc' }],
    [['redrive', '--queue', 'billing'], { queue: 'billing', method: 'move-task' }],
    [['redrive', '--aws-endpoint', 'http://127.0.0.1:1'], { method: 'loop' }],
    [['redrive', '--method', 'loop'], { method: 'loop' }],
    [
      ['backfill', '--subscriber', 'billing', '--rate', '20', '--max-messages', '5', '--restart'],
      { subscriber: 'billing', rate: 20, maxMessages: 5, restart: true },
    ],
    [['backfill', '--subscriber', 'billing'], { rate: 50, maxMessages: undefined, allVersions: false }],
    [['backfill', '--subscriber', 'billing', '--all-versions'], { allVersions: true }],
    // history ORDER_ID as exact int64 text, with the shared flags.
    [
      ['history', '9223372036854775807', '--json'],
      { command: 'history', orderId: '9223372036854775807', shared: { json: true } },
    ],
    [['history', '0'], { orderId: '0' }],
    // budget, and budget release of one token parameter.
    [['budget'], { command: 'budget', tokenParameter: undefined }],
    [
      ['budget', 'release', '--token-parameter', '/order-feed/partner-token', '--yes'],
      { command: 'budget release', tokenParameter: '/order-feed/partner-token', shared: { yes: true } },
    ],
    // reconcile gets its own flags, with the default stack added.
    [
      ['reconcile', '--sample', '5', '--aws-endpoint', 'http://localhost:1'],
      {
        command: 'reconcile',
        argv: ['--sample', '5', '--aws-endpoint', 'http://localhost:1', '--stack-name', DEFAULT_STACK_NAME],
      },
    ],
    [['reconcile', '--stack-name', 'X'], { argv: ['--stack-name', 'X'] }],
  ] as const)('reads %j', (argv, expected) => {
    expect(parseOpsArgs([...argv])).toMatchObject(expected);
  });

  it('reads feeds add: the whole configuration with its defaults, values spelt as -c spells them at synth', () => {
    expect(
      parseOpsArgs([
        ...['feeds', 'add', 'eu', '--token-parameter', '/t', '--vendor-ids', ' v-1, v-2 ,'],
        ...['--page-size', '50', '--order-ids', '9223372036854775807', '--purpose', 'reconcile', '--dry-run'],
      ]),
    ).toMatchObject({
      command: 'feeds add',
      feedId: 'eu',
      dryRun: true,
      config: {
        tokenParameterName: '/t',
        vendorIds: ['v-1', 'v-2'],
        orderIds: ['9223372036854775807'],
        purpose: 'reconcile',
        pageSize: 50,
        scheduleMinutes: 1,
      },
    });
  });

  it.each([
    [['feeds', 'list'], { command: 'feeds list', stalest: undefined }],
    [['feeds', 'list', '--stalest'], { stalest: DEFAULT_STALEST }],
    [['feeds', 'list', '--stalest', '3', '--json'], { stalest: 3, shared: { json: true } }],
    [['feeds', 'list', '--stalest=4'], { stalest: 4 }],
    [['feeds', 'show', 'eu'], { command: 'feeds show', feedId: 'eu' }],
    [
      ['feeds', 'set', 'eu', '--schedule-minutes', '5', '--unset', 'vendor-ids', '--unset', 'from-timestamp'],
      { command: 'feeds set', changes: { scheduleMinutes: 5, vendorIds: null, fromTimestamp: null } },
    ],
    [
      ['feeds', 'pause', 'eu', '--reason', 'asked to stop'],
      { command: 'feeds pause', reason: 'asked to stop', dryRun: false, deleteCursor: false },
    ],
    [['feeds', 'resume', 'eu', '--dry-run'], { command: 'feeds resume', reason: undefined, dryRun: true }],
    [
      ['feeds', 'remove', 'eu', '--delete-cursor', '--yes', '--force'],
      { deleteCursor: true, shared: { yes: true, force: true } },
    ],
  ] as const)('reads %j', (argv, expected) => {
    expect(parseOpsArgs([...argv])).toMatchObject(expected);
  });

  it.each([
    [['feeds'], 'feeds needs a subcommand: add, list, show, set, pause, resume or remove'],
    [['feeds', 'add', '--token-parameter', '/t'], 'feeds add needs one ID'],
    [['feeds', 'add', 'budget#x', '--token-parameter', '/t'], '"budget#x" is not a feed id'],
    [['feeds', 'add', 'eu'], 'tokenParameterName: is required (--token-parameter)'],
    // Each value by the rule synth applies, naming the key and the flag it came from.
    [
      ['feeds', 'add', 'eu', '--token-parameter', '/t', '--page-size', '500'],
      'pageSize: must be an integer from 1 to 100 (--page-size "500")',
    ],
    [
      ['feeds', 'add', 'eu', '--token-parameter', '/t', '--vendor-ids', 'v 1'],
      'vendorIds: has an invalid vendor id "v 1"',
    ],
    [
      ['feeds', 'add', 'eu', '--token-parameter', '/t', '--from-timestamp', '2026-02-30T00:00:00Z'],
      'fromTimestamp: must be a valid date-time (--from-timestamp "2026-02-30T00:00:00Z")',
    ],
    [
      ['feeds', 'add', 'eu', '--token-parameter', '/t', '--order-ids', '1'],
      'orderIds: is only for a feed whose purpose is "reconcile"',
    ],
    [
      ['feeds', 'add', 'eu', '--token-parameter', '/t', '--partner-base-url', 'http://partner.example'],
      'partnerBaseUrl:',
    ],
    [['feeds', 'add', 'eu', '--token-parameter', '/t', '--page-sise', '5'], 'did you mean --page-size?'],
    [['feeds', 'set', 'eu'], 'feeds set needs a change'],
    [['feeds', 'set', 'eu', '--schedule-minutes', '61'], 'scheduleMinutes: must be an integer from 1 to 60'],
    [
      ['feeds', 'set', 'eu', '--unset', 'vendor-id'],
      '--unset vendor-id: not a config flag; did you mean vendor-ids?',
    ],
    [
      ['feeds', 'set', 'eu', '--unset', 'page-size', '--page-size', '5'],
      '--unset page-size and --page-size together',
    ],
    [['feeds', 'list', '--stalest', '0'], '--stalest must be an integer from 1'],
    [['feeds', 'list', 'eu'], 'unknown command "feeds list eu"'],
    [['feeds', 'show', 'eu', '--reason', 'x'], "Unknown option '--reason'"],
    [['feeds', 'pause', 'eu', '--delete-cursor'], "Unknown option '--delete-cursor'"],
  ])('refuses feeds %j as a usage error', (argv, message) => {
    expect(() => parseOpsArgs(argv)).toThrow(UsageError);
    expect(() => parseOpsArgs(argv)).toThrow(message);
  });

  it.each([[['--help']], [['status', '-h']], [['history', '-h']]])('answers help for %j', (argv) => {
    expect(parseOpsArgs(argv)).toEqual({ command: 'help' });
  });

  it.each([
    [[], 'a command is required'],
    [['--bogus'], "Unknown option '--bogus'"],
    [['nonsense'], 'unknown command "nonsense"'],
    [['quarantine'], 'quarantine needs a subcommand'],
    [['quarantine', 'purge'], 'unknown command "quarantine purge"'],
    [['status', '--bogus'], "Unknown option '--bogus'"],
    [['status', '--from-page', 'x'], "Unknown option '--from-page'"],
    [['replay'], '--from-page is required'],
    [['replay', '--from-page', ' '], '--from-page needs a value'],
    [['reset-cursor', '--feed', '#backfill/x'], 'is not a feed id'],
    [['backfill'], '--subscriber is required'],
    [['backfill', '--subscriber', 'b', '--rate', '0'], '--rate must be an integer from 1 to 3000'],
    [['backfill', '--subscriber', 'b', '--rate', '2.5'], '--rate must be an integer'],
    [
      ['backfill', '--subscriber', 'b', '--max-messages', '-1'],
      "Option '--max-messages' argument is ambiguous",
    ],
    [['redrive', '--method', 'teleport'], '--method must be move-task or loop'],
    [['status', '--aws-endpoint', 'ftp://x'], 'must be an http(s) URL'],
    [['status', 'extra'], 'unknown command "status extra"'],
    [['history'], 'history needs one ORDER_ID'],
    [['history', '1', '2'], 'unknown command "history 1 2"'],
    [['history', 'abc'], 'ORDER_ID "abc" is not an order id'],
    [['history', '9223372036854775808'], 'is not an order id'],
    [['history', '012'], 'is not an order id'],
    [['history', '12', '--subscriber', 'x'], "Unknown option '--subscriber'"],
    [['status', '--all-versions'], "Unknown option '--all-versions'"],
    [['budget', 'release'], '--token-parameter is required'],
    [['budget', 'release', '--token-parameter', 'a b'], 'is not an SSM parameter name'],
    [['budget', 'reset'], 'unknown command "budget reset"'],
  ])('refuses %j as a usage error', (argv, message) => {
    expect(() => parseOpsArgs(argv)).toThrow(UsageError);
    expect(() => parseOpsArgs(argv)).toThrow(message);
  });
});
