// The partner API client: three layers composed per call, as undici composes interceptors around a
// dispatcher.
//   transport.ts   one attempt over undici: GET with the token, cut off at the deadline, bounded body read
//   retry-loop.ts  the deadline-aware retry loop around it: 429 / 5xx / network → wait and repeat the
//                  same URL, unless the wait would cross the caller's deadline (then RetryLaterError)
//   interpret.ts   the final answer → a Page, an Order or a typed error
//   page-size-fallback.ts  around a page fetch: a page over the body limit is asked for again with a
//                  smaller pageSize from the same cursor
// This file checks the configuration once (cold start), checks each call's input before any request,
// and builds the URL once per call.
//
// The token lives only in the Authorization header of the outgoing request: errors are built from
// the method, the path and the server's message (with the token redacted), and undici errors are
// copied into plain causes so no request object, header or socket is reachable from an error.

import type { Dispatcher } from 'undici';
import type { Int64 } from '../model/int64.js';
import { DEFAULT_TIMEOUTS, defaultPartnerDispatcher, type PartnerClientTimeouts } from './agent.js';
import { InvalidArgumentError } from './errors.js';
import { interpret, interpretPage } from './interpret.js';
import { type PageSizeReduced, withPageSizeFallback } from './page-size-fallback.js';
import { type ArrayEncoding, buildOrderUpdatesQuery, checkOrderId } from './query.js';
import { defaultSleep, withDeadlineRetries } from './retry-loop.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.js';
import { createUndiciTransport } from './transport.js';
import type { CallOptions, PartnerApi, RetryEvent } from './types.js';
import { parsePartnerBaseUrl } from './url-policy.js';

export { DEFAULT_TIMEOUTS, type PartnerClientTimeouts } from './agent.js';
export type { PageSizeReduced } from './page-size-fallback.js';
export type { ArrayEncoding } from './query.js';

/** A page of 100 orders is far below this; anything larger is treated as a malformed answer. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

export const DEFAULT_USER_AGENT = 'order-feed-ingester/0.1 (undici)';

export interface PartnerClientOptions {
  /**
   * `https://host[:port][/prefix]`; the prefix may name a test scenario. Requests go to
   * `${baseUrl}/v1/orderUpdates` and `${baseUrl}/v1/orders/{id}`. `http:` only for loopback hosts;
   * no userinfo, query or fragment.
   */
  baseUrl: string;
  /** Called before every attempt, so a rotated (re-cached) token is picked up without a rebuild. */
  token: () => Promise<string>;
  /** Default: a module-level Agent with DEFAULT_TIMEOUTS (or one built from `timeouts.connectTimeoutMs`). */
  dispatcher?: Dispatcher;
  /** Default DEFAULT_TIMEOUTS; headers/body timeouts apply per request, with any dispatcher. */
  timeouts?: Partial<PartnerClientTimeouts>;
  /**
   * Default DEFAULT_MAX_BODY_BYTES (10 MiB). A larger page is asked for again with half the pageSize
   * (see page-size-fallback.ts); a larger body at pageSize 1, or a larger order → ResponseFormatError.
   */
  maxBodyBytes?: number;
  /** Default 'repeat' (`vendorIds=a&vendorIds=b`); see ArrayEncoding for why. */
  arrayEncoding?: ArrayEncoding;
  /** Fields override DEFAULT_RETRY_POLICY. */
  retryPolicy?: Partial<RetryPolicy>;
  /** Called before every wait (429, 5xx, network), for metrics and logs. Its errors are ignored. */
  onRetry?: (event: RetryEvent) => void;
  /** Called before a page is asked for again with a smaller pageSize. Its errors are ignored. */
  onPageSizeReduced?: (event: PageSizeReduced) => void;
  /** Default Math.random (full-jitter draws). */
  random?: () => number;
  /** Default: a timer that rejects with `signal.reason` when the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Default Date.now; compared with `CallOptions.deadline` and used for Retry-After dates. */
  now?: () => number;
  /** Default DEFAULT_USER_AGENT. */
  userAgent?: string;
}

function checkPositiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive integer (got ${String(value)})`);
  }
  return value;
}

/**
 * Builds a PartnerApi for one base URL. Configuration is checked here (a bad URL or limit fails at
 * construction, i.e. the cold start); call inputs are checked per call, before any request.
 */
export function createPartnerClient(options: PartnerClientOptions): PartnerApi {
  const { origin, basePath } = parsePartnerBaseUrl(options.baseUrl);
  if (typeof options.token !== 'function') {
    throw new InvalidArgumentError('token must be a function returning the bearer token');
  }
  const timeouts: PartnerClientTimeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  checkPositiveInteger('timeouts.connectTimeoutMs', timeouts.connectTimeoutMs);
  checkPositiveInteger('timeouts.headersTimeoutMs', timeouts.headersTimeoutMs);
  checkPositiveInteger('timeouts.bodyTimeoutMs', timeouts.bodyTimeoutMs);
  const arrayEncoding = options.arrayEncoding ?? 'repeat';
  if (arrayEncoding !== 'repeat' && arrayEncoding !== 'comma') {
    throw new InvalidArgumentError(`arrayEncoding must be 'repeat' or 'comma'`);
  }
  const maxBodyBytes = checkPositiveInteger('maxBodyBytes', options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retryPolicy };
  checkPositiveInteger('retryPolicy.maxAttempts', policy.maxAttempts);

  const transport = createUndiciTransport({
    origin,
    dispatcher: options.dispatcher ?? defaultPartnerDispatcher(timeouts.connectTimeoutMs),
    headersTimeoutMs: timeouts.headersTimeoutMs,
    bodyTimeoutMs: timeouts.bodyTimeoutMs,
    maxBodyBytes,
    userAgent: options.userAgent ?? DEFAULT_USER_AGENT,
  });
  const send = withDeadlineRetries(transport, {
    token: options.token,
    policy,
    onRetry: options.onRetry,
    random: options.random ?? Math.random,
    sleep: options.sleep ?? defaultSleep,
    now: options.now ?? Date.now,
  });

  const updatesPath = `${basePath}/v1/orderUpdates`;
  const ordersPath = `${basePath}/v1/orders`;

  const getOrderUpdates = withPageSizeFallback(
    async (query, callOptions) => {
      const search = buildOrderUpdatesQuery(query, arrayEncoding);
      const label = `GET ${updatesPath}`;
      const { answer, token } = await send({ path: `${updatesPath}${search}`, label }, callOptions);
      return interpretPage(
        { kind: 'orderUpdates', label, sentPageId: query.pageId !== undefined },
        answer,
        token,
      );
    },
    maxBodyBytes,
    options.onPageSizeReduced,
  );

  return {
    getOrderUpdates,
    async getOrder(id: Int64, callOptions: CallOptions): Promise<unknown> {
      const orderId = checkOrderId('order id', id);
      const path = `${ordersPath}/${orderId}`;
      const label = `GET ${path}`;
      const { answer, token } = await send({ path, label }, callOptions);
      return interpret({ kind: 'order', label, orderId }, answer, token);
    },
  };
}
