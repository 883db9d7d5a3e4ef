// Cursor cycles: a partner whose nextPageId leads back to a cursor already asked for (itself with data, or
// A → B → A) would have the feed republish the same pages until the chain's cap. Spec pagination rule 6 lets
// a partner serve one page twice, so one repeat passes; a repeat right after a repeat is a cycle, and ends
// the run (`stuck-cursor`; a stuck run does not continue its chain).
//
// What it catches: within a run, a cycle of any length (every cursor of the run is counted); across the runs
// of a continuation chain, a cycle of up to CHAIN_MEMORY - 1 pages (the hashes of the chain's last
// CHAIN_MEMORY committed cursors ride on the cursor item). A scheduled run, and a rule-5 recovery (the
// stream starts again, so its cursors come round again legitimately), start with an empty memory.
import { createHash } from 'node:crypto';

/** Committed cursors a chain remembers on the cursor item: ~16 × 9 bytes, so the item stays under 1 KB. */
export const CHAIN_MEMORY = 16;

/** 48 bits of SHA-256, base64url: a collision among a chain's 16 cursors is about 2^-41 likely. */
const hashOf = (cursor: string) => createHash('sha256').update(cursor).digest('base64url').slice(0, 8);

export class CursorCycles {
  /** Hash → how often it was asked for (committed as the next cursor) in this run and the chain's memory. */
  private readonly counts = new Map<string, number>();
  private readonly recentHashes: string[] = [];

  /** `chain`: the memory of the chain this run continues (none: a new chain); `start`: the stored cursor. */
  constructor(chain: readonly string[] | undefined, start: string | undefined) {
    for (const hash of chain ?? []) this.remember(hash);
    if (start !== undefined && !chain?.length) this.remember(hashOf(start));
  }

  /**
   * A page asked with `asked` named `next`: 'new', 'repeat' (`next` was asked before: rule 6's repeated
   * page, followed once), or 'cycle' (`next` was asked before and `asked` was itself a repeat).
   */
  judge(asked: string | undefined, next: string): 'new' | 'repeat' | 'cycle' {
    if (!this.counts.has(hashOf(next))) return 'new';
    const askedTimes = asked === undefined ? 0 : (this.counts.get(hashOf(asked)) ?? 0);
    return askedTimes >= 2 ? 'cycle' : 'repeat';
  }

  /** The cursor committed for the next request. */
  committed(cursor: string | undefined): void {
    if (cursor !== undefined) this.remember(hashOf(cursor));
  }

  /** The stream starts again (rule 5): its cursors may come round again. */
  forget(): void {
    this.counts.clear();
    this.recentHashes.length = 0;
  }

  /** What the cursor item keeps for the chain's next run. */
  get recent(): string[] {
    return this.recentHashes.slice(-CHAIN_MEMORY);
  }

  private remember(hash: string): void {
    this.counts.set(hash, (this.counts.get(hash) ?? 0) + 1);
    this.recentHashes.push(hash);
    // Within the run every count stays; only the list the item keeps is cut.
    if (this.recentHashes.length > 4 * CHAIN_MEMORY) this.recentHashes.splice(0, 3 * CHAIN_MEMORY);
  }
}
