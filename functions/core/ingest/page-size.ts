// The page size a feed asks for. A 200 body over the client's cap (`maxPageBodyBytes`) is asked again at
// once with half the size, down to 1; every clean page after that grows it back by one towards the
// configured size. Additive increase, multiplicative decrease (as TCP, and as the feed's pace): a partner
// whose orders stay large settles near the largest size whose pages fit, at the price of one oversized
// answer every (size / 2) pages or so; one whose large orders were a passing batch is back at the configured
// size within 100 pages. The size is kept on the cursor item, so the next run starts with it.

/** The size after a body over the cap (undefined: already 1, a single order is over the cap). */
export function shrunkPageSize(size: number): number | undefined {
  return size <= 1 ? undefined : Math.max(1, Math.floor(size / 2));
}

/** The size after a clean page. */
export function grownPageSize(size: number, configured: number): number {
  return Math.min(configured, size + 1);
}

/** The size a run starts with: the one kept on the cursor item, never above the configured one. */
export function startingPageSize(kept: number | undefined, configured: number): number {
  return kept === undefined ? configured : Math.max(1, Math.min(kept, configured));
}
