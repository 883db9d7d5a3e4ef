// Every partner request through the token's request budget, as an undici interceptor (each retry is a
// dispatch, so it is budgeted too): take() before a request, cut short by its signal (the call's deadline);
// on a 429, rateLimited(Retry-After) so every feed on the token holds. The client still sees the 429.
import type { Dispatcher } from 'undici';
import { type ResponseHeaders, retryAfterOf } from './client.js';

/** What the interceptor needs of a budget (ingest/request-budget.ts RequestBudget). */
export interface PartnerRequestBudget {
  take(signal?: AbortSignal): Promise<void>;
  rateLimited(retryAfterMs: number | undefined, said?: { retryAfter?: string; date?: string }): Promise<void>;
}

/** `handler` as is, except that a 429's headers are reported first. */
function observing429(
  handler: Dispatcher.DispatchHandler,
  onRateLimited: (headers: ResponseHeaders) => void,
): Dispatcher.DispatchHandler {
  return {
    onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
    onRequestUpgrade: (controller, status, headers, socket) =>
      handler.onRequestUpgrade?.(controller, status, headers, socket),
    onResponseStart: (controller, status, headers, message) => {
      if (status === 429) onRateLimited(headers);
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
    // Not awaited: the hold is a shared write (the poller waits for it before its run returns); the client's
    // own wait after this 429 covers this feed.
    const rateLimited = (headers: ResponseHeaders) => {
      const { retryAfterMs, said } = retryAfterOf(headers, now());
      void budget.rateLimited(retryAfterMs, said);
    };
    budget
      .take(signal instanceof AbortSignal ? signal : undefined)
      .then(() => dispatch(opts, observing429(handler, rateLimited)))
      // A wait cut short by the call's deadline fails the request with the budget's BudgetWaitError (what held
      // it, until when), which the client reports as rate limiting, not as a network failure.
      .catch((error: unknown) => handler.onResponseError?.(null as never, error as Error));
    return true;
  });
}
