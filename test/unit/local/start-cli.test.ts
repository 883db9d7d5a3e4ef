import { describe, expect, it } from 'vitest';
import { STACK_NAME } from '../../../infra/app.js';
import { checkLocalRunOptions, DEFAULT_STACK_NAME } from '../../../tools/local/runtime.js';
import { parseCli } from '../../../tools/local/start.js';

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
  ] as Array<[string[], string, NodeJS.ProcessEnv?]>)(
    'refuses %j before starting anything',
    (argv, message, env = {}) => {
      expect(() => checkLocalRunOptions(parseCli(argv, env).options)).toThrow(message);
    },
  );

  it('names the stack as the CDK app does', () => {
    expect(DEFAULT_STACK_NAME).toBe(STACK_NAME);
  });
});
