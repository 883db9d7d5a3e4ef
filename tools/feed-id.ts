// The feed id rule for the tools, taken from the setting itself (functions/core/config/settings.ts), so a
// stack output, a cursor item or a --feed flag is judged exactly as the configuration and the poller judge it.
import * as z from 'zod/mini';
import { RULES } from '../functions/core/config/settings.js';

/** Whether `value` is a feed id exactly as the configuration and the poller's FEED_ID accept it (untrimmed). */
export function isFeedId(value: string): boolean {
  const verdict = z.safeParse(RULES.feedId, value);
  return verdict.success && verdict.data === value;
}
