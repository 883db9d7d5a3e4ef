// Which poller the reconcile CLI takes the partner's URL and token parameter from.
import { describe, expect, it } from 'vitest';
import { pollerOf } from '../../../tools/reconcile/cli.js';

const FEEDS = { FeedPollers: JSON.stringify({ eu: 'poller-eu', uk: 'poller-uk' }) };

describe('the poller the reconcile CLI reads', () => {
  it('is the poller of --feed-id on a stack of several feeds, else the first', () => {
    expect(pollerOf(FEEDS, 'uk')).toBe('poller-uk');
    expect(pollerOf(FEEDS, undefined)).toBe('poller-eu');
  });

  it('is refused for a --feed-id the stack does not have, rather than another feed’s poller', () => {
    expect(() => pollerOf(FEEDS, 'us')).toThrow('--feed-id us: the stack has no such feed (feeds: eu, uk)');
  });

  it("is a single-feed stack's only poller", () => {
    expect(pollerOf({ ...FEEDS, PollerFunctionName: 'poller' }, 'anything')).toBe('poller');
  });
});
