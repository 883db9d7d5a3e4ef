// Every partner request through the token's request budget, as an undici interceptor (each retry is a
// dispatch, so it is budgeted too): take() before a request, cut short by its signal (the call's deadline);
// on a 429, rateLimited(Retry-After) so every feed on the token holds. The client still sees the 429.
import type { Dispatcher } from 'undici';
import { parseRetryAfter } from './client.js';

/** What the interceptor needs of a budget (ingest/request-budget.ts RequestBudget). */
export interface PartnerRequestBudget {
  take(signal?: AbortSignal): Promise<void>;
  rateLimited(retryAfterMs: number | undefined): Promise<void>;
}

/** `handler` as is, except that a 429's Retry-After is reported first. */
function observing429(
  handler: Dispatcher.DispatchHandler,
  onRateLimited: (retryAfterHeader: string | undefined) => void,
): Dispatcher.DispatchHandler {
  return {
    onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
    onRequestUpgrade: (controller, status, headers, socket) =>
      handler.onRequestUpgrade?.(controller, status, headers, socket),
    onResponseStart: (controller, status, headers, message) => {
      if (status === 429) {
        const header = headers['retry-after'];
        onRateLimited(Array.isArray(header) ? header[0] : header);
      }
      handler.onResponseStart?.(controller, status, headers, message);
    },
    onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
    onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
    onResponseError: (controller, error) => handler.onResponseError?.(controller, error),
  };
}

/** `dispatcher` with every request taken from `budget` (compose: the dispatcher itself is not changed). */
export function withRequestBudget(
  dispatcher: Dispatcher,
  budget: PartnerRequestBudget,
  now: () => number = Date.now,
): Dispatcher {
  return dispatcher.compose((dispatch) => (opts, handler) => {
    const { signal } = opts as { signal?: unknown };
    // Not awaited: the hold is a shared write; the client's own wait after this 429 covers this feed.
    const rateLimited = (header: string | undefined) =>
      void budget.rateLimited(parseRetryAfter(header, now()));
    budget
      .take(signal instanceof AbortSignal ? signal : undefined)
      .then(() => dispatch(opts, observing429(handler, rateLimited)))
      // An aborted wait (the call's deadline) fails the request as an abort during it would.
      .catch((error: unknown) => handler.onResponseError?.(null as never, error as Error));
    return true;
  });
}
