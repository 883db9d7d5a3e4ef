import type { Int64 } from '../model/int64.js';
import type { RetryReason } from './errors.js';

/** GET /v1/orderUpdates parameters, sent as given (the settings schema has checked them). */
export interface OrderUpdatesQuery {
  /** Opaque cursor from a previous page; sent unmodified (only URL-encoded). Omitted: earliest page. */
  pageId?: string;
  pageSize?: number;
  vendorIds?: string[];
  orderIds?: number[];
  /** ISO 8601 with a zone; only results after it. */
  fromTimestamp?: string;
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
  /** Called before every wait of this call, for metrics and logs. Its errors are ignored. */
  onRetry?: (event: RetryEvent) => void;
}

export interface RetryEvent {
  kind: RetryReason;
  attempt: number;
  waitMs: number;
  status?: number | undefined;
  /** A 3xx's target, origin and path only (never its query string). */
  location?: string;
  /** A Content-Encoding the client could not decode (`x-foo`), named as the partner sent it, redacted. */
  contentEncoding?: string;
}

export interface PartnerApi {
  getOrderUpdates(query: OrderUpdatesQuery, options: CallOptions): Promise<RawPage>;
  /** The current state of one order, raw (validate with parseOrder). */
  getOrder(id: Int64, options: CallOptions): Promise<unknown>;
}
