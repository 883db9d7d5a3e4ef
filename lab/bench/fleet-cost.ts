// The idle cost of one feed per month at its schedule, every line item, in three shapes (issue 32, item 5;
// infra/FLEET.md, "Cost"): today's (a function, a rule, metrics with FeedId and a lag alarm per feed),
// EventBridge Scheduler (one schedule per feed invoking the one poller), and the dispatcher (one rule, one
// dispatcher scanning the registry, batches of B feeds per poller invocation). Pure arithmetic over list
// prices, the bytes an idle run was measured to log and stated AWS latencies; the fixed cost of a deployment
// (its alarms, dashboard and fleet-wide metrics) is shown apart and shared over N feeds.
import { FLEET_GAUGES } from '../../functions/core/observability/metric-names.js';
import { FLEET_PRICES, LAMBDA_MEMORY_MB, PRICES } from './prices.js';

/** What an idle poll does and logs, measured (bytes) and stated (times; AWS is not reachable from here). */
export interface IdleRun {
  /** The partner's answer to a GET (stated: the bench's AWS model). */
  partnerGetMs: number;
  /** One conditional UpdateItem. */
  writeMs: number;
  /** CPU of one idle feed poll (parse an empty page, log) on the function's share of a core. */
  cpuMs: number;
  /** Lambda's own time per invocation (init of the handler's promise chain, flushing logs). */
  invocationOverheadMs: number;
  /** Bytes today's idle run prints: measured 2026-11-27 (one poller run on moto, INFO, metrics on). */
  todayLogLines: readonly number[];
  /** The one line per feed poll the new shape keeps (today's `poll run finished`, measured). */
  outcomeLineBytes: number;
  /** One EMF document without the FeedId dimension set, and the invocation's summary line (stated). */
  invocationLogBytes: number;
  /** A registry item as the dispatcher's scan reads it (strongly consistent: 1 RRU per 4 KB). */
  registryItemBytes: number;
  /**
   * DynamoDB writes per idle poll as measured (undefined: the design's count, the run's record + the shares of
   * the budget's write and of the invocation's end).
   */
  writesPerPoll?: number;
}

export const IDLE_RUN: IdleRun = {
  partnerGetMs: 200,
  writeMs: 10,
  cpuMs: 5,
  invocationOverheadMs: 20,
  // `page handed off` of the empty page, `poll run finished`, the EMF document with both dimension sets.
  todayLogLines: [460, 544, 525],
  outcomeLineBytes: 544,
  invocationLogBytes: 450 + 400,
  registryItemBytes: 1024,
};

export interface FleetShape {
  feeds: number;
  scheduleMinutes: number;
  /** Feeds per poller invocation (the dispatcher's batch). */
  batchSize: number;
  /** FeedId metrics an idle feed keeps emitting today: PagesFetched, RunDurationMs, PaceDelayMs, SecondsSinceCaughtUp. */
  todayIdleFeedMetrics: number;
}

export interface CostLine {
  item: string;
  /** US dollars per feed per month. */
  today: number;
  scheduler: number;
  dispatcher: number;
  /** The dispatcher's floor for this item (undefined: not part of the floor). */
  floor?: number;
  how: string;
}

const MONTH_MINUTES = 30 * 24 * 60;
const gbSeconds = (ms: number) => (ms / 1000) * (LAMBDA_MEMORY_MB.poller / 1024);
const logCost = (bytes: number) => (bytes / 2 ** 30) * PRICES.logsPerGbIngested;
const eventBytes = (lines: readonly number[]) =>
  lines.reduce((sum, bytes) => sum + bytes + FLEET_PRICES.logEventOverheadBytes, 0);

/**
 * X-Ray traces recorded per month out of `invocationsPerSecond` invocations of one function under Lambda's
 * default sampling (the first request each second, then 5 %).
 */
export function tracedPerMonth(invocationsPerSecond: number): number {
  const sampledPerSecond = Math.min(invocationsPerSecond, 1 + 0.05 * Math.max(0, invocationsPerSecond - 1));
  return sampledPerSecond * MONTH_MINUTES * 60;
}

/** Every line item of one idle feed's month in the three shapes, and the dispatcher's floor. */
export function idleCostLines(shape: FleetShape, run: IdleRun = IDLE_RUN): CostLine[] {
  const polls = MONTH_MINUTES / shape.scheduleMinutes;
  const B = shape.batchSize;
  const N = shape.feeds;
  // Today: lease, budget, commit of the empty page, release. New (infra/FLEET.md, "An idle poll"): the
  // batch's items read at once (1 RRU each, consistent), the GET, then one conditional write that records the
  // run (fenced by the revision read; a page with data takes the lease instead); the token's budget write is
  // shared by the invocation's feeds, and so is its end (the write that frees its slot in the dispatch's count).
  const todayWrites = 4;
  const runMs = (steps: number, feeds: number) =>
    run.invocationOverheadMs + run.partnerGetMs + steps * run.writeMs + feeds * run.cpuMs;
  const todayMs = runMs(todayWrites, 1);
  // read, record, budget
  const schedulerMs = runMs(3, 1);
  // A batch's feeds poll at once: one read, one GET's time, one write each at once, their CPU in turn; the end.
  const batchMs = runMs(4, B);
  const newLogBytes = eventBytes([run.outcomeLineBytes]);
  const write = PRICES.dynamoPerWriteRequestUnit;
  const invocationLog = run.invocationLogBytes + 2 * FLEET_PRICES.logEventOverheadBytes;
  // Traces: a function per feed (today), one function invoked N/interval a second (Scheduler); the dispatcher's
  // pollers join the dispatch's trace (the SDK passes the trace header on in Lambda), so only dispatches count.
  const xrayToday = tracedPerMonth(1 / (60 * shape.scheduleMinutes)) * PRICES.xrayPerTraceRecorded;
  const xrayScheduler = (tracedPerMonth(N / (60 * shape.scheduleMinutes)) / N) * PRICES.xrayPerTraceRecorded;
  const schedulerBilled = Math.max(0, N * polls - FLEET_PRICES.schedulerFreeInvocations) / N;
  // Strongly consistent: 1 RRU per 4 KB read; a scan counts the bytes of all items it reads together.
  const itemRru = Math.ceil(run.registryItemBytes / 4096);
  const scanRru = run.registryItemBytes / 4096;
  return [
    {
      item: 'Lambda requests',
      today: polls * PRICES.lambdaPerRequest,
      scheduler: polls * PRICES.lambdaPerRequest,
      dispatcher: (polls / B) * PRICES.lambdaPerRequest,
      floor: (polls / B) * PRICES.lambdaPerRequest,
      how: `one invocation per poll; the dispatcher's poller one per ${B} feeds`,
    },
    {
      item: `Lambda GB-s (arm64, ${LAMBDA_MEMORY_MB.poller} MB)`,
      today: polls * gbSeconds(todayMs) * PRICES.lambdaArmPerGbSecond,
      scheduler: polls * gbSeconds(schedulerMs) * PRICES.lambdaArmPerGbSecond,
      dispatcher: ((polls * gbSeconds(batchMs)) / B) * PRICES.lambdaArmPerGbSecond,
      floor: ((polls * gbSeconds(batchMs)) / B) * PRICES.lambdaArmPerGbSecond,
      how: `idle run ${todayMs} ms today, ${schedulerMs} ms alone, ${batchMs} ms for ${B} feeds at once (GET ${run.partnerGetMs} ms, DynamoDB calls ${run.writeMs} ms, CPU ${run.cpuMs} ms a feed)`,
    },
    {
      item: 'DynamoDB writes (on-demand, 1 WRU each)',
      today: polls * todayWrites * write,
      scheduler: polls * 2 * write,
      dispatcher: polls * (run.writesPerPoll ?? 1 + 2 / B) * write,
      floor: polls * (1 + 2 / B) * write,
      how: `today ${todayWrites} a poll (lease, budget, commit, release); new: ${run.writesPerPoll === undefined ? '' : `${run.writesPerPoll.toFixed(2)} measured; floor: `}the run's record, the token's budget write and the invocation's end (alone, or once per invocation of ${B})`,
    },
    {
      item: 'DynamoDB reads (consistent)',
      today: 0,
      scheduler: polls * itemRru * PRICES.dynamoPerReadRequestUnit,
      dispatcher: polls * (itemRru + scanRru) * PRICES.dynamoPerReadRequestUnit,
      floor: polls * itemRru * PRICES.dynamoPerReadRequestUnit,
      how: `the poller reads the feed's item (${itemRru} RRU: today the lease write returns it); the dispatcher's scan reads it once a minute (${scanRru} RRU)`,
    },
    {
      item: 'CloudWatch Logs ingestion',
      today: polls * logCost(eventBytes(run.todayLogLines)),
      scheduler: polls * logCost(newLogBytes + invocationLog),
      dispatcher: polls * logCost(newLogBytes + invocationLog / B),
      floor: polls * logCost(newLogBytes),
      how: `today ${eventBytes(run.todayLogLines)} B a poll (measured); new: the outcome line ${newLogBytes} B a feed, EMF and summary ${invocationLog} B an invocation; START/END/REPORT dropped (system log level WARN)`,
    },
    {
      item: 'X-Ray traces (default sampling)',
      today: xrayToday,
      scheduler: xrayScheduler,
      dispatcher: 0,
      how: 'first request a second then 5 %, per function; the dispatcher: pollers join the dispatch trace',
    },
    {
      item: 'EventBridge',
      today: 0,
      scheduler: schedulerBilled * FLEET_PRICES.schedulerPerInvocation,
      dispatcher: 0,
      how: `rules: free; Scheduler: ${FLEET_PRICES.schedulerFreeInvocations / 1e6} M invocations free a month, then $1 per million`,
    },
    {
      item: 'CloudWatch metrics with FeedId',
      today: shape.todayIdleFeedMetrics * FLEET_PRICES.metricPerMonth,
      scheduler: 0,
      dispatcher: 0,
      how: `${shape.todayIdleFeedMetrics} metrics an idle feed emits every hour today (up to 18 with traffic); none per feed after`,
    },
    {
      item: 'CloudWatch alarms per feed',
      today: FLEET_PRICES.alarmPerMonth + FLEET_PRICES.alarmPerMonth / 10,
      scheduler: 0,
      dispatcher: 0,
      how: "today: the feed's lag alarm and a tenth of a PollerErrors alarm; after: fleet alarms only (fixed)",
    },
  ];
}

/**
 * Metrics an idle fleet emits every hour: the fleet gauges the alarms watch (the others are on the dispatch's
 * log line) and the poller's PagesFetched (no FeedId). A run's duration is Lambda's free `Duration`; a feed's
 * pace and lag are on its outcome line, which the dashboard charts.
 */
export const FIXED_METRICS = Object.keys(FLEET_GAUGES).length + 1;
/** The alarms of a stack without downstream subscribers (test/infra/stack.test.ts counts them: 17). */
export const FIXED_ALARMS = 17;

/** The deployment's fixed monthly cost, shared by its feeds, in the dispatcher shape (stated counts). */
export function dispatcherFixedPerMonth(feeds: number, run: IdleRun = IDLE_RUN) {
  const dispatches = MONTH_MINUTES;
  // The scan: items × bytes at 1 MB a page, ~100 ms a page; the dispatcher at 256 MB.
  const scanMs = 100 + Math.ceil((feeds * run.registryItemBytes) / 2 ** 20) * 100;
  const lambda =
    dispatches * (PRICES.lambdaPerRequest + (scanMs / 1000) * 0.25 * PRICES.lambdaArmPerGbSecond);
  const logs = dispatches * logCost(2048);
  const xray = Math.max(0, dispatches - FLEET_PRICES.xrayFreeTraces) * PRICES.xrayPerTraceRecorded;
  // The metrics an idle fleet emits (the alarmed fleet gauges, the poller's PagesFetched), the alarms of a
  // stack without subscribers, one dashboard.
  const cloudwatch =
    FIXED_METRICS * FLEET_PRICES.metricPerMonth +
    FIXED_ALARMS * FLEET_PRICES.alarmPerMonth +
    FLEET_PRICES.dashboardPerMonth;
  return { lambda, logs, xray, cloudwatch, total: lambda + logs + xray + cloudwatch };
}

export function totals(lines: readonly CostLine[]) {
  const sum = (pick: (line: CostLine) => number) => lines.reduce((total, line) => total + pick(line), 0);
  return {
    today: sum((line) => line.today),
    scheduler: sum((line) => line.scheduler),
    dispatcher: sum((line) => line.dispatcher),
    floor: sum((line) => line.floor ?? 0),
  };
}
