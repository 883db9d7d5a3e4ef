// The run reports its own partner retries (through the call observers, not module state), and the feed
// paces itself under repeated 429s: the delay between page requests rises while pages meet 429s, falls
// after pages without, and is kept on the cursor item for the next run (issue 10 point 2).
import { describe, expect, it } from 'vitest';
import { pollFeed } from '../../../functions/core/ingest/poll-feed.js';
import type { CallOptions, OrderUpdatesQuery, RawPage } from '../../../functions/core/partner/types.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import { sampleOrder } from '../../fixtures/orders.js';
import {
  CountingMetrics,
  MemoryCursorStore,
  MemoryLog,
  MemoryQuarantine,
  RecordingPublisher,
  ScriptedPartner,
} from '../../support/fakes.js';
import { pollerConfig } from '../../support/poller-config.js';

const FEED = 'feed-a';
const SETTINGS: PollerConfig = pollerConfig({ maxPagesPerRun: 100 });

/** Pages c0 → c1 → … → c{last}; the pages in `limited` answer one 429 (reported as a wait) first. */
function feed(last: number, limited: ReadonlySet<number>) {
  return (query: OrderUpdatesQuery, _call: number, options: CallOptions): RawPage => {
    const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
    if (limited.has(index))
      options.onRetry?.({ kind: 'rate-limited', attempt: 1, waitMs: 1000, status: 429 });
    if (index === 1) options.onRetry?.({ kind: 'server-error', attempt: 1, waitMs: 200, status: 503 });
    return { data: [sampleOrder({ id: index + 1 })], hasMore: index < last, nextPageId: `c${index + 1}` };
  };
}

function setup(answer: ConstructorParameters<typeof ScriptedPartner>[0]) {
  const sleeps: number[] = [];
  const clock = { now: 1_000_000 };
  const deps = {
    cursorStore: new MemoryCursorStore(),
    partner: new ScriptedPartner(answer),
    publisher: new RecordingPublisher(),
    quarantine: new MemoryQuarantine(),
    metrics: new CountingMetrics(),
    log: new MemoryLog(),
    now: () => clock.now,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      clock.now += ms;
    },
  };
  const run = (owner: string, settings: PollerConfig = SETTINGS) =>
    pollFeed(deps, settings, { owner, deadline: clock.now + 600_000, leaseExpiresAt: clock.now + 900_000 });
  return { deps, sleeps, run };
}

describe('pollFeed pacing and retry counts', () => {
  it("counts the run's partner retries and rate-limit waits in its outcome and metrics", async () => {
    const { deps, run } = setup(feed(3, new Set([2, 3])));

    const outcome = await run('run-1');

    expect(outcome).toMatchObject({ kind: 'caught-up', partnerRetries: 1, rateLimitWaits: 2 });
    expect(deps.metrics.counts).toMatchObject({ PartnerRetries: 1, RateLimitWaits: 2 });
  });

  it('waits longer between requests while pages meet 429s, and less once they stop', async () => {
    const { sleeps, run } = setup(feed(8, new Set([1, 2, 3])));

    await run('run-1');

    // After pages 1, 2, 3 (each met a 429) the delay doubles from 250 ms; afterwards it falls by 50 ms a page.
    expect(sleeps).toEqual([250, 500, 1000, 950, 900, 850, 800]);
  });

  it('keeps the pace on the cursor item, so the next run starts from it', async () => {
    const { deps, sleeps, run } = setup(feed(5, new Set([1, 2, 3])));
    const first = await run('run-1', { ...SETTINGS, maxPagesPerRun: 4 });
    expect(first).toMatchObject({ kind: 'page-limit', paceDelayMs: 1000 });
    expect(deps.cursorStore.items.get(FEED)).toMatchObject({ pageId: 'c4', paceDelayMs: 1000 });

    sleeps.length = 0;
    await run('run-2');

    // Page 4 met no 429: the request for page 5 waits one step less than the stored pace.
    expect(sleeps).toEqual([950]);
  });
});
