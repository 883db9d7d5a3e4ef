// The request budget's store in memory, with the DynamoDB item's semantics (functions/core/adapters/
// dynamo-request-budget.ts; the same cases are asserted against moto in test/integration/cursor-store.test.ts):
// for the policy's unit tests and the bench's fake-clock run of feeds sharing a token.
import {
  type BudgetState,
  type BudgetStore,
  intervalOf,
  type Reservation,
} from '../../functions/core/ingest/request-budget.js';

export class MemoryBudgetStore implements BudgetStore {
  readonly items = new Map<string, BudgetState>();
  /** When each 429 was counted. */
  readonly throttles: number[] = [];
  writes = 0;

  async reserve(
    key: string,
    nowMs: number,
    count: number,
    slackMs: number,
    initial: BudgetState,
  ): Promise<Reservation> {
    this.writes += 1;
    const item = this.items.get(key) ?? { ...initial, nextSlotAt: nowMs };
    this.items.set(key, item);
    item.taken += count;
    if (item.intervalMs > 0 && item.nextSlotAt >= nowMs - slackMs) {
      item.nextSlotAt += item.intervalMs;
      return { slotAt: item.nextSlotAt - item.intervalMs, state: { ...item } };
    }
    item.nextSlotAt = nowMs + item.intervalMs;
    return { slotAt: nowMs, state: { ...item } };
  }

  async hold(key: string, nowMs: number, until: number, rate: number, step: number): Promise<void> {
    this.writes += 1;
    const item = this.items.get(key);
    if (!item) throw new Error(`no budget ${key}`);
    this.throttles.push(nowMs);
    const cut = item.holdUntil < nowMs && (item.rate === 0 || item.rate > rate);
    if (cut) Object.assign(item, { rate, intervalMs: intervalOf(rate), step });
    else if (item.holdUntil >= until) return;
    // The used rate is measured from the hold's end; slots already booked past it stay booked.
    item.nextSlotAt = Math.max(item.nextSlotAt, until);
    Object.assign(item, { holdUntil: until, adjustedAt: until, takenAtAdjust: item.taken });
    item.slotAtAdjust = item.nextSlotAt;
  }

  async adjust(key: string, nowMs: number, rate: number, seenAdjustedAt: number): Promise<void> {
    this.writes += 1;
    const item = this.items.get(key);
    if (!item || item.adjustedAt !== seenAdjustedAt || item.holdUntil > nowMs) return;
    Object.assign(item, { rate, intervalMs: intervalOf(rate), adjustedAt: nowMs, takenAtAdjust: item.taken });
    item.slotAtAdjust = item.nextSlotAt;
  }
}
