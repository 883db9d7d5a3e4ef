// The page size a feed asks for under the body cap (functions/README.md): halved on a body over the cap, grown
// by one per clean page towards the configured size (AIMD, as the pace); kept on the cursor item.

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
