// A registry row as the dispatcher reads it, for the dispatch decision's and the dispatcher's unit tests.
import type { FeedRow } from '../../functions/core/fleet/dispatch.js';

export const NOW = 1_800_000_000_000;
export const MINUTE = 60_000;

/** A registered, enabled feed caught up a minute ago at its last dispatch (due now at a 1-minute schedule). */
export function feedRow(feedId: string, fields: Partial<FeedRow> = {}): FeedRow {
  return {
    feedId,
    registered: true,
    state: 'enabled',
    scheduleMinutes: 1,
    tokenParameterName: '/t/a',
    createdAt: NOW - 60 * MINUTE,
    lastDispatchedAt: NOW - MINUTE,
    lastRunAt: NOW - MINUTE + 500,
    lastRunOutcome: 'caught-up',
    lastCaughtUpAt: NOW - MINUTE + 500,
    ...fields,
  };
}
