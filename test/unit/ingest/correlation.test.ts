// Every message names the poll run and the page that fetched it (issue 12 point 3): `poll:<runId>:<page>`,
// in the body (source.correlationId, source.origin) and as the correlationId attribute; the poller's log
// line for the page carries the same id, so a message leads to the run's logs and back.
import { describe, expect, it } from 'vitest';
import { parseOrderVersionMessage } from '../../../functions/core/contract/consumer-kit.js';
import { pollFeed } from '../../../functions/core/ingest/poll-feed.js';
import type { OrderUpdatesQuery, RawPage } from '../../../functions/core/partner/types.js';
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

const SETTINGS: PollerConfig = pollerConfig({ maxPagesPerRun: 2 });

/** Pages p0 → p1 → p2 (last) with two orders each, chained by cursor `c1`, `c2`, `c3`. */
function threePages(query: OrderUpdatesQuery): RawPage {
  const index = query.pageId === undefined ? 0 : Number(query.pageId.slice(1));
  return {
    data: [sampleOrder({ id: index * 10 + 1 }), sampleOrder({ id: index * 10 + 2 })],
    hasMore: index < 2,
    nextPageId: `c${index + 1}`,
  };
}

function setup() {
  const deps = {
    cursorStore: new MemoryCursorStore(),
    partner: new ScriptedPartner(threePages),
    publisher: new RecordingPublisher(),
    quarantine: new MemoryQuarantine(),
    metrics: new CountingMetrics(),
    log: new MemoryLog(),
    now: () => 1_000_000,
  };
  const run = (owner: string) =>
    pollFeed(deps, SETTINGS, { owner, deadline: 2_000_000, leaseExpiresAt: 1_060_000 });
  return { deps, run };
}

describe('correlation ids of published messages', () => {
  it('name the run and the page within it, in the body and the attribute; a second run counts from 1 again', async () => {
    const { deps, run } = setup();

    await run('req-a'); // pages p0, p1 (page limit 2)
    await run('req-b'); // page p2

    const sent = deps.publisher.published.map((message) => ({
      id: message.orderId,
      source: parseOrderVersionMessage(message.body).source,
      attribute: message.attributes.correlationId?.StringValue,
    }));
    expect(sent.map(({ id, source }) => [id, source.correlationId, source.origin])).toEqual([
      [1, 'poll:req-a:1', 'poll'],
      [2, 'poll:req-a:1', 'poll'],
      [11, 'poll:req-a:2', 'poll'],
      [12, 'poll:req-a:2', 'poll'],
      [21, 'poll:req-b:1', 'poll'],
      [22, 'poll:req-b:1', 'poll'],
    ]);
    for (const message of sent) expect(message.attribute).toBe(message.source.correlationId);
  });

  it('are logged once per page with what the page handed off', async () => {
    const { deps, run } = setup();

    await run('req-a');

    const lines = deps.log.lines.filter((line) => line.message === 'page handed off');
    expect(lines.map((line) => line.attributes)).toEqual([
      { feedId: 'feed-a', correlationId: 'poll:req-a:1', versionsPublished: 2, quarantined: 0 },
      { feedId: 'feed-a', correlationId: 'poll:req-a:2', versionsPublished: 2, quarantined: 0 },
    ]);
  });

  it('travel with quarantined records in their log line', async () => {
    const deps = {
      ...setup().deps,
      partner: new ScriptedPartner(() => ({
        data: [{ ...sampleOrder({ id: 5 }), status: 'lost' }],
        hasMore: false,
        nextPageId: 'c1',
      })),
    };

    await pollFeed(deps, SETTINGS, { owner: 'req-q', deadline: 2_000_000, leaseExpiresAt: 1_060_000 });

    const line = deps.log.lines.find((entry) => entry.message === 'record quarantined');
    expect(line?.attributes).toMatchObject({ orderId: 5, correlationId: 'poll:req-q:1' });
  });
});
