// Sections 2, 3, 5 and 6 from the measurements: request counts against their floors, the catch-up
// model, cost per million versions at list prices, and end-to-end time against the emulator's ceiling.

import type { CeilingMeasurement, PipelineMeasurement } from './pipeline.js';
import { LAMBDA_MEMORY_MB, PRICES } from './prices.js';
import { type Figure, figure, formatNumber, type Section } from './report.js';

export interface Schedule {
  pageSize: number;
  maxPagesPerRun: number;
  pollerTimeoutMs: number;
  safetyMarginMs: number;
  scheduleMinutes: number;
  apiLatencyMs: number;
  backlog: number;
  consumerBatchSize: number;
  /** Self-continuation on (maxContinuations > 0): the next run starts when one ends, not at the next tick. */
  continuation: boolean;
}

export interface PageCost {
  /** Poller CPU per page: JSON.parse + preparePage (section 1, measured). */
  cpuMs: number;
  /** Floor CPU per page (section 1 floor). */
  floorCpuMs: number;
  /** Measured poller handler time per page here, where a partner GET costs about nothing. */
  localMs: number;
  /** The emulator ceiling's time to publish one page (the floor of the AWS work per page). */
  floorAwsMs: number;
}

/** Gap between two runs of a continuation chain on AWS (the async invoke, a warm start, lease acquire), stated. */
const CONTINUATION_GAP_MS = 150;

const per1000 = (count: number, versions: number): number => (count / versions) * 1000;

/**
 * The bench runs the poller one page per run (see pipeline.ts); a deployed run takes up to
 * maxPagesPerRun pages. What a run costs beyond its pages' commits (lease acquire and release) is
 * measured per run and spread over maxPagesPerRun pages in the models below.
 */
export function perRunOverhead(pipeline: PipelineMeasurement): { cursorCalls: number; ms: number } {
  const updates = pipeline.publish.calls.counts['dynamodb.UpdateItem'] ?? 0;
  const cursorCalls = (updates - pipeline.publish.pages) / pipeline.publish.runs;
  return { cursorCalls, ms: cursorCalls * (pipeline.publish.calls.meanMs['dynamodb.UpdateItem'] ?? 0) };
}

/** Poller handler time per page as deployed: measured per page, with the per-run overhead spread. */
export function localMsPerPage(pipeline: PipelineMeasurement, maxPagesPerRun: number): number {
  const overhead = perRunOverhead(pipeline);
  const { wallMs, runs, pages } = pipeline.publish;
  return (wallMs - runs * overhead.ms) / pages + overhead.ms / maxPagesPerRun;
}

function sendsTo(pipeline: PipelineMeasurement, queue: string): number {
  return pipeline.publish.calls.calls.filter(
    (call) => call.operation === 'SendMessageBatch' && call.queue === queue,
  ).length;
}

export function requestsSection(pipeline: PipelineMeasurement, schedule: Schedule): Section {
  const n = pipeline.versions;
  const consume = pipeline.consume.calls.counts;
  const getFloor = Math.ceil(n / schedule.pageSize);
  const batchFloor = Math.ceil(n / 10);
  const w = pipeline.writes;
  const publishCounts = pipeline.publish.calls.counts;
  const overhead = perRunOverhead(pipeline);
  return {
    id: 'requests',
    title: `Requests per 1,000 versions, fault-free (${n} versions, pageSize ${schedule.pageSize})`,
    floorIs: 'ceil(versions / pageSize) GETs; ceil(versions / 10) calls per queue; 1 write per version',
    figures: [
      figure('partner GETs', 'per 1k', per1000(pipeline.publish.partnerGets, n), per1000(getFloor, n), 1.05),
      figure(
        'SendMessageBatch, orders queue',
        'per 1k',
        per1000(sendsTo(pipeline, 'orders'), n),
        per1000(batchFloor, n),
        1.05,
      ),
      figure(
        'SendMessageBatch, downstream queue',
        'per 1k',
        per1000(sendsTo(pipeline, 'downstream-analytics'), n),
        per1000(batchFloor, n),
        1.05,
      ),
      figure(
        'ReceiveMessage with messages (event source)',
        'per 1k',
        per1000((consume['sqs.ReceiveMessage'] ?? 0) - pipeline.consume.emptyReceives, n),
        per1000(batchFloor, n),
      ),
      figure(
        'DeleteMessageBatch (event source)',
        'per 1k',
        per1000(consume['sqs.DeleteMessageBatch'] ?? 0, n),
        per1000(batchFloor, n),
      ),
      figure('orders-table writes per applied version', 'writes', w.putItems / w.applied, 1),
      figure(
        'write units per applied version (table + GSI)',
        'WCU',
        (w.tableWriteUnits + w.indexWriteUnits) / w.applied,
        w.floorWriteUnits / w.applied,
      ),
      figure(
        `cursor-table writes per page (${Number.isFinite(schedule.maxPagesPerRun) ? `${schedule.maxPagesPerRun} pages/run` : 'no page cap'})`,
        'writes',
        1 + overhead.cursorCalls / schedule.maxPagesPerRun,
        1,
      ),
    ],
    details: {
      countedGets:
        'GETs of the catch-up runs: every data page; the last page says hasMore false, so no extra empty GET is needed.',
      partnerGets: pipeline.publish.partnerGets,
      pollerRuns: pipeline.publish.runs,
      pollerOutcomes: pipeline.publish.outcomes,
      cursorCallsPerRunBesidesCommits: overhead.cursorCalls,
      cursorFloor: 'one commit per page (the cursor moves only after the page is durably published)',
      pages: pipeline.publish.pages,
      publishCalls: publishCounts,
      consumeCalls: consume,
      emptyReceives: pipeline.consume.emptyReceives,
      emptyReceivesAre:
        "the one empty ReceiveMessage that ends each page's drain in the bench; not in the figure",
      staleWrites:
        "conditionFailed counts versions that reached the table after a newer version of the same order (the consumer applies a batch's records in parallel, so two versions of one order in one batch race; a standard queue may also reorder them); each is a charged write that applies nothing",
      writes: w,
      meanMsPerCall: { publish: pipeline.publish.calls.meanMs, consume: pipeline.consume.calls.meanMs },
      writeUnitsFloor:
        "each version's normalised order stored once alone: no ledger attributes, no GSI entry, no larger old item",
    },
  };
}

export interface CatchUp {
  pageMs: number;
  pagesPerRun: number;
  runSeconds: number;
  periodSeconds: number;
  runs: number;
  hours: number;
}

/**
 * The poller prefetches page n+1 while it publishes page n, so in steady state a page costs its CPU
 * plus the longer of the partner's latency and the AWS work (publish + commit). A run ends for lack of time
 * (or at the page cap, if one is set) and, with self-continuation, the next run starts at once: a run's period
 * is its own time plus the hand-over. Without continuation it waits for the next schedule tick.
 */
export function catchUp(cpuMs: number, awsMs: number, schedule: Schedule): CatchUp {
  const pageMs = cpuMs + Math.max(schedule.apiLatencyMs, awsMs);
  const pagesByTime = Math.floor((schedule.pollerTimeoutMs - schedule.safetyMarginMs) / pageMs);
  const pagesPerRun = Math.max(1, Math.min(schedule.maxPagesPerRun, pagesByTime));
  const runSeconds = (pagesPerRun * pageMs) / 1000;
  const interval = schedule.scheduleMinutes * 60;
  const periodSeconds = schedule.continuation
    ? runSeconds + CONTINUATION_GAP_MS / 1000
    : Math.ceil(runSeconds / interval) * interval;
  const runs = Math.ceil(schedule.backlog / (pagesPerRun * schedule.pageSize));
  return { pageMs, pagesPerRun, runSeconds, periodSeconds, runs, hours: (runs * periodSeconds) / 3600 };
}

export function awsMsPerPage(page: PageCost): number {
  return Math.max(0, page.localMs - page.cpuMs);
}

export function catchUpSection(page: PageCost, schedule: Schedule): Section {
  const awsMs = awsMsPerPage(page);
  const measured = catchUp(page.cpuMs, awsMs, schedule);
  const floor = catchUp(page.floorCpuMs, page.floorAwsMs, schedule);
  const s = schedule;
  return {
    id: 'catchUp',
    title: `Catch-up model of a ${s.backlog.toLocaleString('en-US')}-version backlog (${s.continuation ? 'self-continuation' : `rate ${s.scheduleMinutes} min`}, ${Number.isFinite(s.maxPagesPerRun) ? `${s.maxPagesPerRun} pages/run` : 'no page cap'}, pageSize ${s.pageSize}, timeout ${s.pollerTimeoutMs / 1000} s, API ${s.apiLatencyMs} ms/GET)`,
    floorIs: "the same model with the floor CPU and the ceiling run's publish time per page",
    figures: [
      figure('time per page t_page', 'ms', measured.pageMs, floor.pageMs),
      figure('drain time', 'h', measured.hours, floor.hours),
      figure('pages per run', 'pages', measured.pagesPerRun),
    ],
    formulas: [
      'Catch-up: t_page = t_cpu + max(L, t_aws)   (the next GET overlaps publishing the current page)',
      `  t_cpu = ${formatNumber(page.cpuMs)} ms (section 1), t_aws = t_local - t_cpu = ${formatNumber(page.localMs)} - ${formatNumber(page.cpuMs)} = ${formatNumber(awsMs)} ms, L = ${s.apiLatencyMs} ms  ->  t_page = ${formatNumber(measured.pageMs)} ms`,
      `  pages/run = min(maxPagesPerRun, floor((timeout - safetyMargin) / t_page)) = min(${Number.isFinite(s.maxPagesPerRun) ? s.maxPagesPerRun : 'no cap'}, floor(${(s.pollerTimeoutMs - s.safetyMarginMs) / 1000} s / ${formatNumber(measured.pageMs)} ms)) = ${measured.pagesPerRun}`,
      s.continuation
        ? `  period = pages/run * t_page + hand-over (${CONTINUATION_GAP_MS} ms, stated) = ${formatNumber(measured.periodSeconds)} s   (self-continuation: the next run starts at once)`
        : `  period = ceil(pages/run * t_page / interval) * interval = ${measured.periodSeconds} s   (a tick that finds a run still going is skipped)`,
      `  drain = ceil(backlog / (pages/run * pageSize)) * period = ${measured.runs} runs * ${measured.periodSeconds} s = ${formatNumber(measured.hours)} h`,
    ],
    details: {
      measured,
      floor,
      awsMsPerPage: awsMs,
      localMsPerPage: page.localMs,
      safetyMarginMs: s.safetyMarginMs,
    },
  };
}

export function costSection(
  pipeline: PipelineMeasurement,
  ceiling: CeilingMeasurement,
  page: PageCost,
  schedule: Schedule,
): Section {
  const n = pipeline.versions;
  const perMillion = 1e6 / n;
  const gbPoller = LAMBDA_MEMORY_MB.poller / 1024;
  const gbConsumer = LAMBDA_MEMORY_MB.consumer / 1024;
  const measuredCatchUp = catchUp(page.cpuMs, awsMsPerPage(page), schedule);
  const floorCatchUp = catchUp(page.floorCpuMs, page.floorAwsMs, schedule);
  const pagesPerMillion = (pipeline.publish.partnerGets / n) * 1e6;
  const floorPagesPerMillion = 1e6 / schedule.pageSize;

  const poller = (pages: number, pageMs: number, pagesPerRun: number) =>
    (pages * pageMs * gbPoller * PRICES.lambdaArmPerGbSecond) / 1000 +
    Math.ceil(1e6 / (pagesPerRun * schedule.pageSize)) * PRICES.lambdaPerRequest;
  const consumer = (invocations: number, ms: number) =>
    (ms * gbConsumer * PRICES.lambdaArmPerGbSecond) / 1000 + invocations * PRICES.lambdaPerRequest;
  const batchFloor = Math.ceil(n / schedule.consumerBatchSize);

  const w = pipeline.writes;
  const overhead = perRunOverhead(pipeline);
  const cursorWrites = pagesPerMillion * (1 + overhead.cursorCalls / measuredCatchUp.pagesPerRun);
  const rows: Figure[] = [
    figure(
      'Lambda poller (GB-s + requests)',
      '$/M',
      poller(pagesPerMillion, measuredCatchUp.pageMs, measuredCatchUp.pagesPerRun),
      poller(floorPagesPerMillion, floorCatchUp.pageMs, floorCatchUp.pagesPerRun),
    ),
    figure(
      'Lambda consumer (GB-s + requests)',
      '$/M',
      consumer(pipeline.consume.invocations * perMillion, pipeline.consume.handlerMs * perMillion),
      consumer(batchFloor * perMillion, batchFloor * ceiling.putGroupMs * perMillion),
    ),
    figure(
      'SQS requests (64 KB chunks)',
      '$/M',
      pipeline.sqsBilledRequests * perMillion * PRICES.sqsPerRequest,
      (pipeline.queues + 2) * batchFloor * perMillion * PRICES.sqsPerRequest,
    ),
    figure(
      'DynamoDB on-demand (WRU + RRU)',
      '$/M',
      ((w.tableWriteUnits + w.indexWriteUnits + w.historyWriteUnits) * perMillion + cursorWrites) *
        PRICES.dynamoPerWriteRequestUnit +
        pipeline.dynamoReadUnits * perMillion * PRICES.dynamoPerReadRequestUnit,
      ((w.floorWriteUnits + w.historyFloorWriteUnits) * perMillion + floorPagesPerMillion) *
        PRICES.dynamoPerWriteRequestUnit,
    ),
  ];
  // Poller output (a summary line and one EMF document) is per run; the consumer's is per invocation.
  const runsPerMillion = Math.ceil(1e6 / (measuredCatchUp.pagesPerRun * schedule.pageSize));
  const logBytes =
    (pipeline.publish.logBytes / pipeline.publish.runs) * runsPerMillion +
    pipeline.consume.logBytes * perMillion;
  const logs = (logBytes / 2 ** 30) * PRICES.logsPerGbIngested;
  const total = figure(
    'total (logs in measured only)',
    '$/M',
    rows.reduce((sum, row) => sum + row.value, 0) + logs,
    rows.reduce((sum, row) => sum + (row.floor ?? 0), 0),
    1.1,
  );
  const figures = [...rows];
  if (logs > 0) figures.push(figure('CloudWatch Logs ingestion (logs + EMF)', '$/M', logs));
  figures.push(total);
  return {
    id: 'cost',
    title: `Cost per million order versions (${PRICES.region} list prices checked ${PRICES.checked}, arm64 ${LAMBDA_MEMORY_MB.poller}/${LAMBDA_MEMORY_MB.consumer} MB)`,
    floorIs: 'the same prices applied to the request floors of section 2 and the floor times',
    figures,
    formulas: [
      'Cost: poller = pages x t_page(L) x GB x $/GB-s + ceil(1e6 / (pages/run x pageSize)) x $/request;',
      '  consumer = measured handler ms x GB x $/GB-s + invocations x $/request (floor: ceil(n/10) invocations of the',
      "  ceiling run's parallel PutItems); SQS = billed 64 KB chunks of the handlers' and event source's calls;",
      '  DynamoDB = write units from item sizes (section 2, orders and history tables) + cursor writes (1 WRU each,',
      '  floor 1 per page);',
      '  logs = bytes the handlers print (JSON logs + EMF metrics) x $/GB.',
    ],
    details: {
      prices: PRICES,
      memoryMb: LAMBDA_MEMORY_MB,
      perMillionVersions: {
        pollerPages: pagesPerMillion,
        pollerGbSeconds: (pagesPerMillion * measuredCatchUp.pageMs * gbPoller) / 1000,
        consumerInvocations: pipeline.consume.invocations * perMillion,
        consumerGbSeconds: (pipeline.consume.handlerMs * perMillion * gbConsumer) / 1000,
        sqsBilledRequests: pipeline.sqsBilledRequests * perMillion,
        ordersWriteUnits: (w.tableWriteUnits + w.indexWriteUnits) * perMillion,
        historyWriteUnits: w.historyWriteUnits * perMillion,
        cursorWriteUnits: cursorWrites,
        logBytes,
      },
      consumerMsPerInvocation: pipeline.consume.handlerMs / pipeline.consume.invocations,
      ceilingPutGroupMs: ceiling.putGroupMs,
      notes: [
        "Durations are measured against moto, which serves one request at a time: a consumer batch's 10 PutItems run one after another there, in parallel on AWS.",
        'Lambda platform log lines are not counted: the functions use JSON logging with system log level WARN, so START/END/REPORT are not emitted.',
        'SSM GetParameter (standard parameter) has no charge; S3 is used only to quarantine records (none here).',
        "The poller's fixed cost of idle runs (one GET and a lease per tick) is per tick, not per version, and is not included.",
      ],
    },
  };
}

export function endToEndSection(pipeline: PipelineMeasurement, ceiling: CeilingMeasurement): Section {
  const n = pipeline.versions;
  const pipelineMs = pipeline.publish.wallMs + pipeline.consume.wallMs;
  return {
    id: 'endToEnd',
    title: 'End to end through the emulator (poller + consumer handlers in-process, moto, simulator)',
    floorIs:
      'moto doing the same AWS work unprocessed: SendMessageBatch of the same messages to both queues, then Receive 10 / the same conditional PutItems / DeleteMessageBatch on the orders queue',
    figures: [
      figure('time per 1,000 versions', 's', pipelineMs / n, ceiling.wallMs / n),
      figure('  publish phase', 's', pipeline.publish.wallMs / n, ceiling.publishMs / n),
      figure('  consume phase', 's', pipeline.consume.wallMs / n, ceiling.consumeMs / n),
      figure('pipeline throughput', 'versions/s', (n / pipelineMs) * 1000),
      figure('emulator ceiling throughput', 'versions/s', (n / ceiling.wallMs) * 1000),
    ],
    details: {
      versions: n,
      pipeline: {
        publishMs: pipeline.publish.wallMs,
        consumeMs: pipeline.consume.wallMs,
        pollerRuns: pipeline.publish.runs,
        consumerInvocations: pipeline.consume.invocations,
      },
      ceiling,
      notEmulated:
        "The downstream queue is not consumed in either run (a subscriber's work); partner GETs and cursor writes are in the pipeline only.",
    },
  };
}

/**
 * The history's price: the same feed through the pipeline with history on (the default) and off. Its floor is
 * one more conditional write per version (the version's orders table item, written once more).
 */
export function historySection(on: PipelineMeasurement, off: PipelineMeasurement): Section {
  const perMillion = (m: PipelineMeasurement) => 1e6 / m.versions;
  const dynamoWrites = (m: PipelineMeasurement) =>
    (m.writes.tableWriteUnits + m.writes.indexWriteUnits + m.writes.historyWriteUnits) * perMillion(m);
  const historyUnits = on.writes.historyWriteUnits * perMillion(on);
  const floorUnits = on.writes.historyFloorWriteUnits * perMillion(on);
  const rate = (m: PipelineMeasurement) => (m.versions / m.consume.wallMs) * 1000;
  // DynamoDB bills storage by item size plus 100 bytes of overhead per item.
  const storedBytesPerMillion = (on.writes.meanHistoryItemBytes + 100) * 1e6;
  const storagePerMonth = (storedBytesPerMillion / 2 ** 30) * PRICES.dynamoStoragePerGbMonth;
  return {
    id: 'history',
    title: 'Order history: cost per million versions and consumer throughput, history on and off',
    floorIs:
      'one more conditional write per version (its orders table item written once more); off: no history',
    figures: [
      figure(
        'history writes (WRU)',
        '$/M',
        historyUnits * PRICES.dynamoPerWriteRequestUnit,
        floorUnits * PRICES.dynamoPerWriteRequestUnit,
      ),
      figure(
        'DynamoDB writes, history on',
        '$/M',
        dynamoWrites(on) * PRICES.dynamoPerWriteRequestUnit,
        (dynamoWrites(off) + floorUnits) * PRICES.dynamoPerWriteRequestUnit,
      ),
      figure('DynamoDB writes, history off', '$/M', dynamoWrites(off) * PRICES.dynamoPerWriteRequestUnit),
      figure('consumer throughput, history on', 'versions/s', rate(on)),
      figure('consumer throughput, history off', 'versions/s', rate(off)),
      figure('history storage per million versions kept', '$/month', storagePerMonth),
    ],
    formulas: [
      'history WRU = per history PutItem ceil(item size / 1 KB) (a failed condition: the stored item), per million versions;',
      'throughput = versions / the event source drain time (receive, handler, delete) against moto, one request at a time;',
      `storage = (mean history item bytes + 100) x 1e6 / 2^30 GB x $${PRICES.dynamoStoragePerGbMonth}/GB-month.`,
    ],
    details: {
      versions: on.versions,
      historyPutItems: on.writes.historyPutItems,
      historyWriteUnits: on.writes.historyWriteUnits,
      historyFloorWriteUnits: on.writes.historyFloorWriteUnits,
      meanHistoryItemBytes: on.writes.meanHistoryItemBytes,
      meanOrdersItemBytes: on.writes.meanStoredItemBytes,
      consumeWallMs: { on: on.consume.wallMs, off: off.consume.wallMs },
      consumerHandlerMs: { on: on.consume.handlerMs, off: off.consume.handlerMs },
    },
  };
}
