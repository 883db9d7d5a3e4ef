// The feed's own pace under rate limiting: additive increase, multiplicative decrease (AIMD), as TCP does.
// The partner's Retry-After is honoured by the client on every 429; this adds a delay *between page
// requests* that doubles on every rate-limited page and shrinks by a fixed step after every page served
// without one, so a feed that keeps hitting the partner's limit settles just below it instead of spending
// its run waiting out 429s. Pure: the poll use case keeps the delay, persists it on the cursor item so the
// next run (and a continuation) starts at the same pace, and reports it as a metric.

export interface PacePolicy {
  /** First delay after a rate-limited page (when the delay was 0). */
  readonly initialDelayMs: number;
  /** Multiplier applied on each rate-limited page. */
  readonly increaseFactor: number;
  /** Subtracted after each page served without a 429. */
  readonly decreaseStepMs: number;
  /** The delay never grows past this. */
  readonly maxDelayMs: number;
}

export const DEFAULT_PACE_POLICY: PacePolicy = Object.freeze({
  initialDelayMs: 250,
  increaseFactor: 2,
  decreaseStepMs: 50,
  maxDelayMs: 30_000,
});

/** The delay before the next page request, given how the last page went. */
export function nextPaceDelayMs(
  currentMs: number,
  lastPage: { rateLimited: boolean },
  policy: PacePolicy = DEFAULT_PACE_POLICY,
): number {
  if (lastPage.rateLimited) {
    const raised = currentMs <= 0 ? policy.initialDelayMs : currentMs * policy.increaseFactor;
    return Math.min(policy.maxDelayMs, Math.round(raised));
  }
  return Math.max(0, currentMs - policy.decreaseStepMs);
}
