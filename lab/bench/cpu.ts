// Section 1: CPU per order version of the poller's page work, against the bare JSON work the same data
// needs at minimum. The poller's target: parsing and publishing a page take at most 5 % of the partner's
// latency for it (75 µs per version against 150 ms per 100-version page). (The consumer's CPU section was
// dropped with its figure; `storedItems` remains for the emulator's ceiling.)
import type { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { applyOrderVersion } from '../../functions/core/apply/apply-order-version.js';
import { parseOrderVersionMessage } from '../../functions/core/contract/consumer-kit.js';
import {
  type OutgoingMessage,
  SQS_MAX_MESSAGE_BYTES,
} from '../../functions/core/contract/order-version-message.js';
import { preparePage } from '../../functions/core/ingest/prepare-page.js';
import { compareCpu, sink } from './measure.js';
import { figure, type Section } from './report.js';

export interface FetchedPage {
  /** The cursor the page was requested with (null: the first page). */
  pageId: string | null;
  body: string;
}

/** Reads the whole generated feed once, page by page, as the poller would (pageSize 100). */
export async function fetchFeedPages(
  baseUrl: string,
  token: string,
  pageSize: number,
): Promise<FetchedPage[]> {
  const pages: FetchedPage[] = [];
  let pageId: string | null = null;
  for (;;) {
    const query = new URLSearchParams({ pageSize: String(pageSize) });
    if (pageId !== null) query.set('pageId', pageId);
    const response = await fetch(`${baseUrl}/v1/orderUpdates?${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = await response.text();
    if (!response.ok) throw new Error(`simulator answered ${response.status}: ${body.slice(0, 200)}`);
    const page = JSON.parse(body) as { data: unknown[]; hasMore: boolean; nextPageId?: string };
    if (page.data.length > 0) pages.push({ pageId, body });
    if (!page.hasMore || page.nextPageId === undefined) return pages;
    pageId = page.nextPageId;
  }
}

const CONTEXT = {
  feedId: 'bench-feed',
  fetchedAt: '2025-01-01T00:00:00.000Z',
  correlationId: 'poll:bench:1',
  maxMessageBytes: SQS_MAX_MESSAGE_BYTES,
};

/** What the consumer phase and the pipeline phase reuse from the poller's output. */
export interface PreparedFeed {
  versions: number;
  quarantined: number;
  /** The messages the poller publishes, page by page. */
  pages: OutgoingMessage[][];
  /** Message bodies as the orders queue carries them, in stream order. */
  bodies: string[];
}

export function prepareFeed(pages: readonly FetchedPage[]): PreparedFeed {
  const messagePages: OutgoingMessage[][] = [];
  let quarantined = 0;
  for (const page of pages) {
    const { data } = JSON.parse(page.body) as { data: unknown[] };
    const prepared = preparePage(data, { ...CONTEXT, pageId: page.pageId });
    quarantined += prepared.quarantined.length;
    messagePages.push(prepared.messages);
  }
  const bodies = messagePages.flat().map((message) => message.body);
  return { versions: bodies.length, quarantined, pages: messagePages, bodies };
}

/** The poller's page CPU may take at most this share of the partner's latency per page. */
export const POLLER_CPU_SHARE_OF_LATENCY = 0.05;

export async function pollerCpuSection(
  pages: readonly FetchedPage[],
  feed: PreparedFeed,
  options: { rounds: number; pageSize: number; apiLatencyMs: number },
): Promise<Section> {
  // Measured: what the poller's CPU does per page (the client's JSON.parse of the body, then preparePage:
  // parseOrder and the message of each version).
  const measured = () => {
    for (const page of pages) {
      const { data } = JSON.parse(page.body) as { data: unknown[] };
      sink(preparePage(data, { ...CONTEXT, pageId: page.pageId }));
    }
  };
  // Floor: parse the same bodies, serialise each record once (one message body per version).
  const floor = () => {
    for (const page of pages) {
      const { data } = JSON.parse(page.body) as { data: unknown[] };
      for (const record of data) sink(JSON.stringify(record));
    }
  };
  const { rounds, pageSize, apiLatencyMs } = options;
  const result = await compareCpu(measured, floor, { rounds, warmup: 3, warmupMs: rounds * 50 });
  const perVersion = (ms: number) => (ms * 1000) / feed.versions;
  const bytes = pages.reduce((sum, page) => sum + Buffer.byteLength(page.body), 0);
  const perFullPageMs = (perVersion(result.measuredMs) * pageSize) / 1000;
  return {
    id: 'pollerCpu',
    title: 'Poller CPU per order version',
    floorIs: `JSON.parse of the page bodies + JSON.stringify of each record; per page: the partner's latency (target ${POLLER_CPU_SHARE_OF_LATENCY * 100} % of it)`,
    figures: [
      figure('parse + preparePage', 'µs/version', perVersion(result.measuredMs), perVersion(result.floorMs)),
      // With no latency (--api-latency-ms 0) there is nothing to hold the page's CPU against.
      ...(apiLatencyMs > 0
        ? [
            figure(
              `parse + preparePage per ${pageSize}-version page`,
              'ms',
              perFullPageMs,
              apiLatencyMs,
              POLLER_CPU_SHARE_OF_LATENCY,
            ),
          ]
        : []),
    ],
    details: {
      pages: pages.length,
      versions: feed.versions,
      quarantined: feed.quarantined,
      pageBytes: bytes,
      bytesPerVersion: bytes / feed.versions,
      fastestRoundMs: { measured: result.measuredMs, floor: result.floorMs },
      medianRoundMs: { measured: result.measuredMedianMs, floor: result.floorMedianMs },
      rounds: result.rounds,
      perPageCpuMs: { measured: result.measuredMs / pages.length, floor: result.floorMs / pages.length },
      budgetMicrosPerVersion: (POLLER_CPU_SHARE_OF_LATENCY * apiLatencyMs * 1000) / pageSize,
    },
  };
}

/**
 * The items exactly as the consumer stores them (unmarshalled), in message order: the real use case over a
 * DynamoDB client whose `send` only records its input. The emulator's ceiling writes the same items.
 */
export async function storedItems(feed: PreparedFeed): Promise<Array<Record<string, unknown>>> {
  const sent: PutItemCommand[] = [];
  const client = {
    send: async (command: PutItemCommand) => {
      sent.push(command);
      return {};
    },
  } as unknown as DynamoDBClient;
  for (const body of feed.bodies) {
    await applyOrderVersion({ client, tableName: 'orders' }, parseOrderVersionMessage(body));
  }
  return sent.map((command) => unmarshall(command.input.Item ?? {}));
}
