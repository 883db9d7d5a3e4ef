/** "Full jitter" (AWS Architecture Blog): uniform in [0, min(maxMs, baseMs * 2^(attempt-1))); attempt 1 first. */
export function backoffWithFullJitter(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.floor(attempt) - 1));
  const r = random();
  return Math.floor((Number.isFinite(r) ? Math.min(Math.max(r, 0), 1 - Number.EPSILON) : 0) * ceiling);
}
