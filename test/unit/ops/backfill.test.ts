// Backfill with fake ports: orders read back exactly from their table items, batches of 10, a checkpoint
// after each batch, resuming after an interrupted run with the same runId, and the rate limit.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { storedOrderItem } from '../../../functions/core/adapters/stored-order-item.js';
import { saleOf } from '../../../functions/core/apply/sale.js';
import { parseOrderVersionMessage } from '../../../functions/core/contract/consumer-kit.js';
import type { OutgoingMessage } from '../../../functions/core/contract/order-version-message.js';
import type { Order } from '../../../functions/core/model/types.js';
import {
  type BackfillPorts,
  type BackfillRequest,
  type Checkpoint,
  runBackfill,
} from '../../../tools/ops/backfill.js';
import { orderOfStoredItem } from '../../../tools/store/stored-order.js';
import { sampleOrder, toOrder } from '../../fixtures/orders.js';
import { historyItem } from '../../support/ops.js';

function order(id: number | bigint, version: number | bigint = 2): Order {
  return { ...toOrder(sampleOrder()), id, version };
}

describe('orderOfStoredItem', () => {
  it('gives back the stored order exactly, int64 beyond 2^53 included, without its sale entry, with its finding codes', () => {
    const stored: Order = { ...order(2n ** 63n - 1n, 2n ** 53n + 1n), status: 'accepted' };
    const sale = saleOf(stored);
    expect(sale).toBeDefined();
    const { item } = storedOrderItem(stored, sale, {
      findingCodes: ['unknown-field'],
      correlationId: 'poll:r:1',
    });

    expect(orderOfStoredItem(item)).toEqual({
      order: stored,
      findings: [{ code: 'unknown-field', detail: 'recorded when this version was ingested' }],
    });
  });

  it('decompresses items stored gzip-compressed', () => {
    const large = order(5);
    const base = large.items[0];
    if (base === undefined) throw new Error('fixture has no item');
    large.items = Array.from({ length: 900 }, (_, index) => ({
      ...base,
      id: `item-${index}`,
      name: 'x'.repeat(400),
    }));
    const stored = storedOrderItem(large, undefined, undefined);
    expect(stored.itemsCompressed).toBe(true);

    expect(orderOfStoredItem(stored.item).order).toEqual(large);
  });
});

/** An orders table of `count` items in scan order, and a recording fake of every other port. */
function fakePorts(count: number, checkpoint?: Checkpoint) {
  const items = Array.from(
    { length: count },
    (_, index) => storedOrderItem(order(1000 + index), undefined, undefined).item,
  );
  const sent: OutgoingMessage[][] = [];
  const checkpoints: Checkpoint[] = [];
  const sleeps: number[] = [];
  let clock = 1_000_000;
  let stored = checkpoint;
  const ports: BackfillPorts = {
    async scan(afterOrderId, limit) {
      const start =
        afterOrderId === undefined ? 0 : items.findIndex((item) => item.orderId?.N === afterOrderId) + 1;
      const page: Array<Record<string, AttributeValue>> = items.slice(start, start + limit);
      return { items: page, more: start + limit < items.length };
    },
    readCheckpoint: async () => stored,
    async writeCheckpoint(next) {
      stored = { ...next };
      checkpoints.push({ ...next });
    },
    publisher: {
      async publish(messages) {
        sent.push(messages);
        clock += 5;
      },
    },
    estimateTotal: async () => count,
    now: () => clock,
    async sleep(ms) {
      sleeps.push(ms);
      clock += ms;
    },
  };
  return { ports, sent, checkpoints, sleeps, current: () => stored };
}

const request = (overrides: Partial<BackfillRequest> = {}): BackfillRequest => ({
  subscriber: 'billing',
  feedId: 'orders',
  rate: 1000,
  maxMessages: undefined,
  restart: false,
  progress: () => undefined,
  ...overrides,
});

describe('runBackfill', () => {
  it('sends every order once in batches of 10 with origin backfill, checkpointing each batch, ends done, and a run after that starts anew', async () => {
    const fake = fakePorts(235);

    const summary = await runBackfill(fake.ports, request());

    const messages = fake.sent.flat().map((message) => parseOrderVersionMessage(message.body));
    expect(fake.sent.every((batch) => batch.length <= 10)).toBe(true);
    expect(messages.map((message) => message.order.id)).toEqual(
      Array.from({ length: 235 }, (_, index) => 1000 + index),
    );
    expect(messages.every((message) => message.source.origin === 'backfill')).toBe(true);
    expect(new Set(messages.map((message) => message.source.correlationId))).toEqual(
      new Set([`backfill:${summary.runId}`]),
    );
    expect(summary).toMatchObject({ sent: 235, sentTotal: 235, finished: true, resumed: false, skipped: 0 });
    expect(fake.current()).toMatchObject({ status: 'done', sent: 235, lastOrderId: '1234' });
    // One checkpoint at the start, one per batch, one at the end.
    expect(fake.checkpoints).toHaveLength(1 + 24 + 1);
    const again = await runBackfill(fake.ports, request());
    expect(again).toMatchObject({ resumed: false, sent: 235 });
    expect(again.runId).not.toBe(summary.runId);
  });

  it('stops at --max-messages and resumes after the checkpoint with the same runId, skipping nothing', async () => {
    const fake = fakePorts(57);

    const first = await runBackfill(fake.ports, request({ maxMessages: 23 }));
    const second = await runBackfill(fake.ports, request());

    const ids = fake.sent.flat().map((message) => Number(message.orderId));
    expect(first).toMatchObject({ sent: 23, finished: false, stoppedBy: 'max-messages' });
    expect(second).toMatchObject({
      sent: 34,
      sentTotal: 57,
      finished: true,
      resumed: true,
      runId: first.runId,
    });
    expect(ids).toEqual(Array.from({ length: 57 }, (_, index) => 1000 + index));
  });

  it('stops at the next batch when interrupted, and --restart starts a new run from the start', async () => {
    const fake = fakePorts(40);
    const controller = new AbortController();

    const interrupted = await runBackfill(
      fake.ports,
      request({
        signal: controller.signal,
        progress: () => controller.abort(),
      }),
    );
    const restarted = await runBackfill(fake.ports, request({ restart: true }));

    expect(interrupted).toMatchObject({ sent: 10, finished: false, stoppedBy: 'interrupt' });
    expect(restarted).toMatchObject({ sent: 40, resumed: false, finished: true });
    expect(restarted.runId).not.toBe(interrupted.runId);
  });

  it("starts over rather than resume an unfinished --all-versions run's checkpoint left under its key", async () => {
    const leftByAllVersions: Checkpoint = {
      runId: 'all-versions-run',
      status: 'running',
      lastOrderId: '1020',
      lastVersion: '2',
      sent: 21,
      startedAt: '2026-11-24T00:00:00.000Z',
      updatedAt: '2026-11-24T00:01:00.000Z',
    };
    const fake = fakePorts(30, leftByAllVersions);

    const summary = await runBackfill(fake.ports, request());

    const ids = fake.sent.flat().map((message) => Number(message.orderId));
    expect(summary).toMatchObject({ resumed: false, sent: 30, finished: true });
    expect(summary.runId).not.toBe('all-versions-run');
    expect(ids).toEqual(Array.from({ length: 30 }, (_, index) => 1000 + index));
  });

  it('keeps to the rate: batches of at most `rate` messages, never ahead of rate per second', async () => {
    const fake = fakePorts(30);

    const summary = await runBackfill(fake.ports, request({ rate: 4 }));

    expect(fake.sent.every((batch) => batch.length <= 4)).toBe(true);
    // 30 messages at 4/s: the last batch is due 7.5 s after the start.
    expect(summary.elapsedMs).toBeGreaterThanOrEqual(7_500);
    expect(fake.sleeps.length).toBeGreaterThan(0);
  });

  it('reports progress with the estimated total', async () => {
    const fake = fakePorts(12);
    const lines: string[] = [];

    await runBackfill(fake.ports, request({ progress: (line) => lines.push(line) }));

    expect(lines[0]).toMatch(/^backfill billing: 10 of ~12 sent \(\d+\/s\)$/);
    expect(lines.at(-1)).toMatch(/^backfill billing: 12 of ~12 sent/);
  });
});

describe('runBackfill --all-versions (the order history table)', () => {
  /**
   * A history table in scan order: each order's versions together, ascending (as a DynamoDB scan returns
   * them); the fake's scan resumes after (orderId, version) as ExclusiveStartKey does.
   */
  function fakeHistoryPorts(orders: number, versionsEach: number) {
    const items = Array.from({ length: orders * versionsEach }, (_, index) => {
      const version = (index % versionsEach) + 1;
      return historyItem(order(2000 + Math.floor(index / versionsEach), version), {
        fetchedAt: `2026-03-01T10:00:0${version}.000Z`,
        feedId: 'eu-orders',
        arrivedAfterVersion: version === 1 ? 2 : undefined,
      });
    });
    const base = fakePorts(0);
    const scans: Array<[string | undefined, string | undefined]> = [];
    base.ports.scan = async (afterOrderId, limit, afterVersion) => {
      scans.push([afterOrderId, afterVersion]);
      const start =
        afterOrderId === undefined
          ? 0
          : items.findIndex((item) => item.orderId?.N === afterOrderId && item.version?.N === afterVersion) +
            1;
      return { items: items.slice(start, start + limit), more: start + limit < items.length };
    };
    base.ports.estimateTotal = async () => items.length;
    return { ...base, scans };
  }

  it('sends every stored version, each order ascending, with the fetchedAt and feedId it was stored with', async () => {
    const fake = fakeHistoryPorts(4, 3);

    const summary = await runBackfill(fake.ports, request({ allVersions: true }));

    const messages = fake.sent.flat().map((message) => parseOrderVersionMessage(message.body));
    expect(messages.map((message) => `${message.order.id}/${message.order.version}`)).toEqual(
      [2000, 2001, 2002, 2003].flatMap((id) => [`${id}/1`, `${id}/2`, `${id}/3`]),
    );
    expect(messages[1]?.source).toMatchObject({
      feedId: 'eu-orders',
      fetchedAt: '2026-03-01T10:00:02.000Z',
      origin: 'backfill',
    });
    expect(summary).toMatchObject({ sent: 12, finished: true });
    expect(fake.current()).toMatchObject({ status: 'done', lastOrderId: '2003', lastVersion: '3' });
  });

  it('resumes after the last version sent, inside an order, skipping and doubling nothing', async () => {
    const fake = fakeHistoryPorts(5, 3);

    const first = await runBackfill(fake.ports, request({ allVersions: true, maxMessages: 7 }));
    const second = await runBackfill(fake.ports, request({ allVersions: true }));

    expect(first).toMatchObject({ sent: 7, stoppedBy: 'max-messages' });
    expect(second).toMatchObject({ resumed: true, runId: first.runId, sent: 8, sentTotal: 15 });
    // Version 1 of order 2002 was the seventh: the second run resumes at version 2 of that order.
    expect(fake.scans[1]).toEqual(['2002', '1']);
    const sent = fake.sent.flat().map((message) => parseOrderVersionMessage(message.body).order);
    expect(sent.map((o) => `${o.id}/${o.version}`)).toEqual(
      [2000, 2001, 2002, 2003, 2004].flatMap((id) => [`${id}/1`, `${id}/2`, `${id}/3`]),
    );
  });
});
