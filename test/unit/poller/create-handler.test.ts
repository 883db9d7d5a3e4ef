// The poller handler built by its factory with fake ports: what it reports per invocation (outcome,
// duration and pace metrics, one flush) and how a failed run surfaces (PollRunFailedError, token dropped).
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { AuthenticationError } from '../../../functions/core/partner/errors.js';
import type { PollerConfig } from '../../../functions/poller/config.js';
import {
  createPollerHandler,
  type PollerMetrics,
  PollRunFailedError,
} from '../../../functions/poller/create-handler.js';
import { lambdaContext } from '../../../tools/local/lambda-context.js';
import { sampleOrder } from '../../fixtures/orders.js';
import {
  MemoryCursorStore,
  MemoryQuarantine,
  RecordingPublisher,
  ScriptedPartner,
} from '../../support/fakes.js';

const config: PollerConfig = {
  feedId: 'feed-a',
  cursorTableName: 'cursors',
  partnerBaseUrl: 'https://partner.example.com',
  tokenParameterName: '/token',
  ordersQueueUrl: 'orders',
  downstreamQueueUrls: {},
  quarantineBucketName: 'quarantine',
  pageSize: 10,
  maxPagesPerRun: 10,
  minAgeMinutes: undefined,
  vendorIds: undefined,
  orderIds: undefined,
  arrayQueryEncoding: 'repeat',
  recoveryLookbackMinutes: undefined,
  safetyMarginMs: 1_000,
  leaseGraceMs: 1_000,
  authBackoff: { initialMs: 60_000, maxMs: 600_000 },
};

function recordingMetrics() {
  const recorded: Array<[string, number]> = [];
  let published = 0;
  const metrics: PollerMetrics = {
    count: (name, value = 1) => recorded.push([name, value]),
    milliseconds: (name, value) => recorded.push([name, value]),
    seconds: (name, value) => recorded.push([name, value]),
    publish: () => {
      published += 1;
    },
  };
  return { metrics, recorded, published: () => published };
}

function build(partner: ScriptedPartner) {
  const sink = recordingMetrics();
  let invalidated = 0;
  const handler = createPollerHandler({
    config,
    cursorStore: new MemoryCursorStore(),
    partner,
    publisher: new RecordingPublisher(),
    quarantine: new MemoryQuarantine(),
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    metrics: sink.metrics,
    tokens: { invalidate: () => (invalidated += 1) },
  });
  return { handler, sink, invalidated: () => invalidated };
}

describe('createPollerHandler', () => {
  it("returns the run's outcome and records its duration and pace, flushing metrics once", async () => {
    const { handler, sink } = build(
      new ScriptedPartner(() => ({ data: [sampleOrder()], hasMore: false, nextPageId: 'c1' })),
    );

    const outcome = await handler({}, lambdaContext('poller', 60_000));

    expect(outcome).toMatchObject({ kind: 'caught-up', pages: 1, versionsPublished: 1, paceDelayMs: 0 });
    expect(sink.recorded.map(([name]) => name)).toEqual(
      expect.arrayContaining(['PagesFetched', 'VersionsPublished', 'RunDurationMs', 'PaceDelayMs']),
    );
    expect(sink.published()).toBe(1);
  });

  it('throws PollRunFailedError carrying the outcome on a 401, and drops the cached token', async () => {
    const { handler, sink, invalidated } = build(new ScriptedPartner(() => new AuthenticationError()));

    const error = await handler({}, lambdaContext('poller', 60_000)).catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PollRunFailedError);
    expect((error as PollRunFailedError).outcome).toMatchObject({ kind: 'auth-failed', failed: true });
    expect(invalidated()).toBe(1);
    expect(sink.published()).toBe(1);
  });
});
