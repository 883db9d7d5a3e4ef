// What local mode prints: the banner, a progress line every ~2 s and the end-of-run summary. Formatting
// only; nothing here talks to AWS.
import { formatDuration } from '../ops/format.js';
import type { ProgressSnapshot } from './local-pipeline.js';
import type { LocalSummary, ReadyInfo } from './runtime.js';

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The counters, then, for each feed whose last run failed, what it waits for (one line each). */
export function formatProgress(snapshot: ProgressSnapshot): string {
  const c = snapshot.counters;
  const elapsed = `${Math.round(snapshot.elapsedMs / 1000)}s`.padStart(4);
  const lag = snapshot.lagSeconds === undefined ? '-' : `${snapshot.lagSeconds}s`;
  const lines = [
    `[${elapsed}] polls ${c.polls} | pages ${c.pages} | published ${c.versionsPublished} | ` +
      `applied ${c.applied} | stale ${c.stale} | failed ${c.failedMessages} | queue ${snapshot.queueDepth} | ` +
      `lag ${lag}${snapshot.lastPoll ? ` (${snapshot.lastPoll})` : ''}`,
  ];
  const feeds = snapshot.waiting.length > 1;
  for (const waiting of snapshot.waiting) {
    const next =
      waiting.nextRunInMs > 0 ? `next run in ${formatDuration(waiting.nextRunInMs)}` : 'running again';
    const giveUp =
      waiting.givesUpInMs === undefined
        ? 'no give-up (--watch)'
        : `gives up in ${formatDuration(waiting.givesUpInMs)} unless a page is committed or a version applied`;
    // A run that threw failed on this side (the emulator, most often), not at the partner.
    const what = waiting.failure.startsWith('failed') ? 'waiting' : 'waiting for the partner';
    lines.push(
      `       ${what}${feeds ? ` (feed ${waiting.feedId})` : ''}: ${waiting.failedRuns} failed run(s), the last ${waiting.failure}; ${next}; ${giveUp}`,
    );
  }
  return lines.join('\n');
}

export function formatBanner(ready: ReadyInfo): string[] {
  const { deployment, stack, tuning } = ready;
  const source = ready.simulator
    ? ready.simulator.scenario
      ? `built-in simulator, scenario ${ready.simulator.scenario}`
      : `built-in simulator, generated feed of ${ready.simulator.orders} orders (seed ${ready.simulator.seed})`
    : 'given partner API';
  const lines = [
    `AWS endpoint   ${ready.awsEndpoint} (${ready.emulatorStarted ? 'moto started for this run' : 'given'}, ${deployment.region})`,
    `stack          ${deployment.stackName}: ${stack.deployed ? `deployed with cdk deploy in ${seconds(stack.deployMs)}` : 'already deployed, reused'}`,
    `partner API    ${ready.apiUrl} (${source})`,
    ...(deployment.pollers.length > 1
      ? [
          `feeds          ${deployment.pollers
            .map(({ feedId, function: fn }) => `${feedId} (${fn.environment.VENDOR_IDS ?? 'all vendors'})`)
            .join(', ')}: one poller each, side by side`,
        ]
      : []),
    `schedule       ${deployment.schedule.expression} deployed; here: next run when the previous ended and the queue < ${tuning.shallowQueueDepth}, ${tuning.idlePollIntervalMs / 1000} s after a run with nothing new; ≤ ${tuning.maxPagesPerRun ?? 'all'} page(s) per run; ${ready.giveUpAfterMs === undefined ? 'a failing partner is waited for until Ctrl-C' : `gives up after ${formatDuration(ready.giveUpAfterMs)} without progress`}`,
    `event source   batch ${deployment.eventSource.batchSize}${deployment.eventSource.reportBatchItemFailures ? ', ReportBatchItemFailures' : ''}, ${tuning.consumerConcurrency} at once; failed records retried after ${tuning.retryDelaySeconds} s, dead-lettered after ${deployment.queue.maxReceiveCount ?? '∞'} receives`,
  ];
  if (ready.overriddenBaseUrl !== undefined) {
    lines.push(
      `note           stack deployed for ${ready.overriddenBaseUrl}: PARTNER_BASE_URL overridden in this process`,
    );
  }
  if (ready.resetData)
    lines.push('note           data reset: tables emptied, queues purged, quarantine deleted');
  else if (!stack.deployed) {
    lines.push(
      'note           the reused stack keeps its earlier runs’ data: this run resumes from the stored cursor, and the end-of-run check counts their orders and sales too (--reset-data starts empty)',
    );
  }
  return lines;
}

/** Where the history hint points a run whose own emulator stopped with it: one that outlives the run. */
export const KEPT_EMULATOR = 'http://localhost:5000';

/**
 * `emulatorKept`: the run used an emulator given with --aws-endpoint, which outlives it; without one, local mode's
 * own emulator stopped with the run, so a command against its data needs a run against a kept emulator first:
 * `rerun`, this run's own command against KEPT_EMULATOR (its scenario and data flags, so the order the hint
 * names is stored again). `dataReset`: the run emptied the tables first (--reset-data).
 */
export function formatSummary(
  summary: LocalSummary,
  emulatorKept = true,
  dataReset = false,
  rerun = `npm start -- --aws-endpoint ${KEPT_EMULATOR}`,
): string[] {
  const c = summary.counters;
  const headline =
    summary.outcome === 'drained'
      ? `Drained in ${seconds(summary.elapsedMs)}`
      : summary.outcome === 'auth-failed' || summary.outcome === 'feed-stopped'
        ? `Stopped: ${summary.detail ?? summary.outcome}`
        : summary.outcome === 'gave-up'
          ? `Gave up: ${summary.detail ?? 'no progress'}`
          : summary.outcome === 'error'
            ? `Failed after ${seconds(summary.elapsedMs)}: ${summary.detail ?? 'error'}`
            : `Interrupted after ${seconds(summary.elapsedMs)}`;
  const deploy = summary.deploy?.deployed ? ` (deploy ${seconds(summary.deploy.ms)} included)` : '';
  const lines = [`${headline}${summary.outcome === 'drained' ? deploy : ''}.`];
  const statuses = Object.entries(summary.ordersByStatus);
  lines.push(
    `Orders: ${summary.orders}${statuses.length ? ` (${statuses.map(([status, n]) => `${status} ${n}`).join(', ')})` : ''}`,
  );
  if (summary.history) {
    const { entries, exampleOrderId } = summary.history;
    const lookUp = `npm run ops -- history ${exampleOrderId} --aws-endpoint ${summary.awsEndpoint}`;
    const hint =
      exampleOrderId === undefined
        ? ''
        : emulatorKept
          ? `; look at one: ${lookUp}`
          : `; to look one up, run against an emulator that outlives the run (python3 tools/local/moto_serialized.py -H 127.0.0.1 -p 5000, then ${rerun}) and: npm run ops -- history ${exampleOrderId} --aws-endpoint ${KEPT_EMULATOR}`;
    lines.push(`History: ${entries} order versions kept${hint}`);
  }
  if (summary.sales.length === 0) lines.push('Sales by vendor (ledger): none');
  else {
    lines.push('Sales by vendor (ledger, amounts in minor units):');
    const width = Math.max(...summary.sales.map((sale) => sale.vendorId.length));
    for (const sale of summary.sales) {
      lines.push(
        `  ${sale.vendorId.padEnd(width)}  ${sale.currency}  ${String(sale.count).padStart(5)} sales  ${String(sale.amount).padStart(10)}`,
      );
    }
  }
  if (summary.quarantined.length === 0) lines.push('Quarantined: none');
  else {
    lines.push(`Quarantined: ${summary.quarantined.length} (s3://${summary.quarantineBucket}/)`);
    for (const key of summary.quarantined.slice(0, 10)) lines.push(`  ${key}`);
    if (summary.quarantined.length > 10) lines.push(`  … ${summary.quarantined.length - 10} more`);
  }
  lines.push(
    `Dead-lettered: ${summary.deadLettered}${summary.queueDepth > 0 ? ` (still queued: ${summary.queueDepth})` : ''}`,
  );
  lines.push(
    `Counters: polls ${c.polls}, pages ${c.pages}, versions published ${c.versionsPublished}, applied ${c.applied}, ` +
      `stale ${c.stale}, rejected ${c.rejected}, failed messages ${c.failedMessages}, partner retries ${c.partnerRetries}, ` +
      `rate-limit waits ${c.rateLimitWaits}, cursor recoveries ${c.cursorRecoveries}`,
  );
  if (summary.matchesExpected) {
    const ok = summary.matchesExpected.orders && summary.matchesExpected.sales;
    lines.push(
      ok
        ? 'Check: table and ledger equal the simulator’s expected state.'
        : `Check: MISMATCH with the simulator’s expected state (orders ${summary.matchesExpected.orders ? 'ok' : 'differ'}, sales ${summary.matchesExpected.sales ? 'ok' : 'differ'}).`,
    );
    // A reused stack without --reset-data still holds what earlier runs stored: the likely cause.
    if (!ok && summary.deploy?.deployed === false && !dataReset) {
      lines.push(
        `  The emulator at ${summary.awsEndpoint} kept earlier runs’ orders and sales on this stack, which the check counts too: run again with --reset-data (or on a fresh emulator) to check this run alone.`,
      );
    }
  }
  return lines;
}

/**
 * How to read each `--subscriber` queue (name → URL), which nothing local drains: an AWS CLI command against
 * a kept emulator; without one, the queue went with the run's own emulator.
 */
export function formatSubscribers(
  queues: Readonly<Record<string, string>>,
  summary: Pick<LocalSummary, 'awsEndpoint' | 'region'>,
  emulatorKept: boolean,
): string[] {
  return Object.entries(queues).map(([name, url]) =>
    emulatorKept
      ? `Subscriber ${name}: nothing here drains its queue, which keeps every published message; read them (they stay queued) with:\n` +
        `  AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing aws sqs receive-message --endpoint-url ${summary.awsEndpoint} --region ${summary.region} --queue-url ${url} --max-number-of-messages 10 --visibility-timeout 0 --message-attribute-names All`
      : `Subscriber ${name}: its messages went with this run’s emulator; to keep them, run against one that outlives the run (python3 tools/local/moto_serialized.py -H 127.0.0.1 -p 5000, then npm start -- --aws-endpoint http://localhost:5000 --subscriber ${name}), which prints the command that reads them`,
  );
}

/**
 * After a run worth resuming: where its data is (an emulator this run started and left running, with its pid
 * and how to stop it; or the one given) and the command that resumes from the stored cursor.
 */
export function formatResume(
  summary: Pick<LocalSummary, 'outcome' | 'awsEndpoint' | 'keptEmulator'>,
  command: string,
  { tokenFromEnvironment }: { tokenFromEnvironment: boolean },
): string[] {
  const kept = summary.keptEmulator;
  const lines = [
    kept
      ? `Data kept: the emulator this run started still runs at ${kept.endpoint} (pid ${kept.pid}); stop it, when done, with: kill ${kept.pid}`
      : `Data kept in the emulator at ${summary.awsEndpoint}.`,
  ];
  const when =
    summary.outcome === 'auth-failed'
      ? 'With a valid token, resume'
      : summary.outcome === 'feed-stopped'
        ? 'After the fix tools/RUNBOOK.md names, resume'
        : 'Resume';
  const token = tokenFromEnvironment ? ' (with PARTNER_API_TOKEN set, as for this run)' : '';
  lines.push(`${when} from the stored cursor${token}:`, `  ${command}`);
  return lines;
}
