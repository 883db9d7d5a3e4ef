// The ops commands behind the command line (cli.ts, which parses it): AWS clients (AWS, or --aws-endpoint) →
// the stack's resources and feeds → the command's module → a table on stdout, or JSON with --json.
import { randomUUID } from 'node:crypto';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { stringifyJsonExact } from '../../functions/core/model/int64.js';
import { type AwsAt, createAwsClients } from '../aws.js';
import { CommandError, messageOf } from '../cli-args.js';
import {
  EXIT_FAILED,
  EXIT_INTERRUPTED,
  EXIT_OK,
  FEED_COMMANDS,
  type FeedsCommand,
  type OpsIo,
  type ParsedCommand,
  type SharedOptions,
} from './args.js';
import { awsBackfillPorts, type BackfillSummary, runBackfill } from './backfill.js';
import { readBudgets, releaseBudget, releasePlan, renderBudgets } from './budget.js';
import { applyCursorPlan, type CursorAction, planCursorChange, readCursorItem } from './cursor.js';
import { runFeedsCommand } from './feeds.js';
import { formatDuration, queueNameOf } from './format.js';
import { awsHistoryReader, buildHistory, historyEntryOf, renderHistory } from './history.js';
import {
  judgeQuarantined,
  listQuarantined,
  renderQuarantineList,
  renderRef,
  renderRetryPlan,
  retryQuarantined,
} from './quarantine.js';
import {
  planRedrive,
  type RedriveResult,
  redriveWithLoop,
  redriveWithMoveTask,
  selectRedriveQueues,
} from './redrive.js';
import { gatherStatus, renderStatus } from './status.js';
import { discoverFeeds, type OpsTarget, readTarget, resolveFeed } from './target.js';

/** Runs a parsed command other than help and reconcile; resolves with the exit status. */
export async function runCommand(
  parsed: Exclude<ParsedCommand, { command: 'help' | 'reconcile' }>,
  io: OpsIo,
): Promise<number> {
  const aws = createAwsClients(parsed.shared.awsEndpoint, io.env);
  try {
    const target = await readTarget(aws, parsed.shared.stackName);
    return await dispatch(parsed, { aws, target, io, now: io.now ?? Date.now });
  } catch (error) {
    io.stderr(`ops: ${error instanceof CommandError ? error.message : messageOf(error)}\n`);
    return EXIT_FAILED;
  } finally {
    aws.destroy();
  }
}

interface Run {
  aws: AwsAt;
  target: OpsTarget;
  io: OpsIo;
  now: () => number;
}

async function dispatch(parsed: Exclude<ParsedCommand, { command: 'help' | 'reconcile' }>, run: Run) {
  const { shared } = parsed;
  if (isFeedsCommand(parsed)) {
    const output = await runFeedsCommand(parsed, run);
    print(run, shared, output.json, output.text);
    return EXIT_OK;
  }
  // Only the commands that default --feed to the only feed, or need every feed id, scan for them.
  const needsFeeds = FEED_COMMANDS.has(parsed.command) || parsed.command === 'backfill';
  const feeds = needsFeeds ? await discoverFeeds(run.aws, run.target) : [];
  const feedId = FEED_COMMANDS.has(parsed.command) ? resolveFeed(shared.feed, feeds) : undefined;
  switch (parsed.command) {
    case 'status':
      return status(run, shared);
    case 'reset-cursor':
      return changeCursor(run, shared, feedId as string, { kind: 'reset-cursor' });
    case 'replay':
      return changeCursor(run, shared, feedId as string, { kind: 'replay', fromPage: parsed.fromPage });
    case 'clear-auth-backoff':
      return changeCursor(run, shared, feedId as string, { kind: 'clear-auth-backoff' });
    case 'redrive':
      return redrive(run, shared, parsed.queue, parsed.method);
    case 'backfill':
      return backfill(run, parsed, feeds);
    case 'history':
      return history(run, shared, parsed.orderId);
    case 'quarantine list':
      return quarantineList(run, shared);
    case 'quarantine retry':
      return quarantineRetry(run, shared);
    case 'budget':
      return budget(run, shared, parsed.tokenParameter);
    case 'budget release':
      return budgetRelease(run, shared, parsed.tokenParameter);
  }
}

function print(run: Run, shared: SharedOptions, json: unknown, text: string): void {
  // int64 values (ledger amounts, order ids) print exactly in both forms.
  run.io.stdout(shared.json ? `${stringifyJsonExact(json)}\n` : `${text}\n`);
}

/** Without --yes, a changing command prints its plan, says that nothing was `done`, and exits 0. */
function planOnly(run: Run, shared: SharedOptions, json: unknown, plan: string, done: string): number {
  print(run, shared, json, `${plan}\n\nNothing ${done}: add --yes to do it.`);
  return EXIT_OK;
}

function isFeedsCommand(parsed: ParsedCommand): parsed is FeedsCommand {
  return parsed.command.startsWith('feeds ');
}

async function status(run: Run, shared: SharedOptions): Promise<number> {
  const report = await gatherStatus(run.aws, run.target, shared.feed, run.now());
  print(run, shared, report, renderStatus(report));
  return EXIT_OK;
}

async function changeCursor(run: Run, shared: SharedOptions, feedId: string, action: CursorAction) {
  const item = await readCursorItem(run.aws, run.target.cursorTable, feedId);
  const nowMs = run.now();
  const plan = planCursorChange(item, action, { nowMs, force: shared.force });
  if (plan.kind === 'no-op') {
    print(
      run,
      shared,
      { feedId, action: action.kind, applied: false, why: plan.why },
      `Nothing to do: ${plan.why}.`,
    );
    return EXIT_OK;
  }
  if (plan.kind === 'refused') {
    if (shared.json)
      print(run, shared, { feedId, action: action.kind, applied: false, refused: plan.why }, '');
    throw new CommandError(plan.why);
  }
  const planText = [`${action.kind} of feed ${feedId}:`, ...plan.changes.map((change) => `  ${change}`)].join(
    '\n',
  );
  if (!shared.yes) {
    const json = { feedId, action: action.kind, applied: false, changes: plan.changes };
    return planOnly(run, shared, json, planText, 'changed');
  }
  const after = await applyCursorPlan(run.aws, run.target.cursorTable, plan, nowMs);
  print(
    run,
    shared,
    { feedId, action: action.kind, applied: true, changes: plan.changes, cursor: after },
    `${planText}\n\nDone: revision is now ${after.revision}.`,
  );
  return EXIT_OK;
}

async function redrive(
  run: Run,
  shared: SharedOptions,
  queue: string | undefined,
  method: 'move-task' | 'loop',
) {
  const pairs = await planRedrive(run.aws, selectRedriveQueues(run.target.queues, queue));
  const planText = pairs
    .map(
      (pair) =>
        `  ${pair.name}: ~${pair.waiting} message(s) from ${queueNameOf(pair.deadLetterUrl)} back to ${queueNameOf(pair.sourceUrl)}`,
    )
    .join('\n');
  if (!shared.yes) {
    return planOnly(
      run,
      shared,
      { applied: false, method, queues: pairs },
      `redrive (${method}):\n${planText}`,
      'moved',
    );
  }
  const results: RedriveResult[] = [];
  for (const pair of pairs) {
    if (pair.waiting === 0 && method === 'move-task') {
      results.push({ name: pair.name, moved: 0, notMoved: 0, notDeleted: 0, method });
      continue;
    }
    const options = {
      progress: (line: string) => run.io.stderr(`${line}\n`),
      ...(run.io.signal ? { signal: run.io.signal } : {}),
    };
    results.push(
      method === 'loop'
        ? await redriveWithLoop(run.aws, pair, options)
        : await redriveWithMoveTask(run.aws, pair, options),
    );
  }
  const text = results
    .map(
      (result) =>
        `  ${result.name}: ${result.moved} moved` +
        (result.notMoved > 0 ? `, ${result.notMoved} refused by the source queue (left in the DLQ)` : '') +
        (result.notDeleted > 0
          ? `, ${result.notDeleted} not deleted from the DLQ (will be moved again)`
          : ''),
    )
    .join('\n');
  print(run, shared, { applied: true, method, results }, `redrive (${method}):\n${text}`);
  if (results.some((result) => result.notMoved > 0)) return EXIT_FAILED;
  return run.io.signal?.aborted ? EXIT_INTERRUPTED : EXIT_OK;
}

async function backfill(run: Run, parsed: Extract<ParsedCommand, { command: 'backfill' }>, feeds: string[]) {
  const { shared } = parsed;
  const queue = run.target.queues.find(
    (candidate) => candidate.kind === 'subscriber' && candidate.name === parsed.subscriber,
  );
  if (queue === undefined) {
    const names = run.target.queues
      .filter((candidate) => candidate.kind === 'subscriber')
      .map((candidate) => candidate.name);
    throw new CommandError(
      `unknown subscriber "${parsed.subscriber}" (subscribers: ${names.join(', ') || 'none'})`,
    );
  }
  const historyTable = parsed.allVersions ? requireHistoryTable(run.target) : undefined;
  // source.feedId: the feed asked for, else the only feed; orders of several feeds share the table.
  const feedId = shared.feed ?? (feeds.length === 1 ? (feeds[0] as string) : 'backfill');
  const ports = awsBackfillPorts(
    run.aws,
    { ...run.target, historyTable },
    parsed.subscriber,
    new SqsFanoutPublisher(run.aws.sqs, [queue.url]),
  );
  if (!shared.yes) {
    const checkpoint = await ports.readCheckpoint();
    const total = await ports.estimateTotal();
    const resume = checkpoint?.status === 'running' && !parsed.restart;
    const text =
      `backfill of subscriber ${parsed.subscriber} (${queueNameOf(queue.url)}) at ${parsed.rate} message(s)/s:\n` +
      (resume
        ? `  resumes run ${checkpoint.runId} after order ${checkpoint.lastOrderId ?? '(none)'}` +
          `${checkpoint.lastVersion === undefined ? '' : ` version ${checkpoint.lastVersion}`} (${checkpoint.sent} sent so far)`
        : parsed.allVersions
          ? `  sends every one of ~${total ?? '?'} stored version(s) from the order history, each order's versions ascending, from the start`
          : `  sends the latest version of each of ~${total ?? '?'} order(s) from the start`);
    const json = {
      applied: false,
      subscriber: parsed.subscriber,
      allVersions: parsed.allVersions,
      resume,
      checkpoint,
      estimatedOrders: total,
    };
    return planOnly(run, shared, json, text, 'sent');
  }
  const summary: BackfillSummary = await runBackfill(ports, {
    subscriber: parsed.subscriber,
    feedId,
    rate: parsed.rate,
    maxMessages: parsed.maxMessages,
    restart: parsed.restart,
    allVersions: parsed.allVersions,
    ...(run.io.signal ? { signal: run.io.signal } : {}),
    progress: (line) => run.io.stderr(`${line}\n`),
  });
  const text = [
    `backfill of ${summary.subscriber}: ${summary.sent} sent in ${elapsed(summary.elapsedMs)} (run ${summary.runId}${summary.resumed ? ', resumed' : ''}; ${summary.sentTotal} in all)`,
    summary.finished
      ? `finished: every stored ${parsed.allVersions ? 'version' : 'order'} was sent`
      : `stopped (${summary.stoppedBy ?? 'unknown'}): run the same command again to go on`,
    ...(summary.skipped > 0
      ? [`skipped ${summary.skipped} unreadable item(s): ${summary.skippedIds.join(', ')}`]
      : []),
    `messages carry correlationId ${summary.correlationId}`,
  ].join('\n');
  print(run, shared, summary, text);
  return summary.stoppedBy === 'interrupt' ? EXIT_INTERRUPTED : EXIT_OK;
}

/** The stack's order history table; a CommandError when the stack has none (history is off). */
function requireHistoryTable(target: OpsTarget): string {
  if (target.historyTable === undefined) {
    throw new CommandError(
      `history is off for stack ${target.stackName} (it has no output HistoryTableName): no order history to read`,
    );
  }
  return target.historyTable;
}

async function history(run: Run, shared: SharedOptions, orderId: string): Promise<number> {
  const items = await awsHistoryReader(run.aws, requireHistoryTable(run.target))(orderId);
  if (items.length === 0) {
    throw new CommandError(
      `order ${orderId} has no stored history (unknown order, or its versions expired or predate the history)`,
    );
  }
  const report = buildHistory(orderId, items.map(historyEntryOf));
  print(run, shared, report, renderHistory(report));
  return EXIT_OK;
}

async function quarantineList(run: Run, shared: SharedOptions) {
  const records = await listQuarantined(run.aws, run.target.quarantineBucket, shared.feed);
  print(run, shared, records, renderQuarantineList(records));
  return EXIT_OK;
}

async function quarantineRetry(run: Run, shared: SharedOptions) {
  const records = await listQuarantined(run.aws, run.target.quarantineBucket, shared.feed);
  const runId = randomUUID();
  const verdicts = judgeQuarantined(records, runId);
  if (!shared.yes) {
    const json = {
      applied: false,
      verdicts: verdicts.flatMap(({ key, records }) =>
        records.map(({ index, message, reason }) => ({ key, index, passes: message !== undefined, reason })),
      ),
    };
    return planOnly(run, shared, json, renderRetryPlan(verdicts), 'published');
  }
  const publisher = new SqsFanoutPublisher(
    run.aws.sqs,
    run.target.queues.map((queue) => queue.url),
  );
  const result = await retryQuarantined(
    run.aws,
    run.target.quarantineBucket,
    verdicts,
    publisher,
    runId,
    (line) => run.io.stderr(`${line}\n`),
  );
  print(
    run,
    shared,
    { applied: true, ...result },
    [
      `quarantine retry ${runId}: ${result.published.length} record(s) published to every queue and moved to retried/; ${result.stillFailing.length} still fail`,
      ...result.stillFailing.map((entry) => `  ${renderRef(entry)}: ${entry.reason}`),
    ].join('\n'),
  );
  return EXIT_OK;
}

async function budget(run: Run, shared: SharedOptions, tokenParameter: string | undefined) {
  const nowMs = run.now();
  const budgets = (await readBudgets(run.aws, run.target.cursorTable, nowMs)).filter(
    (each) => tokenParameter === undefined || each.tokenParameter === tokenParameter,
  );
  print(run, shared, budgets, renderBudgets(budgets, nowMs));
  return EXIT_OK;
}

async function budgetRelease(run: Run, shared: SharedOptions, tokenParameter: string) {
  const nowMs = run.now();
  const budgets = await readBudgets(run.aws, run.target.cursorTable, nowMs);
  const read = budgets.find((each) => each.tokenParameter === tokenParameter);
  if (read === undefined) {
    const names = budgets.map((each) => each.tokenParameter).join(', ') || 'none';
    throw new CommandError(`token parameter ${tokenParameter} has no request budget (budgets: ${names})`);
  }
  const plan = releasePlan(read, nowMs).join('\n');
  if (!shared.yes) return planOnly(run, shared, { applied: false, budget: read }, plan, 'released');
  await releaseBudget(run.aws, run.target.cursorTable, read);
  print(run, shared, { applied: true, budget: read }, `${plan}\n\nDone: the budget is released.`);
  return EXIT_OK;
}

/** Seconds with a decimal under a minute (a small backfill takes well under one), else formatDuration. */
function elapsed(ms: number): string {
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)}s` : formatDuration(ms);
}
