import { describe, expect, it } from 'vitest';
import { STACK_NAME } from '../../../infra/app.js';
import { checkLocalRunOptions, DEFAULT_STACK_NAME } from '../../../tools/local/runtime.js';
import { parseCli } from '../../../tools/local/start.js';

describe('npm start flags', () => {
  it('runs sharded feeds against a simulator that rate-limits their shared token (--token-rate-limit)', () => {
    const { options } = parseCli(['--shards', '3', '--token-rate-limit', '2'], {});

    expect(options).toMatchObject({ shards: 3, tokenRateLimit: 2 });
  });

  it('refuses a rate limit below 1, or one for a partner API it does not serve', () => {
    expect(() => parseCli(['--token-rate-limit', '0'], {})).toThrow('--token-rate-limit must be a positive');
    expect(() =>
      parseCli(['--api-url', 'http://127.0.0.1:1', '--token-rate-limit', '2'], { PARTNER_API_TOKEN: 't' }),
    ).toThrow('not with --api-url');
  });

  // start.ts prints these with the usage and exits 2 (test/e2e/local-mode.test.ts runs one bad flag).
  it.each([
    [['--orders', 'many'], '--orders must be an integer'],
    [['--api-url', 'http://127.0.0.1:9/x'], 'needs the partner token: set PARTNER_API_TOKEN'],
    [['--shards', '6'], '--shards must be an integer from 1 to 5'],
    [['--shards', '2', '--scenario', 'test-versioning'], 'not with --api-url or --scenario'],
  ])('refuses %j before starting anything', (argv, message) => {
    expect(() => checkLocalRunOptions(parseCli(argv, {}).options)).toThrow(message);
  });

  it('names the stack as the CDK app does', () => {
    expect(DEFAULT_STACK_NAME).toBe(STACK_NAME);
  });
});
