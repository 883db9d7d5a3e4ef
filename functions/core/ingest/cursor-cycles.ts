// Cursor cycles (functions/README.md): one repeated page passes (rule 6), a repeat right after a repeat ends
// the run. Hashes of the last committed cursors ride on the cursor item, so run boundaries hide no cycle.
import { createHash } from 'node:crypto';

/** Committed cursors the cursor item remembers: ~16 × 9 bytes, so the item stays under 1 KB. */
const MEMORY = 16;

/** 48 bits of SHA-256, base64url: a collision among a feed's 16 remembered cursors is about 2^-41 likely. */
const hashOf = (cursor: string) => createHash('sha256').update(cursor).digest('base64url').slice(0, 8);

export class CursorCycles {
  /** Hash → how often it was asked for (committed as the next cursor) in this run and the stored memory. */
  private readonly counts = new Map<string, number>();
  private readonly recentHashes: string[] = [];

  /** `stored`: the memory on the cursor item (oldest first); `start`: the stored cursor. */
  constructor(stored: readonly string[] | undefined, start: string | undefined) {
    if (start === undefined) return;
    // The last commit wrote both, so a memory whose last hash is not the cursor's belongs to another position.
    const memory = stored?.at(-1) === hashOf(start) ? stored : [hashOf(start)];
    for (const hash of memory) this.remember(hash);
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

  /** What the cursor item keeps for the next run. */
  get recent(): string[] {
    return this.recentHashes.slice(-MEMORY);
  }

  private remember(hash: string): void {
    this.counts.set(hash, (this.counts.get(hash) ?? 0) + 1);
    this.recentHashes.push(hash);
    // Within the run every count stays; only the list the item keeps is cut.
    if (this.recentHashes.length > 4 * MEMORY) this.recentHashes.splice(0, 3 * MEMORY);
  }
}
