// A fleet of feeds on a fake clock: the dispatcher's real decision (functions/core/fleet/dispatch.ts) driving a
// model of the poller against a model of the partner, to show what the decision does over hours of feeds in
// milliseconds of CPU. What is modelled, and how (infra/FLEET.md, "The simulation"):
// - the dispatcher runs every tick and when a poller invocation ends with a feed behind or with feeds left
//   waiting by the last dispatch (a request that a scan started after it already saw is dropped), reads the rows as they are, and invokes each batch after
//   `invokeMs`; the rows are the feeds' items, written as the poller writes them (lease, dispatch, outcome);
// - a poller invocation polls its feeds concurrently; each feed takes its lease, then pages: a GET waits for its
//   token's next slot (one shared rate per token, as the request budget paces it) and the partner's latency;
//   each page then takes `cpuMs` of the invocation's one CPU (pages of concurrent feeds queue for it); a feed
//   stops when caught up, at its slice (`slice-end`), or on its failure; the invocation ends with its last feed;
// - versions become visible at the partner at given times; a page takes the oldest `pageSize` of them.
import {
  type BatchKind,
  type DispatchSettings,
  type FeedRow,
  type InFlightBatch,
  leaseOwnerOf,
  planDispatch,
} from '../../functions/core/fleet/dispatch.js';

export type FeedFailure = 'none' | 'auth' | 'outage';

export interface SimulatedFeed {
  feedId: string;
  token: string;
  scheduleMinutes: number;
  /** Versions visible at the partner from time 0. */
  backlog: number;
  /** Times (ms) at which one more version becomes visible. */
  arrivals?: readonly number[];
  failure?: FeedFailure;
  /** A feed in its steady state at time 0: caught up and last dispatched at this time (ms, may be negative). */
  caughtUpAt?: number;
}

export interface PartnerPace {
  /** Time from a GET's slot to its answer. */
  latencyMs: number;
  /** Requests per second each token allows (the shared budget's rate). */
  tokenRatePerSecond: number;
  pageSize: number;
  /** An outage: each attempt waits this long for nothing; the client gives up after `outageAttempts`. */
  outageAttemptMs: number;
  outageAttempts: number;
  /** A 401 backs the feed off this long (the poller's first auth backoff). */
  authBackoffMs: number;
}

export interface SimulationOptions {
  feeds: readonly SimulatedFeed[];
  settings: DispatchSettings;
  partner: PartnerPace;
  /** Poller CPU per page (parse, prepare, hand-off) on its share of a core; an empty page's (parse, log). */
  cpuMs: number;
  emptyPageCpuMs: number;
  /** One DynamoDB write (lease, release) as the poller waits for it. */
  writeMs: number;
  /** From Invoke to the handler running (async queue, warm start). */
  invokeMs: number;
  /** The dispatcher's scan, plan and invokes. */
  dispatchMs: number;
  durationMs: number;
  /** Stop early when every feed has drained what was visible at time 0. */
  untilDrained?: boolean;
}

/** The partner's and AWS's pace the model states (infra/FLEET.md, "The simulation"): what the bench runs. */
export const STATED_AWS: Omit<SimulationOptions, 'feeds' | 'durationMs' | 'settings'> = {
  partner: {
    latencyMs: 200,
    tokenRatePerSecond: 1000,
    pageSize: 100,
    outageAttemptMs: 30_000,
    outageAttempts: 5,
    authBackoffMs: 5 * 60_000,
  },
  // The page CPU measured here (8.5 ms) on a 512 MB function's share of a core (0.29).
  cpuMs: 29,
  emptyPageCpuMs: 5,
  writeMs: 10,
  invokeMs: 100,
  dispatchMs: 300,
};

export interface FeedRecord {
  /** Versions fetched, with the time of the page that carried them. */
  fetched: Array<{ at: number; versions: number }>;
  /** Start times of the runs that polled the partner. */
  polls: number[];
  /** Fetch time minus visibility time of every version fetched that arrived after time 0. */
  freshnessMs: number[];
  drainedAt?: number;
}

export interface SimulationResult {
  endedAt: number;
  feeds: Map<string, FeedRecord>;
  /** The most poller invocations running at once. */
  peakPollers: number;
  dispatches: number;
  invocations: number;
  /** Runs that found the feed's lease held (a duplicate dispatch). */
  leaseHeld: number;
  batchesByKind: Record<BatchKind, number>;
}

interface Event {
  at: number;
  seq: number;
  run: () => void;
}

/** A binary heap of events by time, then by insertion. */
class Agenda {
  private readonly heap: Event[] = [];
  private seq = 0;
  add(at: number, run: () => void) {
    const heap = this.heap;
    heap.push({ at, seq: this.seq++, run });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i] as Event, heap[parent] as Event)) break;
      [heap[i], heap[parent]] = [heap[parent] as Event, heap[i] as Event];
      i = parent;
    }
  }
  next(): Event | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l] as Event, heap[m] as Event)) m = l;
        if (r < heap.length && before(heap[r] as Event, heap[m] as Event)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m] as Event, heap[i] as Event];
        i = m;
      }
    }
    return top;
  }
}
const before = (a: Event, b: Event) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

export function simulateFleet(options: SimulationOptions): SimulationResult {
  const { settings, partner } = options;
  const agenda = new Agenda();
  const rows = new Map<string, FeedRow>();
  const visible = new Map<string, number[]>(); // visibility times of the versions not yet fetched, oldest first
  const records = new Map<string, FeedRecord>();
  const specs = new Map(options.feeds.map((feed) => [feed.feedId, feed]));
  for (const feed of options.feeds) {
    rows.set(feed.feedId, {
      feedId: feed.feedId,
      registered: true,
      state: 'enabled',
      scheduleMinutes: feed.scheduleMinutes,
      tokenParameterName: feed.token,
      createdAt: 0,
      ...(feed.caughtUpAt === undefined
        ? {}
        : {
            lastCaughtUpAt: feed.caughtUpAt,
            lastDispatchedAt: feed.caughtUpAt,
            lastRunAt: feed.caughtUpAt,
            lastRunOutcome: 'caught-up',
          }),
    });
    visible.set(
      feed.feedId,
      Array.from({ length: feed.backlog }, () => 0),
    );
    records.set(feed.feedId, { fetched: [], polls: [], freshnessMs: [] });
    for (const at of feed.arrivals ?? []) agenda.add(at, () => visible.get(feed.feedId)?.push(at));
  }
  const nextSlot = new Map<string, number>();
  const result: SimulationResult = {
    endedAt: 0,
    feeds: records,
    peakPollers: 0,
    dispatches: 0,
    invocations: 0,
    leaseHeld: 0,
    batchesByKind: { behind: 0, idle: 0, failing: 0 },
  };
  let now = 0;
  let running = 0;
  let inFlight: InFlightBatch[] = [];
  /** Batches whose invocations said they ended since the last dispatch read them (`fleet#ended`). */
  let ended: string[] = [];
  let lastScanAt = Number.NEGATIVE_INFINITY;
  let dispatching = false;
  /** Due feeds the last dispatch left waiting (the dispatch lock item keeps the count for the pollers). */
  let waiting = 0;
  let rerun = false;

  // Feeds that fail never drain; those without a backlog at time 0 have nothing to drain.
  const drained = () =>
    [...specs.values()].every(
      (feed) =>
        (feed.failure ?? 'none') !== 'none' ||
        feed.backlog === 0 ||
        records.get(feed.feedId)?.drainedAt !== undefined,
    );

  function requestDispatch(requestedAt: number) {
    if (lastScanAt > requestedAt) return; // a scan started after the request saw what it asks about
    if (dispatching) {
      rerun = true;
      return;
    }
    dispatching = true;
    lastScanAt = now;
    result.dispatches += 1;
    const dispatchId = `d${result.dispatches}`;
    // The scan reads the rows as they are now; the plan is sent after the dispatcher's own time.
    const plan = planDispatch({
      rows: [...rows.values()].map((row) => ({ ...row })),
      now,
      dispatchId,
      inFlight,
      ended,
      settings,
    });
    inFlight = plan.inFlight;
    ended = [];
    waiting = plan.waiting.length;
    const dispatchedAt = now;
    agenda.add(now + options.dispatchMs, () => {
      dispatching = false;
      for (const batch of plan.batches) {
        result.batchesByKind[batch.kind] += 1;
        agenda.add(now + options.invokeMs, () =>
          runInvocation(batch.batchId, batch.feedIds, dispatchedAt, now + plan.sliceMs),
        );
      }
      if (rerun) {
        rerun = false;
        requestDispatch(now);
      }
    });
  }

  function tick() {
    requestDispatch(now);
    agenda.add(now + settings.tickMs, tick);
  }

  function runInvocation(batchId: string, feedIds: string[], dispatchedAt: number, sliceEnd: number) {
    running += 1;
    result.invocations += 1;
    result.peakPollers = Math.max(result.peakPollers, running);
    const runId = `${batchId}.${result.invocations}`;
    let open = feedIds.length;
    let behind = false;
    let cpuFreeAt = now;
    const done = (moreToFetch: boolean) => {
      behind ||= moreToFetch;
      open -= 1;
      if (open > 0) return;
      running -= 1;
      ended.push(batchId);
      // A slot is free: a feed of this batch is behind, or the last dispatch left feeds waiting for one.
      if (behind || waiting > 0) requestDispatch(now);
    };
    // Each feed's run, its steps as events (the invocation's feeds run concurrently).
    for (const feedId of feedIds) {
      const row = rows.get(feedId) as FeedRow;
      const spec = specs.get(feedId) as SimulatedFeed;
      const record = records.get(feedId) as FeedRecord;
      const owner = leaseOwnerOf(runId, feedId);
      agenda.add(now + options.writeMs, () => {
        if (row.leaseOwner !== undefined && (row.leaseExpiresAt ?? 0) > now) {
          result.leaseHeld += 1;
          done(false);
          return;
        }
        Object.assign(row, {
          leaseOwner: owner,
          leaseExpiresAt: sliceEnd + 120_000,
          lastDispatchId: batchId,
          lastDispatchedAt: dispatchedAt,
        });
        record.polls.push(now);
        page();
      });
      const release = (outcome: string, caughtUp: boolean, moreToFetch: boolean) =>
        agenda.add(now + options.writeMs, () => {
          delete row.leaseOwner;
          delete row.leaseExpiresAt;
          row.lastRunAt = now;
          row.lastRunOutcome = outcome;
          if (caughtUp) row.lastCaughtUpAt = now;
          done(moreToFetch);
        });
      const page = () => {
        if (spec.failure === 'auth') {
          agenda.add(now + partner.latencyMs, () => {
            row.authRetryNotBefore = now + partner.authBackoffMs;
            row.authFailedTokenVersion = 1;
            release('auth-failed', false, false);
          });
          return;
        }
        if (spec.failure === 'outage') {
          const givesUp = Math.min(now + partner.outageAttempts * partner.outageAttemptMs, sliceEnd);
          agenda.add(givesUp, () => release('retry-later', false, false));
          return;
        }
        const slot = Math.max(now, nextSlot.get(spec.token) ?? 0);
        nextSlot.set(spec.token, slot + 1000 / partner.tokenRatePerSecond);
        agenda.add(slot + partner.latencyMs, () => {
          const queue = visible.get(feedId) as number[];
          const taken = queue.splice(0, partner.pageSize);
          const fetchedAt = now;
          const hasMore = queue.length > 0;
          cpuFreeAt = Math.max(cpuFreeAt, now) + (taken.length > 0 ? options.cpuMs : options.emptyPageCpuMs);
          agenda.add(cpuFreeAt, () => {
            record.fetched.push({ at: now, versions: taken.length });
            for (const at of taken) if (at > 0) record.freshnessMs.push(fetchedAt - at);
            if (!hasMore) {
              if (record.drainedAt === undefined && spec.backlog > 0) record.drainedAt = now;
              release('caught-up', true, false);
            } else if (now >= sliceEnd) release('slice-end', false, true);
            else page();
          });
        });
      };
    }
  }

  agenda.add(0, tick);
  for (let event = agenda.next(); event !== undefined; event = agenda.next()) {
    if (event.at > options.durationMs) break;
    now = event.at;
    event.run();
    if (options.untilDrained && drained()) break;
  }
  result.endedAt = now;
  return result;
}

/** Versions a feed had fetched by `at`. */
export function fetchedBy(record: FeedRecord, at: number): number {
  return record.fetched.reduce((sum, page) => sum + (page.at <= at ? page.versions : 0), 0);
}
