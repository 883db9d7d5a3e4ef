// Watches the AWS calls of the local-mode child through the proxy's hooks, keeps per-run figures
// (PutItem outcomes, lease acquisitions, pages published and committed) and fires the run's kill point
// (kill-plan.ts) at the exact call: the proxy holds that call while the child is SIGKILLed, and drops
// everything the child still sends or is owed until it is gone.
//
// How the points are recognised (only the orders queue, orders table and cursor table of the stack):
//   a page is published   SendMessageBatch to the orders queue answered 200 (counted per page)
//   a page is committed   UpdateItem on the cursor table whose UpdateExpression sets or removes pageId
//                         (acquire, release and the 401 record never touch pageId)
//   a lease is acquired   UpdateItem on the cursor table conditioned on attribute_not_exists(leaseOwner)
//   a consumer batch      ReceiveMessage on the orders queue with messages: the orderId attributes of its
//                         messages; a PutItem on the orders table belongs to the open batch holding its
//                         orderId that has not written it yet
import type { AwsCall, ProxyHooks, RequestVerdict, ResponseVerdict } from '../aws-proxy.js';
import { describeKillPoint, type KillKind, type KillPoint } from './kill-plan.js';

export interface StackNames {
  ordersTable: string;
  cursorTable: string;
  /** Name (last URL segment) of the orders queue. */
  ordersQueue: string;
  ordersQueueUrl: string;
  deadLetterQueueUrl: string;
  quarantineBucket: string;
}

export interface KillRecord {
  run: number;
  kind: KillKind;
  point: KillPoint;
  planned: string;
  triggered: boolean;
  /** Milliseconds from the child's spawn to the kill. */
  atMs?: number;
  /** What was happening at the kill (page, batch, orders written). */
  detail?: string;
}

/** What happened to the planted poison message, as seen at the proxy. */
export interface PoisonTrace {
  /** Receives by local mode: run and the receive count SQS reported. */
  receives: Array<{ run: number; receiveCount: number }>;
  /** Deletes of one of its receipt handles (a poison acknowledged as processed: must stay empty). */
  deletes: Array<{ run: number }>;
}

export interface RunStats {
  run: number;
  /** PutItem on the orders table answered 200 by the emulator (a version applied). */
  putApplied: number;
  /** PutItem answered 400 ConditionalCheckFailedException (an equal or older version: stale). */
  putStale: number;
  putOtherErrors: number;
  versionsSent: number;
  pagesCommitted: number;
  /** Lease acquisitions refused (lease held by someone else) before this run's first success. */
  leaseRefusedBeforeFirst: number;
  leaseRefused: number;
  /** Milliseconds from spawn to the first data-plane call on the stack's tables or orders queue. */
  firstPipelineCallMs?: number;
  /** Milliseconds from spawn to the first successful lease acquisition. */
  firstLeaseMs?: number;
  /** Milliseconds from spawn to the first refused acquisition (a lease left by a killed run). */
  firstLeaseRefusalMs?: number;
  /**
   * Milliseconds from spawn until this run removed the lease it was refused (the holder was dead),
   * before its first acquisition: how long a killed run's lease blocked the restart.
   */
  deadLeaseReleasedMs?: number;
}

interface OpenBatch {
  orders: Set<number>;
  written: Set<number>;
  receivedAt: number;
}

export class KillSwitch {
  private run = 0;
  private runStartedAt = 0;
  private point: KillPoint | undefined;
  private killChild: (() => Promise<void>) | undefined;
  private killing = false;
  private timer: NodeJS.Timeout | undefined;
  private pagesDone = 0;
  private sendsThisPage = 0;
  private batches: OpenBatch[] = [];
  private record: KillRecord | undefined;
  readonly stats = new Map<number, RunStats>();
  readonly poison: PoisonTrace = { receives: [], deletes: [] };
  private readonly poisonReceipts = new Set<string>();

  constructor(private readonly names: () => Promise<StackNames | undefined>) {}

  /** A new child process: its kill point (none for the final run) and how to kill it. */
  startRun(run: number, point: KillPoint | undefined, kill: () => Promise<void>): void {
    this.run = run;
    this.runStartedAt = Date.now();
    this.point = point;
    this.killChild = kill;
    this.killing = false;
    this.pagesDone = 0;
    this.sendsThisPage = 0;
    this.batches = [];
    this.record = point
      ? { run, kind: point.kind, point, planned: describeKillPoint(point), triggered: false }
      : undefined;
    this.stats.set(run, {
      run,
      putApplied: 0,
      putStale: 0,
      putOtherErrors: 0,
      versionsSent: 0,
      pagesCommitted: 0,
      leaseRefusedBeforeFirst: 0,
      leaseRefused: 0,
    });
  }

  /** The child is gone (killed or exited): returns what became of its kill point. */
  endRun(): KillRecord | undefined {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.killing = true;
    return this.record;
  }

  hooks(): ProxyHooks {
    return {
      onRequest: (call) => this.onRequest(call),
      onResponse: (call) => this.onResponse(call),
      onSettled: (call) => {
        void this.onSettled(call);
      },
    };
  }

  private current(call: AwsCall): boolean {
    return call.run === this.run && !this.killing;
  }

  private async fire(detail: string): Promise<void> {
    if (this.killing || !this.record || !this.killChild) return;
    this.killing = true;
    clearTimeout(this.timer);
    this.record.triggered = true;
    this.record.atMs = Date.now() - this.runStartedAt;
    this.record.detail = detail;
    await this.killChild();
  }

  private async onRequest(call: AwsCall): Promise<RequestVerdict> {
    if (!this.current(call)) return call.run === this.run && this.killing ? 'drop' : 'forward';
    const names = await this.pipelineNames(call);
    if (!names) return 'forward';
    this.noteActivity(call, names);
    const point = this.point;
    if (
      point?.kind === 'publish-commit' &&
      point.at === 'before-commit' &&
      isCommit(call, names) &&
      this.sendsThisPage > 0 &&
      this.pagesDone + 1 === point.page
    ) {
      await this.fire(
        `page ${point.page} of this process published (${this.sendsThisPage} SendMessageBatch answered); ` +
          'its cursor commit (UpdateItem) held and never forwarded',
      );
      return 'drop';
    }
    return 'forward';
  }

  private async onResponse(call: AwsCall): Promise<ResponseVerdict> {
    if (!this.current(call)) return call.run === this.run ? 'drop' : 'deliver';
    const names = await this.pipelineNames(call);
    if (!names) return 'deliver';
    const point = this.point;
    if (call.operation === 'SendMessageBatch' && call.queue === names.ordersQueue && call.status === 200) {
      this.sendsThisPage += 1;
      if (
        point?.kind === 'publish-commit' &&
        point.at === 'after-send' &&
        this.pagesDone + 1 === point.page &&
        this.sendsThisPage === point.send
      ) {
        await this.fire(
          `page ${point.page} of this process: SendMessageBatch #${point.send} accepted by the emulator, ` +
            'its answer held; cursor not committed',
        );
        return 'drop';
      }
    }
    if (isCommit(call, names)) {
      if (call.status === 200 && this.sendsThisPage > 0) this.pagesDone += 1;
      this.sendsThisPage = 0;
    }
    if (call.operation === 'ReceiveMessage' && call.queue === names.ordersQueue) {
      this.openBatch(call);
      this.tracePoisonReceive(call);
    }
    if (
      call.operation === 'PutItem' &&
      call.table === names.ordersTable &&
      point?.kind === 'consumer-mid-batch'
    ) {
      const orderId = putOrderId(call);
      const batch = orderId === undefined ? undefined : this.batchWriting(orderId);
      if (orderId !== undefined && batch) {
        batch.written.add(orderId);
        if (batch.written.size === point.put && batch.orders.size > point.put) {
          const outcome = call.status === 200 ? 'applied' : (call.errorType ?? String(call.status));
          await this.fire(
            `consumer batch of ${batch.orders.size} orders: PutItem #${point.put} (order ${orderId}, ${outcome}) ` +
              `answered by the emulator and held; ${batch.orders.size - point.put} orders of the batch unwritten, ` +
              'no message deleted',
          );
          return 'drop';
        }
      }
    }
    return 'deliver';
  }

  private async onSettled(call: AwsCall): Promise<void> {
    const names = await this.pipelineNames(call);
    const stats = this.stats.get(call.run);
    if (!names || !stats) return;
    if (call.operation === 'PutItem' && call.table === names.ordersTable && call.forwarded) {
      if (call.status === 200) stats.putApplied += 1;
      else if (call.errorType === 'ConditionalCheckFailedException') stats.putStale += 1;
      else stats.putOtherErrors += 1;
    }
    if (call.operation === 'SendMessageBatch' && call.queue === names.ordersQueue && call.status === 200) {
      const entries = call.body?.Entries;
      stats.versionsSent += Array.isArray(entries) ? entries.length : 0;
    }
    if (isCommit(call, names) && call.status === 200) stats.pagesCommitted += 1;
    if (call.queue === names.ordersQueue && /^DeleteMessage/.test(call.operation) && call.status === 200) {
      const entries = Array.isArray(call.body?.Entries)
        ? (call.body.Entries as Array<Record<string, unknown>>)
        : [call.body];
      for (const entry of entries) {
        if (typeof entry?.ReceiptHandle === 'string' && this.poisonReceipts.has(entry.ReceiptHandle)) {
          this.poison.deletes.push({ run: call.run });
        }
      }
    }
    if (isAcquire(call, names)) {
      if (call.status === 200) {
        stats.firstLeaseMs ??= call.receivedAt - this.startOf(call.run);
      } else if (call.errorType === 'ConditionalCheckFailedException') {
        stats.leaseRefused += 1;
        if (stats.firstLeaseMs === undefined) stats.leaseRefusedBeforeFirst += 1;
        stats.firstLeaseRefusalMs ??= call.receivedAt - this.startOf(call.run);
      }
    }
    if (
      isLeaseRemoval(call, names) &&
      call.status === 200 &&
      stats.firstLeaseMs === undefined &&
      stats.firstLeaseRefusalMs !== undefined
    ) {
      stats.deadLeaseReleasedMs ??= call.receivedAt - this.startOf(call.run);
    }
  }

  private startOf(run: number): number {
    return run === this.run ? this.runStartedAt : 0;
  }

  /** The stack's names, for DynamoDB and SQS calls only (the rest is deploy and bookkeeping). */
  private async pipelineNames(call: AwsCall): Promise<StackNames | undefined> {
    if (call.service !== 'dynamodb' && call.service !== 'sqs') return undefined;
    return this.names();
  }

  private noteActivity(call: AwsCall, names: StackNames): void {
    const stats = this.stats.get(this.run);
    if (!stats || stats.firstPipelineCallMs !== undefined) return;
    // Data-plane calls only: local mode's setup also reads the queue's attributes (readDeployment),
    // before it has disabled moto's own copy of the event source mapping.
    const pipeline =
      ((call.table === names.ordersTable || call.table === names.cursorTable) &&
        /^(PutItem|UpdateItem|GetItem)$/.test(call.operation)) ||
      (call.queue === names.ordersQueue && /^(ReceiveMessage|SendMessageBatch)$/.test(call.operation));
    if (!pipeline) return;
    stats.firstPipelineCallMs = Date.now() - this.runStartedAt;
    const point = this.point;
    if (point?.kind === 'timer') {
      const run = this.run;
      this.timer = setTimeout(() => {
        if (this.run !== run) return;
        void this.fire(
          `${(point.delayMs / 1000).toFixed(1)} s after the first pipeline call; ` +
            `${this.pagesDone} page(s) committed by this process, ${this.sendsThisPage} SendMessageBatch of the next answered`,
        );
      }, point.delayMs);
    }
  }

  private openBatch(call: AwsCall): void {
    const messages = call.response?.Messages;
    if (!Array.isArray(messages) || messages.length === 0) return;
    const orders = new Set<number>();
    for (const message of messages as Array<Record<string, unknown>>) {
      const attributes = message.MessageAttributes as Record<string, { StringValue?: string }> | undefined;
      const id = Number(attributes?.orderId?.StringValue);
      if (Number.isSafeInteger(id)) orders.add(id);
    }
    if (orders.size === 0) return;
    this.batches.push({ orders, written: new Set(), receivedAt: Date.now() });
    // Batches whose process died or that finished are forgotten after a while.
    const horizon = Date.now() - 60_000;
    this.batches = this.batches.filter((batch) => batch.receivedAt > horizon);
  }

  private tracePoisonReceive(call: AwsCall): void {
    const messages = call.response?.Messages;
    if (!Array.isArray(messages)) return;
    for (const message of messages as Array<Record<string, unknown>>) {
      const attributes = message.MessageAttributes as Record<string, unknown> | undefined;
      if (attributes?.chaosPoison === undefined) continue;
      const system = message.Attributes as Record<string, string> | undefined;
      this.poison.receives.push({
        run: call.run,
        receiveCount: Number(system?.ApproximateReceiveCount ?? Number.NaN),
      });
      if (typeof message.ReceiptHandle === 'string') this.poisonReceipts.add(message.ReceiptHandle);
    }
  }

  private batchWriting(orderId: number): OpenBatch | undefined {
    return this.batches.find((batch) => batch.orders.has(orderId) && !batch.written.has(orderId));
  }
}

function isCommit(call: AwsCall, names: StackNames): boolean {
  if (call.operation !== 'UpdateItem' || call.table !== names.cursorTable) return false;
  const expression = call.body?.UpdateExpression;
  return typeof expression === 'string' && /\bpageId\b/.test(expression);
}

function isAcquire(call: AwsCall, names: StackNames): boolean {
  if (call.operation !== 'UpdateItem' || call.table !== names.cursorTable) return false;
  const condition = call.body?.ConditionExpression;
  return typeof condition === 'string' && condition.includes('attribute_not_exists(leaseOwner)');
}

/** Release of a lease: by its owner at the end of a run, or by a restart when the owner is dead. */
function isLeaseRemoval(call: AwsCall, names: StackNames): boolean {
  if (call.operation !== 'UpdateItem' || call.table !== names.cursorTable) return false;
  const expression = call.body?.UpdateExpression;
  return typeof expression === 'string' && /^REMOVE leaseOwner\b/.test(expression.trim());
}

function putOrderId(call: AwsCall): number | undefined {
  const item = call.body?.Item as Record<string, { N?: string }> | undefined;
  const id = Number(item?.orderId?.N);
  return Number.isSafeInteger(id) ? id : undefined;
}
