// The ops command line: commands, shared and command flags, and what is refused as a usage error.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../tools/cli-args.js';
import { DEFAULT_STACK_NAME, parseOpsArgs } from '../../../tools/ops/args.js';

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

  it('reads two-word commands', () => {
    expect(parseOpsArgs(['quarantine', 'retry', '--yes'])).toMatchObject({ command: 'quarantine retry' });
    expect(parseOpsArgs(['quarantine', 'list'])).toMatchObject({ command: 'quarantine list' });
  });

  it('reads replay, redrive and backfill flags', () => {
    expect(parseOpsArgs(['replay', '--from-page', 'abc'])).toMatchObject({ fromPage: 'abc' });
    expect(parseOpsArgs(['redrive', '--queue', 'billing'])).toMatchObject({
      queue: 'billing',
      method: 'move-task',
    });
    expect(parseOpsArgs(['redrive', '--aws-endpoint', 'http://127.0.0.1:1'])).toMatchObject({
      method: 'loop',
    });
    expect(parseOpsArgs(['redrive', '--method', 'loop'])).toMatchObject({ method: 'loop' });
    expect(
      parseOpsArgs([
        'backfill',
        '--subscriber',
        'billing',
        '--rate',
        '20',
        '--max-messages',
        '5',
        '--restart',
      ]),
    ).toMatchObject({ subscriber: 'billing', rate: 20, maxMessages: 5, restart: true });
    expect(parseOpsArgs(['backfill', '--subscriber', 'billing'])).toMatchObject({
      rate: 50,
      maxMessages: undefined,
      allVersions: false,
    });
    expect(parseOpsArgs(['backfill', '--subscriber', 'billing', '--all-versions'])).toMatchObject({
      allVersions: true,
    });
  });

  it('reads history ORDER_ID as exact int64 text, with the shared flags', () => {
    expect(parseOpsArgs(['history', '9223372036854775807', '--json'])).toMatchObject({
      command: 'history',
      orderId: '9223372036854775807',
      shared: { json: true },
    });
    expect(parseOpsArgs(['history', '0'])).toMatchObject({ orderId: '0' });
    expect(parseOpsArgs(['history', '-h'])).toEqual({ command: 'help' });
  });

  it('passes reconcile its own flags, adding the default stack', () => {
    expect(
      parseOpsArgs(['reconcile', '--sample', '5', '--aws-endpoint', 'http://localhost:1']),
    ).toMatchObject({
      command: 'reconcile',
      argv: ['--sample', '5', '--aws-endpoint', 'http://localhost:1', '--stack-name', DEFAULT_STACK_NAME],
    });
    expect(parseOpsArgs(['reconcile', '--stack-name', 'X'])).toMatchObject({ argv: ['--stack-name', 'X'] });
  });

  it('answers help', () => {
    expect(parseOpsArgs(['--help'])).toEqual({ command: 'help' });
    expect(parseOpsArgs(['status', '-h'])).toEqual({ command: 'help' });
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
  ])('refuses %j as a usage error', (argv, message) => {
    expect(() => parseOpsArgs(argv)).toThrow(UsageError);
    expect(() => parseOpsArgs(argv)).toThrow(message);
  });
});
