// What a feed id is, apart from the stack readers (stack.ts) that judge outputs by it: the ops command line
// checks --feed with it before it loads the AWS SDK.
import * as z from 'zod/mini';
import { RULES } from '../functions/core/config/settings.js';

/**
 * Whether `value` is a feed id exactly as the configuration (functions/core/config/settings.ts) and the
 * poller's FEED_ID accept it (untrimmed): a stack output, a cursor item or a --feed flag is judged alike.
 */
export function isFeedId(value: string): boolean {
  const verdict = z.safeParse(RULES.feedId, value);
  return verdict.success && verdict.data === value;
}
