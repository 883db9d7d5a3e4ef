// A page too large for the body-size limit says nothing wrong about the feed: fewer records make a
// smaller body, and a cursor does not depend on pageSize. So a page fetch whose 200 body overflows the
// limit is repeated from the same cursor with half the pageSize (100 → 50 → 25 → 12 → 6 → 3 → 1),
// within the same call deadline, before the overflow is reported. Only that request is made smaller:
// the caller's next request asks for its own pageSize again.
//
// Applies when the caller names a pageSize; without one the server's default applies and the client
// does not assume what it is.

import { ResponseFormatError } from './errors.js';
import type { CallOptions, OrderUpdatesQuery, PageSizeReduced, RawPage } from './types.js';

export type { PageSizeReduced } from './types.js';

export type FetchPage = (query: OrderUpdatesQuery, options: CallOptions) => Promise<RawPage>;

function isBodyTooLarge(err: unknown): boolean {
  return err instanceof ResponseFormatError && err.problem === 'body-too-large';
}

export function withPageSizeFallback(
  fetchPage: FetchPage,
  limitBytes: number,
  onReduced: ((event: PageSizeReduced) => void) | undefined,
): FetchPage {
  return async (query, options) => {
    let request = query;
    for (;;) {
      try {
        return await fetchPage(request, options);
      } catch (err) {
        const pageSize = request.pageSize;
        if (!isBodyTooLarge(err) || pageSize === undefined || pageSize <= 1) throw err;
        const smaller = Math.floor(pageSize / 2);
        const event = { fromPageSize: pageSize, toPageSize: smaller, limitBytes };
        for (const observe of [onReduced, options.onPageSizeReduced]) {
          try {
            observe?.(event);
          } catch {
            // A metrics hook must not change the outcome of the call.
          }
        }
        request = { ...request, pageSize: smaller };
      }
    }
  };
}
