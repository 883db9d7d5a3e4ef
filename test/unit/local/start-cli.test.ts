import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STACK_NAME } from '../../../infra/app.js';
import { checkLocalRunOptions, DEFAULT_STACK_NAME } from '../../../tools/local/runtime.js';
import { parseCli, resumeCommand } from '../../../tools/local/start.js';

const dir = mkdtempSync(join(tmpdir(), 'start-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm start flags', () => {
  it('runs sharded feeds against a simulator that rate-limits their shared token (--token-rate-limit)', () => {
    const { options } = parseCli(['--shards', '3', '--token-rate-limit', '2'], {});

    expect(options).toMatchObject({ shards: 3, tokenRateLimit: 2 });
  });

  // start.ts prints these with the usage and exits 2 (test/e2e/help.test.ts runs one bad flag).
  it.each([
    [['--token-rate-limit', '0'], '--token-rate-limit must be a positive'],
    [
      ['--api-url', 'http://127.0.0.1:1', '--token-rate-limit', '2'],
      'not with --api-url',
      { PARTNER_API_TOKEN: 't' },
    ],
    [['--orders', 'many'], '--orders must be an integer'],
    [['--api-url', 'http://127.0.0.1:9/x'], 'needs the partner token: set PARTNER_API_TOKEN'],
    [['--shards', '6'], '--shards must be an integer from 1 to 5'],
    [['--shards', '2', '--scenario', 'test-versioning'], 'not with --api-url or --scenario'],
    [['--give-up-after', '90'], '--give-up-after must be a duration from 1s to 24h, e.g. 90s, 15m or 2h'],
    [['--give-up-after', '0s'], '--give-up-after must be a duration from 1s to 24h'],
    [['--give-up-after', '25h'], '--give-up-after must be a duration from 1s to 24h'],
    [['--give-up-after', '1.5m'], '--give-up-after must be a duration'],
    [['--senario', 'test-versioning'], "Unknown option '--senario'; did you mean --scenario?"],
  ] as Array<[string[], string, NodeJS.ProcessEnv?]>)(
    'refuses %j before starting anything',
    (argv, message, env = {}) => {
      expect(() => checkLocalRunOptions(parseCli(argv, env).options)).toThrow(message);
    },
  );

  it('reads --give-up-after in seconds, minutes or hours', () => {
    const giveUpAfter = (value: string) => parseCli(['--give-up-after', value], {}).options.giveUpAfterMs;

    expect([giveUpAfter('90s'), giveUpAfter('15m'), giveUpAfter('2h')]).toEqual([90_000, 900_000, 7_200_000]);
    expect(parseCli([], {}).options.giveUpAfterMs).toBeUndefined();
  });

  it('prints a resume command with the flags that matter, against the kept emulator, never the token nor --reset-data', () => {
    const tokenFile = join(dir, 'my token');
    writeFileSync(tokenFile, 'secret-token-4f1d\n');
    const cli = parseCli(
      [
        ...['--api-url', 'http://127.0.0.1:9/test-versioning', '--token-file', tokenFile, '--reset-data'],
        ...[
          '--feeds',
          '2',
          '--subscriber',
          'billing',
          '--give-up-after',
          '15s',
          '--summary-json',
          'out.json',
        ],
        '--verbose',
      ],
      {},
    );

    const command = resumeCommand(cli, 'http://localhost:41191');

    expect(command).toBe(
      `npm start -- --aws-endpoint http://localhost:41191 --api-url http://127.0.0.1:9/test-versioning --token-file '${tokenFile}' --feeds 2 --subscriber billing --give-up-after 15s --summary-json out.json`,
    );
    expect(command).not.toContain('secret-token-4f1d');
    // The built-in simulator: its feed again (the token is the one stored at the endpoint).
    expect(
      resumeCommand(parseCli(['--orders', '40', '--seed', '3', '--watch'], {}), 'http://localhost:5000'),
    ).toBe('npm start -- --aws-endpoint http://localhost:5000 --orders 40 --seed 3 --watch');
  });

  it('names the stack as the CDK app does', () => {
    expect(DEFAULT_STACK_NAME).toBe(STACK_NAME);
  });
});
