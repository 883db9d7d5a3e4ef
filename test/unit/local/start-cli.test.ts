import { describe, expect, it } from 'vitest';
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
});
