// The request budget of one partner token, shared by every feed on it (functions/README.md): take() reserves
// the next slot in the shared store and waits for it; rateLimited() holds every feed and cuts the rate (AIMD).
// Nothing is held by a caller: a crashed run only leaves its one reserved slot unused.

/** The budget's shared state, as the store returns it after a write. */
export interface BudgetState {
  /** Epoch ms of the next free slot (the theoretical arrival time of GCRA). */
  nextSlotAt: number;
  /** Requests per second; 0: not limited (no cap configured and no 429 seen yet). */
  rate: number;
  /** 1000 / rate, rounded; 0 with rate 0. Kept beside the rate so one write can add it to nextSlotAt. */
  intervalMs: number;
  /** Epoch ms until which no feed may send (the latest Retry-After seen); 0: none. */
  holdUntil: number;
  /** Epoch ms of the rate's last change (a decrease or an increase step). */
  adjustedAt: number;
  /** Requests taken in all, and the count at the last rate change: the measured rate when unlimited. */
  taken: number;
  takenAtAdjust: number;
}

/** How a take ended in the store: the slot reserved (epoch ms) and the state after the write. */
export interface Reservation {
  slotAt: number;
  state: BudgetState;
}

/** The port: a DynamoDB item per token in production (adapters/dynamo-request-budget.ts), a fake in tests. */
export interface BudgetStore {
  /**
   * Takes `count` requests: with a rate, reserves the next slot (moves nextSlotAt on by intervalMs, or to
   * now + intervalMs when the budget lay idle longer than `slackMs`); without, counts only. Creates the
   * item with `initial` when missing. `limited`: whether the caller last saw a rate (which write to try first).
   */
  reserve(
    key: string,
    nowMs: number,
    count: number,
    slackMs: number,
    initial: BudgetState,
    limited?: boolean,
  ): Promise<Reservation>;
  /**
   * A 429: holds until `until`. When no hold was running this starts one and sets `rate` (the decrease),
   * once per hold however many feeds report it; else only extends the hold. Counts the 429.
   */
  hold(key: string, nowMs: number, until: number, rate: number): Promise<void>;
  /** Sets the rate (an increase step or the cap) unless someone changed it since `seenAdjustedAt`. */
  adjust(key: string, nowMs: number, rate: number, seenAdjustedAt: number): Promise<void>;
}

export const BUDGET_POLICY = Object.freeze({
  /** The rate after a 429: this share of the rate before (or of the measured rate when unlimited). */
  decreaseFactor: 0.7,
  /** The lowest rate a decrease leaves, requests per second. */
  minRate: 0.2,
  /** Time between two increase steps without a 429. */
  increaseEveryMs: 1_000,
  /** An increase step: this share of the cap (else of the current rate), at least minRate. */
  increaseShare: 0.05,
  /** A slot missed by at most this much is still taken (a late feed keeps its turn): the burst after idle. */
  slackMs: 500,
  /** Without a rate, each feed writes at most this often (counting its requests, reading any hold). */
  refreshEveryMs: 1_000,
  /** Without a rate, the count restarts this often, so a 429 measures the recent rate, not since an idle hour. */
  measureWindowMs: 10_000,
  /** The wait used for a 429 without a usable Retry-After (the client's default, DEFAULT_RETRY_POLICY). */
  defaultRetryAfterMs: 1_000,
});

export const intervalOf = (rate: number): number => (rate > 0 ? Math.max(1, Math.round(1000 / rate)) : 0);

/** The rate after a 429, from the state last seen: AIMD's multiplicative decrease. */
function decreasedRate(seen: BudgetState | undefined, nowMs: number, cap: number | undefined): number {
  const { decreaseFactor, minRate } = BUDGET_POLICY;
  let from = seen?.rate ?? 0;
  if (from <= 0 && seen) {
    // Unlimited so far: the rate the feeds reached since the last change is what the partner refused.
    const seconds = Math.max(1, (nowMs - seen.adjustedAt) / 1000);
    from = (seen.taken - seen.takenAtAdjust) / seconds;
  }
  if (from <= 0) from = cap ?? 1;
  return round(Math.max(minRate, Math.min(cap ?? Number.POSITIVE_INFINITY, from * decreaseFactor)));
}

/** The rate one increase step later, or undefined when no step is due (held, at the cap, too soon). */
function increasedRate(state: BudgetState, nowMs: number, cap: number | undefined): number | undefined {
  const { increaseEveryMs, increaseShare, minRate } = BUDGET_POLICY;
  if (state.rate <= 0 || nowMs < state.holdUntil || nowMs - state.adjustedAt < increaseEveryMs)
    return undefined;
  if (cap !== undefined && state.rate >= cap) return undefined;
  const step = Math.max(minRate, (cap ?? state.rate) * increaseShare);
  return round(Math.min(cap ?? Number.POSITIVE_INFINITY, state.rate + step));
}

const round = (rate: number) => Math.round(rate * 1000) / 1000;

interface RequestBudgetOptions {
  store: BudgetStore;
  /** The budget's key: the token's SSM parameter name (feeds reading it share the budget). */
  key: string;
  /** partnerRequestsPerSecond: the rate never goes above it (and starts at it). */
  cap?: number | undefined;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A store failure does not stop the feed (the partner's 429s still pace it); it is reported here. */
  onStoreError?: (error: unknown) => void;
}

const abortableSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });

/** One feed's handle on its token's budget (one per poller; feeds share through the store). */
export class RequestBudget {
  private seen: BudgetState | undefined;
  private refreshedAt = Number.NEGATIVE_INFINITY;
  /** Requests taken without a write while unlimited; added on the next write. */
  private uncounted = 0;
  private refreshing: Promise<unknown> | false = false;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: RequestBudgetOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? abortableSleep;
  }

  /** Waits for this feed's turn: its reserved slot and any hold. Rejects only when `signal` aborts. */
  async take(signal?: AbortSignal): Promise<void> {
    const now = this.now();
    const seen = this.seen;
    this.uncounted += 1;
    if (seen && seen.rate <= 0 && now >= seen.holdUntil && this.refreshedAt > Number.NEGATIVE_INFINITY) {
      // Unlimited, no hold known: go at once. At most once a second a write in the background counts the
      // requests and reads any hold or rate another feed set, which the next take then waits for.
      if (now - this.refreshedAt >= BUDGET_POLICY.refreshEveryMs && !this.refreshing) {
        this.refreshedAt = now;
        this.refreshing = this.reserveAndAdjust(now).finally(() => {
          this.refreshing = false;
        });
      }
      return;
    }
    this.refreshedAt = now;
    const waitUntil = (await this.reserveAndAdjust(now)) ?? now;
    const waitMs = waitUntil - this.now();
    if (waitMs > 0) await this.sleep(waitMs, signal);
  }

  /** Takes the requests counted so far; the time to wait until (slot or hold), undefined if the store failed. */
  private async reserveAndAdjust(now: number): Promise<number | undefined> {
    const { store, key, cap } = this.options;
    const count = this.uncounted;
    this.uncounted = 0;
    try {
      const initial = initialState(now, cap);
      const limited = (this.seen?.rate ?? initial.rate) > 0;
      const { slotAt, state } = await store.reserve(key, now, count, BUDGET_POLICY.slackMs, initial, limited);
      this.seen = state;
      const target = cap !== undefined && state.rate > cap ? cap : increasedRate(state, now, cap);
      if (target !== undefined) await store.adjust(key, now, target, state.adjustedAt);
      else if (state.rate <= 0 && now - state.adjustedAt > BUDGET_POLICY.measureWindowMs) {
        // Unlimited: restart the count the next 429 measures its rate from.
        await store.adjust(key, now, 0, state.adjustedAt);
      }
      return Math.max(slotAt, state.holdUntil);
    } catch (error) {
      this.uncounted += count;
      this.options.onStoreError?.(error);
      return undefined;
    }
  }

  /** A 429 with its Retry-After (ms; undefined: the default): holds every feed and cuts the rate. */
  async rateLimited(retryAfterMs: number | undefined): Promise<void> {
    const now = this.now();
    const wait =
      retryAfterMs !== undefined && retryAfterMs >= 0 ? retryAfterMs : BUDGET_POLICY.defaultRetryAfterMs;
    try {
      const rate = decreasedRate(this.seen, now, this.options.cap);
      await this.options.store.hold(this.options.key, now, now + wait, rate);
      // The next take writes (and learns the hold and the new rate) even if this feed was unlimited.
      this.refreshedAt = Number.NEGATIVE_INFINITY;
    } catch (error) {
      this.options.onStoreError?.(error);
    }
  }
}

function initialState(nowMs: number, cap: number | undefined): BudgetState {
  const rate = cap ?? 0;
  return {
    nextSlotAt: nowMs,
    rate,
    intervalMs: intervalOf(rate),
    holdUntil: 0,
    adjustedAt: nowMs,
    taken: 0,
    takenAtAdjust: 0,
  };
}
