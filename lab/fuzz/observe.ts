// What the fuzzer watches while a seed runs: the process's output (the functions' logs; searched for the
// token as it is written, its tail kept for a failing seed), the peak resident memory (Linux: the VmHWM
// watermark, reset per seed through /proc/self/clear_refs; elsewhere sampled), the partner's request rate.
import { readFileSync, writeFileSync } from 'node:fs';
import { BUDGET_POLICY } from '../../functions/core/ingest/request-budget.js';
import { DEFAULT_RETRY_POLICY, rateLimitWaitMs } from '../../functions/core/partner/client.js';
import type { Fault, RequestLogEntry } from '../../tools/simulator/types.js';

type Write = typeof process.stdout.write;

const TAIL_CHARS = 2 * 1024 * 1024;

/** Swallows what the process writes to stdout and stderr while started, and looks for the token in it. */
export class OutputCapture {
  private readonly originals: { stdout: Write; stderr: Write } = {
    stdout: process.stdout.write,
    stderr: process.stderr.write,
  };
  private text = '';
  private carry = '';
  private readonly seen = new Set<string>();
  private started = false;

  constructor(readonly token: string) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const stream of ['stdout', 'stderr'] as const) {
      process[stream].write = ((chunk: unknown, ...rest: unknown[]) => {
        this.note(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString(), stream);
        const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }) as Write;
    }
  }

  stop(): void {
    if (!this.started) return;
    this.started = false;
    process.stdout.write = this.originals.stdout;
    process.stderr.write = this.originals.stderr;
  }

  /** Text the seed produced (output, or an error's text): kept and searched. */
  note(text: string, where = 'an error'): void {
    // The token may straddle two writes.
    const joined = this.carry + text;
    if (joined.includes(this.token)) this.seen.add(where === 'an error' ? where : `the functions' ${where}`);
    this.carry = joined.slice(-this.token.length);
    this.text = (this.text + text).slice(-TAIL_CHARS);
  }

  /** The last warning or error the functions logged, in a line (what a stalled seed last heard). */
  lastWarning(): string | undefined {
    const lines = this.text.split('\n');
    for (let i = lines.length - 1; i >= 0 && i >= lines.length - 2_000; i--) {
      const line = lines[i] ?? '';
      if (!/"level":"(WARN|ERROR)"/.test(line)) continue;
      try {
        const entry = JSON.parse(line) as { message?: unknown; error?: unknown };
        const error = typeof entry.error === 'string' ? entry.error : JSON.stringify(entry.error ?? '');
        return `${String(entry.message)}${error && error !== '""' ? `: ${error}` : ''}`.slice(0, 400);
      } catch {
        return line.slice(0, 400);
      }
    }
    return undefined;
  }

  seenIn(): string[] {
    return [...this.seen];
  }

  tail(): string {
    return this.text;
  }

  /** Writes past the capture (the fuzzer's own progress). */
  write(stream: 'stdout' | 'stderr', text: string): void {
    this.originals[stream].call(process[stream], text);
  }
}

/** Everything an error says: name, message, stack and its causes, and its own fields. */
export function textOfError(error: unknown, depth = 0): string {
  if (!(error instanceof Error) || depth > 5) return String(error);
  let fields = '';
  try {
    fields = JSON.stringify(error);
  } catch {
    // Circular: the message and stack say enough.
  }
  return `${error.name}: ${error.message}\n${error.stack ?? ''}\n${fields}\n${
    error.cause === undefined ? '' : textOfError(error.cause, depth + 1)
  }`;
}

const STATUS = '/proc/self/status';

function kilobytes(field: string): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(STATUS, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Peak RSS growth since construction: the kernel's watermark where it can be reset, else samples. */
export class PeakRss {
  private readonly startKb: number;
  private readonly watermark: boolean;
  private sampledKb: number;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor() {
    let reset = false;
    try {
      // "5" resets the peak resident set size (Linux ≥ 4.0, proc(5) clear_refs).
      writeFileSync('/proc/self/clear_refs', '5');
      reset = true;
    } catch {
      reset = false;
    }
    this.watermark = reset && kilobytes('VmHWM') !== undefined;
    this.startKb = process.memoryUsage.rss() / 1024;
    this.sampledKb = this.startKb;
    if (!this.watermark) {
      this.timer = setInterval(() => {
        this.sampledKb = Math.max(this.sampledKb, process.memoryUsage.rss() / 1024);
      }, 100);
      this.timer.unref();
    }
  }

  growthMb(): number {
    if (this.timer) clearInterval(this.timer);
    const peakKb = this.watermark ? (kilobytes('VmHWM') ?? this.sampledKb) : this.sampledKb;
    return Math.max(0, peakKb - this.startKb) / 1024;
  }
}

/**
 * Peak partner requests per second over any window of the budget's shortest measure (an increase step: the
 * used rate it bounds the rate by may be counted over a window that short, so a retry's burst counts in it).
 */
export function peakObservedRate(
  requests: readonly RequestLogEntry[],
  windowMs = BUDGET_POLICY.increaseEveryMs,
): number {
  const times = requests.map((r) => r.receivedAt ?? 0).sort((a, b) => a - b);
  let peak = 0;
  let first = 0;
  for (let last = 0; last < times.length; last++) {
    while ((times[last] ?? 0) - (times[first] ?? 0) > windowMs) first += 1;
    peak = Math.max(peak, last - first + 1);
  }
  return peak / (windowMs / 1000);
}

/**
 * The waits the spec makes a client take for the partner's 429s: after each, until the next request, at most
 * what the client waits for it (`rateLimitWaitMs`: the n-th 429's Retry-After, `retryAfterOf(n)` ms, undefined
 * for none, grown on each 429 in a row of the same request; for a value it gives up on, the token's hold, at most
 * `BUDGET_POLICY.maxHoldMs`). A partner that
 * rate-limits is the bottleneck, so a seed's budget leaves these out; the token budget's pace and the feed's
 * own, after them as before them, still count (seeds 213 and 626). `since`, `until`: only the part of them
 * between (the stall clock's start: seed 837 waited 30 s of 429s on a drained feed in one run; a run the stall
 * clock leaves out whole: seed 988).
 */
export function rateLimitWaitsMs(
  requests: readonly RequestLogEntry[],
  retryAfterOf: (nth: number) => number | undefined,
  now: number,
  since = Number.NEGATIVE_INFINITY,
  until = Number.POSITIVE_INFINITY,
): number {
  const sorted = [...requests].sort((a, b) => (a.receivedAt ?? 0) - (b.receivedAt ?? 0));
  let [total, nth, inRow] = [0, 0, 0];
  sorted.forEach((request, i) => {
    const before = sorted[i - 1];
    inRow = request.status !== 429 ? 0 : before?.status === 429 && before.url === request.url ? inRow + 1 : 1;
    if (inRow === 0) return;
    const wait = rateLimitWaitMs(retryAfterOf(nth++), inRow, DEFAULT_RETRY_POLICY);
    const start = request.receivedAt ?? now;
    const gap = (sorted[i + 1]?.receivedAt ?? now) - start;
    // A value the client gives up on holds every feed on the token for it, at most the budget's longest hold
    // (seed 144: a far-future date held the feed 5 minutes, its runs each ending retry-later at the hold).
    const waitMs =
      wait.action === 'wait' ? wait.waitMs : Math.min(wait.retryAfterMs, BUDGET_POLICY.maxHoldMs);
    total += Math.max(0, Math.min(start + Math.min(gap, waitMs), until) - Math.max(start, since));
  });
  return total;
}

/** A 200 that holds no page the client can read: not a page, cut short, without end, or a decompression bomb. */
const NO_PAGE_IN_200: ReadonlySet<Fault> = new Set<Fault>([
  'non-page-200',
  'reset-after-headers',
  'truncated-body',
  'truncated-json',
  'endless-body',
  'bomb',
]);

/**
 * Whether the partner's answer gave the client no page to go on with: a reset, a 3xx, a 429, a 5xx or a 401, or
 * a 200 that is no readable page. A 404 is news (an expired cursor: the client recovers from it).
 */
export function answeredNoPage(request: RequestLogEntry): boolean {
  if (request.status === 404) return false;
  if (request.status !== 200) return true;
  return [request.fault, ...(request.also ?? [])].some(
    (fault) => fault !== undefined && NO_PAGE_IN_200.has(fault),
  );
}

/**
 * How long a feed has stood still from `from` to `now`, less the waits the spec makes a client take for 429s
 * (`rateLimitWaitsMs`) and the runs (`downRuns`) the partner answered with no page at all (`answeredNoPage`),
 * counting a 429 wait inside such a run once.
 */
export function stalledMs(
  requests: readonly RequestLogEntry[],
  retryAfterOf: (nth: number) => number | undefined,
  downRuns: ReadonlyArray<{ from: number; to: number }>,
  from: number,
  now: number,
): number {
  const downMs = downRuns
    .filter((run) => run.to > from)
    .reduce((sum, run) => {
      const start = Math.max(run.from, from);
      return sum + run.to - start - rateLimitWaitsMs(requests, retryAfterOf, now, start, run.to);
    }, 0);
  return now - from - downMs - rateLimitWaitsMs(requests, retryAfterOf, now, from);
}
