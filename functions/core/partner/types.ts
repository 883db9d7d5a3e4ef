// The partner API's wire shapes that the client deals in, and the client's port.
import type { Int64 } from '../model/int64.js';

export interface OrderUpdatesQuery {
  /** Opaque cursor from a previous page; sent unmodified (only URL-encoded). Omitted: earliest page. */
  pageId?: string;
  /** 1..100 (spec default 10). */
  pageSize?: number;
  vendorIds?: string[];
  /** int64 ids (safe integers). */
  orderIds?: number[];
  /** Only results after this instant; sent as an ISO 8601 UTC string. */
  fromTimestamp?: Date | string;
  /** 1..1440. */
  minAgeMinutes?: number;
}

/** A page as served. Records stay raw (`unknown`): each one is validated on its own by parseOrder. */
export interface RawPage {
  hasMore: boolean;
  data: unknown[];
  nextPageId?: string;
}

export interface CallOptions {
  /** Epoch ms by which the call must have settled, retries and waits included. */
  deadline: number;
  signal?: AbortSignal;
  /** Called before every wait of this call (429, 5xx, network, 3xx, unreadable 200), for metrics and logs. Its errors are ignored. */
  onRetry?: (event: RetryEvent) => void;
}

export interface RetryEvent {
  /**
   * `rate-limited` (429), `server-error` (5xx), `network` (reset, timeout, refused), `unreadable` (a 3xx, or
   * a 200 that is not JSON or not a Page).
   */
  kind: 'rate-limited' | 'server-error' | 'network' | 'unreadable';
  attempt: number;
  waitMs: number;
  status?: number | undefined;
  /** A 3xx's target, origin and path only (never its query string). */
  location?: string;
}

export interface PartnerApi {
  getOrderUpdates(query: OrderUpdatesQuery, options: CallOptions): Promise<RawPage>;
  /** The current state of one order, raw (validate with parseOrder). */
  getOrder(id: Int64, options: CallOptions): Promise<unknown>;
}
