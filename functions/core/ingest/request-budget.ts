// The request budget of one partner token, shared by every feed on it (functions/README.md): take() reserves
// the next slot in the shared store and waits for it; rateLimited() holds every feed and cuts the rate (AIMD,
// bounded by the rate the feeds used). Nothing is held by a caller: a crashed run only leaves its one reserved
// slot unused.

/** The budget's shared state, as the store returns it after a write. */
export interface BudgetState {
  /** Epoch ms of the next free slot (the theoretical arrival time of GCRA). */
  nextSlotAt: number;
  /** Requests per second; 0: not limited (no cap configured and no 429 seen yet). */
  rate: number;
  /** 1000 / rate (to the microsecond); 0 with rate 0. Kept beside the rate so one write can add it to nextSlotAt. */
  intervalMs: number;
  /** Epoch ms until which no feed may send (the latest Retry-After seen, at most maxHoldMs); 0: none. */
  holdUntil: number;
  /** Epoch ms the rate last changed or its count restarted (after a hold: its end): the used rate's window. */
  adjustedAt: number;
  /** Requests taken in all, and the count and nextSlotAt at adjustedAt: what the used rate is counted from. */
  taken: number;
  takenAtAdjust: number;
  slotAtAdjust: number;
  /** Requests/s an increase adds: fixed by the last decrease, so the increase is additive; 0: none yet. */
  step: number;
}

/** How a take ended in the store: the (first) slot reserved (epoch ms) and the state after the write. */
export interface Reservation {
  slotAt: number;
  /** Slots reserved, one interval apart from slotAt (undefined: one). */
  slots?: number;
  state: BudgetState;
}

/** Several slots wanted in one write, at the interval last seen (the write holds only while it is so). */
export interface SeveralSlots {
  slots: number;
  intervalMs: number;
}

/** The port: a DynamoDB item per token in production (adapters/dynamo-request-budget.ts), in memory in tests. */
export interface BudgetStore {
  /**
   * Takes `count` requests: with a rate, reserves the next slot (moves nextSlotAt on by intervalMs, or to
   * now + intervalMs when the budget lay idle longer than `slackMs`); without, counts only. Creates the
   * item with `initial` when missing. `limited`: whether the caller last saw a rate (which write to try first).
   * `several`: the requests of a process that wait at once take that many slots in the same write, while the
   * interval is still the one given (else one slot: the others ask again).
   */
  reserve(
    key: string,
    nowMs: number,
    count: number,
    slackMs: number,
    initial: BudgetState,
    limited?: boolean,
    several?: SeveralSlots,
  ): Promise<Reservation>;
  /**
   * A 429: holds until `until` (or longer, if held so already), and moves nextSlotAt there unless slots are
   * booked past it (the later of the two). When no hold was running this starts one and sets `rate` and `step`
   * (the decrease) unless the rate is already lower, once per hold however many feeds report it; else only
   * extends the hold. Counts the 429.
   */
  hold(key: string, nowMs: number, until: number, rate: number, step: number): Promise<void>;
  /** Sets the rate (a step, the cap, or the same to restart the count) unless changed since `seenAdjustedAt`. */
  adjust(key: string, nowMs: number, rate: number, seenAdjustedAt: number): Promise<void>;
}

export const BUDGET_POLICY = Object.freeze({
  /** The rate after a 429: this share of the rate the feeds used (never more than the rate they had). */
  decreaseFactor: 0.7,
  /** The lowest rate a decrease leaves, requests per second. */
  minRate: 0.2,
  /** The smallest increase step, requests per second. */
  minStep: 0.01,
  /**
   * Below this rate (requests per second) a step is at least minRate: from the floor one step doubles it. The
   * decrease's step there is 5 % of the floor (0.01/s), taken one request at a time, 5 s apart: 0.2 → 0.5 took
   * 30 requests without a 429, so 429s every few requests (fuzz seed 213) held the budget at the floor.
   */
  floorClimbBelow: 0.5,
  /** No rate is ever above this (requests per second): a computed rate beyond it is a bug, not a setting. */
  maxRate: 1_000_000,
  /** Time between two increase steps without a 429. */
  increaseEveryMs: 1_000,
  /** An increase step: this share of the cap, else of the rate the last decrease cut from (additive). */
  increaseShare: 0.05,
  /**
   * Until a 429 has fixed a step (after the first one, cut from unlimited: that count lags), each step is
   * this share of the rate itself: TCP's slow start, bounded by the used rate like every step.
   */
  slowStartShare: 0.15,
  /** A slot missed by at most this much is still taken (a late feed keeps its turn): the burst after idle. */
  slackMs: 500,
  /** Without a rate, each feed writes at most this often (counting its requests, reading any hold). */
  refreshEveryMs: 1_000,
  /** The used rate is counted over at most this window (it restarts), so a 429 meets the recent rate. */
  measureWindowMs: 10_000,
  /** The wait used for a 429 without a usable Retry-After (the client's default, DEFAULT_RETRY_POLICY). */
  defaultRetryAfterMs: 1_000,
  /**
   * The longest shared hold: a Retry-After beyond it (a date years ahead, a partner clock hours fast) holds
   * every feed on the token this long, then one request asks again. Five minutes honours any wait the client
   * itself waits out (60 s) whole, and keeps a wrong value well inside the feed lag alarm (30 min by default).
   */
  maxHoldMs: 300_000,
  /** A hold longer than the client's own longest 429 wait (DEFAULT_RETRY_POLICY.maxRetryAfterMs) ends runs. */
  longHoldMs: 60_000,
});

/** Whole microseconds: exact enough for any rate up to maxRate, and no rounding to whole milliseconds. */
export const intervalOf = (rate: number): number => (rate > 0 ? Math.round(1_000_000 / rate) / 1000 : 0);

/** A computed rate outside [0, maxRate] would pace no one or overflow the store: a bug, so it throws. */
export class BudgetInvariantError extends Error {
  override readonly name = 'BudgetInvariantError';
}

function checked(what: string, value: number, min: number, max: number): number {
  if (!(Number.isFinite(value) && value >= min && value <= max))
    throw new BudgetInvariantError(`request budget: ${what} ${value} is outside [${min}, ${max}]`);
  return value;
}

/**
 * Requests per second the feeds took in the window up to `atMs`: over the slot time they booked (saturated,
 * a slot booked at an old interval does not lag it) or the time that passed since the window's first free
 * slot (a late feed reusing a slot missed by up to slackMs does not shorten it), whichever is longer, and at
 * least a second. The time before that slot was booked by takes counted before the window: counting it again
 * made a feed that waits for every slot look as if it used less than the rate (fuzz seed 721).
 */
function usedRate(state: BudgetState, atMs: number): number {
  const slotMs = state.nextSlotAt - state.slotAtAdjust;
  const sinceFree = atMs - Math.max(state.adjustedAt, state.slotAtAdjust);
  const seconds = Math.max(1_000, slotMs, sinceFree) / 1000;
  const used = Math.max(0, state.taken - state.takenAtAdjust) / seconds;
  return checked('used rate', used, 0, BUDGET_POLICY.maxRate);
}

/**
 * AIMD's decrease after a 429, from the state last seen (written at `seenAt`): the rate becomes 70 % of the
 * rate the feeds used (at most the rate they had), and the additive step of the climb back is fixed from it.
 */
function decreased(seen: BudgetState | undefined, seenAt: number, cap: number | undefined) {
  const { decreaseFactor, minRate, minStep, maxRate, increaseShare, increaseEveryMs } = BUDGET_POLICY;
  const limited = seen !== undefined && seen.rate > 0;
  // A window younger than a step (it restarted at the last change) is too short to count in: the rate is
  // what was used. Unlimited, the count lags (each feed adds to it once a second), but it is all there is.
  const measured = limited && seenAt - seen.adjustedAt >= increaseEveryMs;
  let from = seen?.rate ?? 0;
  if (seen && (measured || !limited)) from = usedRate(seen, seenAt);
  if (limited) from = Math.min(from, seen.rate);
  if (from <= 0) from = cap ?? minRate / decreaseFactor;
  const ceiling = Math.min(cap ?? maxRate, maxRate);
  const rate = round(Math.min(ceiling, Math.max(minRate, from * decreaseFactor)));
  // The step is fixed from a measured rate only; until one (the first cuts: from unlimited, or before a
  // window could count) it stays as it was, 0 at first: slow start (slowStartShare).
  let step = seen?.step ?? 0;
  if (cap !== undefined || measured)
    step = round(Math.min(ceiling, Math.max(minStep, (cap ?? from) * increaseShare)));
  return { rate: checked('rate', rate, minRate, maxRate), step: checked('step', step, 0, maxRate) };
}

/**
 * The rate to write now, or undefined: the cap when lowered below the rate; one step more when due, never above
 * the used rate plus a step (an idle or lightly used budget does not climb); the same rate to restart an old
 * window's count.
 */
function adjusted(state: BudgetState, nowMs: number, cap: number | undefined): number | undefined {
  const { increaseEveryMs, increaseShare, slowStartShare, minRate, minStep, floorClimbBelow } = BUDGET_POLICY;
  const { maxRate, measureWindowMs } = BUDGET_POLICY;
  if (nowMs < state.holdUntil) return undefined;
  if (cap !== undefined && state.rate > cap) return cap;
  const age = nowMs - state.adjustedAt;
  // A step only once the first slot booked at the rate is the next to come due: slots are booked ahead (a queue
  // of feeds × interval), and raising a rate no request has gone at yet climbed blind (10 feeds at R = 1:
  // 2.1 × R). One interval early, so one feed, which books its next slot as it waits for it, steps each take.
  if (state.rate > 0 && age >= increaseEveryMs && nowMs + state.intervalMs >= state.slotAtAdjust) {
    const share = cap === undefined ? slowStartShare * state.rate : increaseShare * cap;
    const fixed = state.step > 0 ? state.step : Math.max(minStep, share);
    const step = state.rate < floorClimbBelow ? Math.max(fixed, minRate) : fixed;
    const target = round(Math.min(cap ?? maxRate, state.rate + step, usedRate(state, nowMs) + step));
    if (target > state.rate) return checked('rate', target, minRate, maxRate);
  }
  return age > measureWindowMs ? state.rate : undefined;
}

const round = (rate: number) => Math.round(rate * 1000) / 1000;

/** The partner's own words for a 429, as parsed (a number or an HTTP-date, so never a secret): for the log. */
export interface PartnerSaid {
  retryAfter?: string;
  date?: string;
}

/** A hold longer than BUDGET_POLICY.longHoldMs, reported to the log and a metric. */
export interface LongHold extends PartnerSaid {
  /** What the partner asked for, ms (from its own clock where it sent a Date). */
  askedMs: number;
  /** What the budget holds: askedMs, at most maxHoldMs. */
  heldMs: number;
  clamped: boolean;
  until: number;
}

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
  /** A hold over longHoldMs (clamped or not) is reported here. */
  onLongHold?: (hold: LongHold) => void;
}

/** A wait for a turn cut short by the request's signal (its deadline): what held it, and until when. */
export class BudgetWaitError extends Error {
  override readonly name = 'BudgetWaitError';
  /** The partner client maps this code to a retry-later with reason `rate-limited` (partner/client.ts). */
  readonly code = 'ERR_BUDGET_WAIT';
  constructor(
    /** When the request's turn was (epoch ms). */
    readonly until: number,
    /** The end of the 429's shared hold the wait was for; undefined: only the pace (a slot). */
    readonly heldUntil: number | undefined,
  ) {
    super(
      heldUntil === undefined
        ? `waiting for its slot of the token's shared request budget until ${new Date(until).toISOString()}`
        : `held by the token's shared rate-limit hold until ${new Date(heldUntil).toISOString()}`,
    );
  }
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

/** When a take may go (epoch ms), and the hold it waits for, if any. */
interface Turn {
  at: number;
  heldUntil?: number;
}

/** A take waiting for the store's answer. */
interface Waiter {
  resolve(turn: Turn | undefined): void;
  reject(error: unknown): void;
}

/**
 * A process's handle on its token's budget (one per token per poller process; its feeds and the other
 * processes share through the store). Takes that wait at once share one write of the store.
 */
export class RequestBudget {
  private seen: BudgetState | undefined;
  /** When `seen` was written: the end of the window its count covers. */
  private seenAt = 0;
  private refreshedAt = Number.NEGATIVE_INFINITY;
  /** Requests taken without a write while unlimited; added on the next write. */
  private uncounted = 0;
  private refreshing = false;
  /** Takes waiting for a turn, and whether a write for them is on its way. */
  private readonly waiting: Waiter[] = [];
  private reserving = false;
  /** Writes not awaited by a request (a hold, a background count): settled() waits for them. */
  private readonly pending = new Set<Promise<unknown>>();
  private bug: unknown;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: RequestBudgetOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? abortableSleep;
  }

  /**
   * Waits for this feed's turn: its reserved slot and any hold. Rejects with a BudgetWaitError when `signal`
   * aborts the wait, and with a BudgetInvariantError on a bug.
   */
  async take(signal?: AbortSignal): Promise<void> {
    const now = this.now();
    const seen = this.seen;
    this.uncounted += 1;
    if (seen && seen.rate <= 0 && now >= seen.holdUntil && this.refreshedAt > Number.NEGATIVE_INFINITY) {
      // Unlimited, no hold known: go at once. At most once a second a write in the background counts the
      // requests and reads any hold or rate another feed set, which the next take then waits for.
      if (now - this.refreshedAt >= BUDGET_POLICY.refreshEveryMs && !this.refreshing) {
        this.refreshedAt = now;
        this.refreshing = true;
        void this.background(this.reserveAndAdjust(now).finally(() => (this.refreshing = false)));
      }
      return;
    }
    this.refreshedAt = now;
    const turn = await this.turn();
    const waitMs = turn ? turn.at - this.now() : 0;
    if (!turn || waitMs <= 0) return;
    try {
      await this.sleep(waitMs, signal);
    } catch (error) {
      if (signal?.aborted) throw new BudgetWaitError(turn.at, turn.heldUntil);
      throw error;
    }
  }

  /** This take's turn: from the next write, shared by every take that waits for it (undefined: go now). */
  private turn(): Promise<Turn | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.reserving) void this.reserveForWaiting();
    });
  }

  /** One write for all the takes waiting; the ones it found no slot for wait for the next. */
  private async reserveForWaiting(): Promise<void> {
    this.reserving = true;
    try {
      while (this.waiting.length > 0) {
        const waiters = this.waiting.splice(0);
        try {
          const turns = await this.reserveAndAdjust(this.now(), waiters.length);
          const served = turns === undefined ? waiters.length : turns.length;
          for (const [index, waiter] of waiters.slice(0, served).entries()) waiter.resolve(turns?.[index]);
          this.waiting.unshift(...waiters.slice(served));
        } catch (error) {
          for (const waiter of waiters) waiter.reject(error);
        }
      }
    } finally {
      this.reserving = false;
    }
  }

  /** A 429 with its Retry-After (ms; undefined: the default): holds every feed and cuts the rate. */
  rateLimited(retryAfterMs: number | undefined, said: PartnerSaid = {}): Promise<void> {
    return this.background(this.hold(retryAfterMs, said));
  }

  /** Resolves once every write not awaited by a request has landed or failed; rejects with a bug one met. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
    const { bug } = this;
    this.bug = undefined;
    if (bug !== undefined) throw bug;
  }

  private background(work: Promise<unknown>): Promise<void> {
    const tracked = work.then(
      () => undefined,
      (error: unknown) => {
        this.bug ??= error;
      },
    );
    this.pending.add(tracked);
    return tracked.finally(() => this.pending.delete(tracked));
  }

  private async hold(retryAfterMs: number | undefined, said: PartnerSaid): Promise<void> {
    const { maxHoldMs, longHoldMs, defaultRetryAfterMs } = BUDGET_POLICY;
    const now = this.now();
    const valid = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0;
    const askedMs = valid ? retryAfterMs : defaultRetryAfterMs;
    const heldMs = Math.min(askedMs, maxHoldMs);
    if (askedMs > longHoldMs) {
      this.options.onLongHold?.({ ...said, askedMs, heldMs, clamped: askedMs > heldMs, until: now + heldMs });
    }
    // Unlimited, this feed's view of the shared count is up to a second old and lacks its own latest
    // requests: counting them first measures the cut from the count as it is now.
    if (this.seen && this.seen.rate <= 0 && this.uncounted > 0 && !this.refreshing) {
      await this.reserveAndAdjust(now);
    }
    const { rate, step } = decreased(this.seen, this.seenAt, this.options.cap);
    try {
      await this.options.store.hold(this.options.key, now, now + heldMs, rate, step);
      // The next take writes (and learns the hold and the new rate) even if this feed was unlimited.
      this.refreshedAt = Number.NEGATIVE_INFINITY;
    } catch (error) {
      this.options.onStoreError?.(error);
    }
  }

  /**
   * Takes the requests counted so far, with a slot for each of `wanted` takes if one write can (several
   * slots at the interval last seen): their turns (slot or hold), as many as were reserved, or undefined
   * when the store failed.
   */
  private async reserveAndAdjust(now: number, wanted = 1): Promise<Turn[] | undefined> {
    const { store, key, cap } = this.options;
    // 0 when the takes that wait were counted by the write before (it had no slot for them).
    const count = checked('count', this.uncounted, 0, Number.MAX_SAFE_INTEGER);
    this.uncounted = 0;
    let reservation: Reservation;
    try {
      const initial = initialState(now, cap);
      const limited = (this.seen?.rate ?? initial.rate) > 0;
      const intervalMs = this.seen?.intervalMs ?? 0;
      const several = wanted > 1 && intervalMs > 0 ? { slots: wanted, intervalMs } : undefined;
      reservation = await store.reserve(key, now, count, BUDGET_POLICY.slackMs, initial, limited, several);
    } catch (error) {
      this.uncounted += count;
      this.options.onStoreError?.(error);
      return undefined;
    }
    const { slotAt, state } = reservation;
    this.seen = state;
    this.seenAt = now;
    const rate = adjusted(state, now, cap);
    if (rate !== undefined) {
      await store.adjust(key, now, rate, state.adjustedAt).catch((error: unknown) => {
        this.options.onStoreError?.(error);
      });
    }
    // Without a rate every take goes at once (no slot to wait for); with one, each reserved slot is a take's.
    const slots = state.intervalMs > 0 ? Math.min(wanted, reservation.slots ?? 1) : wanted;
    return Array.from({ length: slots }, (_, index) => {
      const at = Math.max(slotAt + index * state.intervalMs, state.holdUntil);
      return state.holdUntil > now ? { at, heldUntil: state.holdUntil } : { at };
    });
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
    slotAtAdjust: nowMs,
    step: 0,
  };
}
