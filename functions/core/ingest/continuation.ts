// Whether a finished poll run should hand over to another run at once (self-continuation), so a feed with a
// backlog drains at the partner API's pace instead of one batch per schedule tick. Pure: the poller handler
// asks it after every run and, when it answers with a request, invokes its own function asynchronously.
//
// Guards against runaway recursion: only a run that ended for lack of time (or at the page cap) continues;
// only a run that committed at least one page (no progress, no continuation: a stuck partner waits for the
// schedule); never after a failure, a 401, a rate-limit give-up, a held lease or when the feed is disabled;
// and a chain stops after `maxContinuations` runs, after which the schedule starts a fresh chain.
import * as z from 'zod/mini';

/** What a continuation event carries (the poller's event when it invokes itself). */
const ContinuationEventSchema = z.object({
  continuation: z.object({
    feedId: z.string(),
    /** 1 for the first continuation of a chain started by the schedule. */
    chain: z.int().check(z.minimum(1)),
    /** When the scheduled run that started the chain began (UTC ISO). */
    chainStartedAt: z.string(),
  }),
});
export type ContinuationEvent = z.infer<typeof ContinuationEventSchema>;

interface RunSummary {
  /** The poll outcome's kind ('out-of-time', 'page-limit', 'caught-up', 'auth-failed', …). */
  readonly kind: string;
  readonly failed: boolean;
  /** Pages committed by the run. */
  readonly pages: number;
}

/** Outcome kinds that mean "stopped early with more to fetch". */
const MORE_TO_FETCH = new Set(['out-of-time', 'page-limit']);

/**
 * The continuation to request after `run`, or undefined. `current` is the event that started this run when
 * it was itself a continuation (undefined for a scheduled run, which starts a new chain).
 */
export function nextContinuation(
  run: RunSummary,
  context: {
    feedId: string;
    current: ContinuationEvent | undefined;
    startedAt: string;
    maxContinuations: number;
    enabled: boolean;
  },
): ContinuationEvent | undefined {
  // Only a run that stopped early with more to fetch, and made progress doing it.
  if (!context.enabled || run.failed || !MORE_TO_FETCH.has(run.kind) || run.pages === 0) return undefined;
  const chain = (context.current?.continuation.chain ?? 0) + 1;
  if (chain > context.maxContinuations) return undefined;
  return {
    continuation: {
      feedId: context.feedId,
      chain,
      chainStartedAt: context.current?.continuation.chainStartedAt ?? context.startedAt,
    },
  };
}

/** Reads a continuation event from the poller's raw event (the schedule sends something else). */
export function continuationOf(event: unknown): ContinuationEvent | undefined {
  const parsed = ContinuationEventSchema.safeParse(event);
  return parsed.success ? parsed.data : undefined;
}
