// Self-continuation (functions/README.md): a run that stopped for time or at the page cap after progress hands
// its lease to the next run of its chain. Lambda may deliver an async event twice and the SDK retries Invoke:
// only the step the lease was handed to may take it (CursorStore.release), so a duplicate does nothing.
import * as z from 'zod/mini';
import type { PollSettings } from './ports.js';

/** The poller's event when it invokes itself. */
const ContinuationEventSchema = z.object({
  continuation: z.object({
    feedId: z.string(),
    /** The chain's identity: the run id (request id) of the scheduled run that started it. */
    chainId: z.string(),
    /** 1 for the first continuation of a chain started by the schedule. */
    chain: z.int().check(z.minimum(1)),
    /** When the scheduled run that started the chain began (UTC ISO). */
    chainStartedAt: z.string(),
  }),
});
export type ContinuationEvent = z.infer<typeof ContinuationEventSchema>;

/**
 * The continuation to start after `run`, or undefined. `current` is the event that started this run (none
 * for a scheduled run, whose id `runId` then starts a new chain).
 */
export function nextContinuation(
  run: { kind: string; failed: boolean; pages: number },
  context: Pick<PollSettings, 'feedId' | 'maxContinuations' | 'enabled'> & {
    current: ContinuationEvent | undefined;
    runId: string;
    startedAt: string;
  },
): ContinuationEvent | undefined {
  const moreToFetch = run.kind === 'out-of-time' || run.kind === 'page-limit';
  if (!context.enabled || run.failed || !moreToFetch || run.pages === 0) return undefined;
  const { current } = context;
  const chain = (current?.continuation.chain ?? 0) + 1;
  if (chain > context.maxContinuations) return undefined;
  return {
    continuation: {
      feedId: context.feedId,
      chainId: current?.continuation.chainId ?? context.runId,
      chain,
      chainStartedAt: current?.continuation.chainStartedAt ?? context.startedAt,
    },
  };
}

/** The continuation event in the poller's raw event (the schedule sends something else). */
export function continuationOf(event: unknown): ContinuationEvent | undefined {
  const parsed = ContinuationEventSchema.safeParse(event);
  return parsed.success ? parsed.data : undefined;
}
