// The poller's spans (issue 12 point 3), through the tracing port with a recording fake: one span per run
// annotated with the feed and the run id, one per page annotated with the feed, the page number and the
// correlation id its messages carry, one per partner request; failures mark the span they happened in.
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { NO_METRICS } from '../../../functions/core/observability/powertools.js';
import { PartnerError } from '../../../functions/core/partner/errors.js';
import { createPollerHandler } from '../../../functions/poller/create-handler.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder } from '../../fixtures/orders.js';
import {
  MemoryCursorStore,
  MemoryQuarantine,
  RecordingPublisher,
  RecordingTracing,
  ScriptedPartner,
} from '../../support/fakes.js';
import { pollerConfig } from '../../support/poller-config.js';

const config = pollerConfig();

/** Pages c0 → c1 (last), two orders each; the second holds one record that is quarantined. */
const twoPages = () =>
  new ScriptedPartner((query) =>
    query.pageId === undefined
      ? { data: [sampleOrder({ id: 1 }), sampleOrder({ id: 2 })], hasMore: true, nextPageId: 'c1' }
      : { data: [sampleOrder({ id: 3 }), { id: 4 }], hasMore: false, nextPageId: 'c2' },
  );

function build(partner: ScriptedPartner) {
  const tracing = new RecordingTracing();
  const publisher = new RecordingPublisher();
  const handler = createPollerHandler({
    config,
    cursorStore: new MemoryCursorStore(),
    partner,
    publisher,
    quarantine: new MemoryQuarantine(),
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    metrics: NO_METRICS,
    tracing,
  });
  return { handler, tracing, publisher };
}

describe('poller spans', () => {
  it('one per run (feed, run id) with a span per page inside it (feed, page, the messages’ correlation id)', async () => {
    const { handler, tracing, publisher } = build(twoPages());
    const context = lambdaContext('poller', 60_000);

    await handler({}, context);

    const [run, ...others] = tracing.named('## poll run');
    expect(others).toEqual([]);
    expect(run).toMatchObject({
      annotations: { feedId: 'feed-a', runId: context.awsRequestId },
      details: { outcome: 'caught-up', pages: 2, versionsPublished: 3 },
      parent: undefined,
      ended: true,
    });
    const pages = tracing.named('### page');
    expect(pages.map((page) => page.annotations)).toEqual([
      { feedId: 'feed-a', page: 1, correlationId: `poll:${context.awsRequestId}:1` },
      { feedId: 'feed-a', page: 2, correlationId: `poll:${context.awsRequestId}:2` },
    ]);
    expect(pages.map((page) => page.details)).toEqual([
      { versions: 2, versionsPublished: 2, quarantined: 0 },
      { versions: 2, versionsPublished: 1, quarantined: 1 },
    ]);
    for (const page of pages) expect(page.parent).toBe(run);
    // The page span's correlation id is the one its messages carry.
    expect(publisher.published.map((message) => message.attributes.correlationId?.StringValue)).toEqual([
      pages[0]?.annotations.correlationId,
      pages[0]?.annotations.correlationId,
      pages[1]?.annotations.correlationId,
    ]);
  });

  it('one per partner request inside the run, with details only (the annotation budget is the pages’)', async () => {
    const { handler, tracing } = build(twoPages());

    await handler({}, lambdaContext('poller', 60_000));

    const fetches = tracing.named('### partner fetch');
    expect(fetches.map((fetch) => [fetch.annotations, fetch.details])).toEqual([
      [{}, { page: 1, versions: 2, rateLimited: false }],
      [{}, { page: 2, versions: 2, rateLimited: false }],
    ]);
    const [run] = tracing.named('## poll run');
    for (const fetch of fetches) expect(fetch.parent).toBe(run);
  });

  it('marks the partner request and the run as failed on a 401, with the errors’ names', async () => {
    const { handler, tracing } = build(new ScriptedPartner(() => new PartnerError('auth')));

    await expect(handler({}, lambdaContext('poller', 60_000))).rejects.toThrow(
      'poll run failed: auth-failed',
    );

    expect(tracing.named('### partner fetch').map((fetch) => fetch.error)).toEqual([
      expect.stringMatching(/^PartnerError: /),
    ]);
    expect(tracing.named('## poll run').map((run) => run.error)).toEqual([
      'PollRunFailedError: poll run failed: auth-failed',
    ]);
    expect(tracing.named('### page')).toEqual([]);
  });
});
