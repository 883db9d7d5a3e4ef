// A token's request budget as an item of the cursor table, `budget#<token parameter name>` (no feed id holds
// "#"): every poller already writes that table with UpdateItem, all the budget needs, so no new table or grant.
// The 429 counts live in a second item, `budget#<name>#429s`, so the item every request writes stays one WCU.
// Every operation has its own short deadline (an abort signal on each call, the SDK's retries inside it): a
// slow store delays a request by at most that much, then the request goes unpaced and the error is reported.
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import {
  type BudgetState,
  type BudgetStore,
  intervalOf,
  type Reservation,
} from '../ingest/request-budget.js';

export const budgetItemKey = (tokenParameterName: string) => `budget#${tokenParameterName}`;
export const budgetThrottlesKey = (key: string) => `${key}#429s`;
const HOUR_MS = 3_600_000;
const minuteAttribute = (ms: number) => `m${Math.floor(ms / 60_000)}`;

const STATE_FIELDS =
  'nextSlotAt rate intervalMs holdUntil adjustedAt taken takenAtAdjust slotAtAdjust step'.split(' ');
/** The deadline of one budget operation (all its writes), ms: DynamoDB answers in milliseconds. */
export const BUDGET_STORE_TIMEOUT_MS = 1_000;

// An item written before slotAtAdjust existed counts its window by the clock alone (from adjustedAt).
const stateOf = (item: Record<string, unknown>) =>
  Object.fromEntries(
    STATE_FIELDS.map((name) => {
      const value = item[name] ?? (name === 'slotAtAdjust' ? item.adjustedAt : undefined);
      return [name, typeof value === 'number' ? value : 0];
    }),
  ) as unknown as BudgetState;

export class DynamoRequestBudgetStore implements BudgetStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly timeoutMs = BUDGET_STORE_TIMEOUT_MS,
  ) {}

  async reserve(
    key: string,
    nowMs: number,
    count: number,
    slackMs: number,
    initial: BudgetState,
    limited = true,
  ): Promise<Reservation> {
    const values = { ':now': nowMs, ':floor': nowMs - slackMs, ':count': count, ':zero': 0 };
    const signal = this.deadline();
    const busy = () =>
      this.update(
        signal,
        key,
        'SET nextSlotAt = nextSlotAt + intervalMs ADD taken :count',
        'intervalMs > :zero AND nextSlotAt >= :floor',
        values,
      ).then((state) => state && { slotAt: state.nextSlotAt - state.intervalMs, state });
    const idle = () =>
      this.update(
        signal,
        key,
        'SET nextSlotAt = intervalMs + :now ADD taken :count',
        'intervalMs = :zero OR nextSlotAt < :floor',
        values,
      ).then((state) => state && { slotAt: nowMs, state });
    const created = () =>
      this.update(
        signal,
        key,
        `SET ${STATE_FIELDS.filter((name) => name !== 'taken')
          .map((name) => `${name} = :${name}`)
          .join(', ')} ADD taken :count`,
        'attribute_not_exists(nextSlotAt)',
        {
          ...values,
          ...Object.fromEntries(
            Object.entries({ ...initial, nextSlotAt: nowMs + initial.intervalMs }).map(([name, value]) => [
              `:${name}`,
              value,
            ]),
          ),
        },
      ).then((state) => state && { slotAt: nowMs, state });
    // Usually one write, the form the caller expects first (`limited`: the rate it last saw was not 0).
    // A write whose condition fails (another feed moved the item, or it is missing) tries the next form.
    const forms = limited ? [busy, idle, created] : [idle, busy, created];
    for (let attempt = 0; attempt < 2; attempt += 1) {
      for (const form of forms) {
        const reservation = await form();
        if (reservation) return reservation;
      }
    }
    throw new Error(`request budget ${key}: no reservation after 6 contended writes`);
  }

  async hold(key: string, nowMs: number, until: number, rate: number, step: number): Promise<void> {
    const signal = this.deadline();
    const values = {
      ':until': until,
      ':now': nowMs,
      ':zero': 0,
      ':rate': rate,
      ':interval': intervalOf(rate),
      ':step': step,
    };
    // The window the used rate is counted over starts at the hold's end (a hold sends nothing).
    const hold = 'SET holdUntil = :until, adjustedAt = :until, takenAtAdjust = taken';
    const decrease = 'rate = :rate, intervalMs = :interval, step = :step';
    const moved = 'nextSlotAt = :until, slotAtAdjust = :until';
    const kept = 'slotAtAdjust = nextSlotAt';
    // No hold running: this 429 starts one and cuts the rate (unless a feed that saw a newer state cut it
    // lower already); a hold running: a later Retry-After extends it. Either way the slots start after the
    // hold, unless some are booked past it already (the later of the two: no slot is given twice). DynamoDB
    // has no max(), so a condition picks the form.
    const cut = 'holdUntil < :now AND (rate = :zero OR rate > :rate)';
    const forms: Array<[string, string]> = [
      [`${hold}, ${decrease}, ${moved}`, `${cut} AND nextSlotAt < :until`],
      [`${hold}, ${decrease}, ${kept}`, `${cut} AND nextSlotAt >= :until`],
      [`${hold}, ${moved}`, 'holdUntil < :until AND nextSlotAt < :until'],
      [`${hold}, ${kept}`, 'holdUntil < :until'],
    ];
    for (const [expression, condition] of forms) {
      if (await this.update(signal, key, expression, condition, values)) break;
    }
    await this.countThrottle(signal, key, nowMs);
  }

  async adjust(key: string, nowMs: number, rate: number, seenAdjustedAt: number): Promise<void> {
    await this.update(
      this.deadline(),
      key,
      'SET rate = :rate, intervalMs = :interval, adjustedAt = :now, takenAtAdjust = taken, slotAtAdjust = nextSlotAt',
      'adjustedAt = :seen AND holdUntil <= :now',
      { ':rate': rate, ':interval': intervalOf(rate), ':now': nowMs, ':seen': seenAdjustedAt },
    );
  }

  /** One count per minute (`m<minute>`); minutes older than an hour are removed when seen. */
  private async countThrottle(signal: AbortSignal, key: string, nowMs: number): Promise<void> {
    const output = await this.send(
      signal,
      key,
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: marshall({ feedId: budgetThrottlesKey(key) }),
        UpdateExpression: 'ADD #minute :one',
        ExpressionAttributeNames: { '#minute': minuteAttribute(nowMs) },
        ExpressionAttributeValues: marshall({ ':one': 1 }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    const old = Object.keys(output.Attributes ?? {}).filter(
      (name) => /^m\d+$/.test(name) && Number(name.slice(1)) * 60_000 <= nowMs - HOUR_MS,
    );
    if (old.length === 0) return;
    await this.send(
      signal,
      key,
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: marshall({ feedId: budgetThrottlesKey(key) }),
        UpdateExpression: `REMOVE ${old.map((_, index) => `#old${index}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(old.map((name, index) => [`#old${index}`, name])),
      }),
    );
  }

  private deadline(): AbortSignal {
    return AbortSignal.timeout(this.timeoutMs);
  }

  /** One call under the operation's deadline; past it, an error that says so. */
  private async send(signal: AbortSignal, key: string, command: UpdateItemCommand) {
    try {
      return await this.client.send(command, { abortSignal: signal });
    } catch (error) {
      if (!signal.aborted) throw error;
      throw new Error(`request budget ${key}: DynamoDB did not answer within ${this.timeoutMs} ms`, {
        cause: error,
      });
    }
  }

  /** The state after the write; undefined when the condition failed. */
  private async update(
    signal: AbortSignal,
    key: string,
    expression: string,
    condition: string,
    values: Record<string, unknown>,
  ): Promise<BudgetState | undefined> {
    const used = Object.fromEntries(
      Object.entries(values).filter(([name]) =>
        new RegExp(`${name}(?!\\w)`).test(`${expression} ${condition}`),
      ),
    );
    const input: UpdateItemCommandInput = {
      TableName: this.tableName,
      Key: marshall({ feedId: key }),
      UpdateExpression: expression,
      ConditionExpression: condition,
      ExpressionAttributeValues: marshall(used),
      ReturnValues: 'ALL_NEW',
    };
    try {
      const output = await this.send(signal, key, new UpdateItemCommand(input));
      return stateOf(unmarshall(output.Attributes ?? {}));
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }
}

/** What `ops status` shows of a token's budget (read with GetItem by the operator's tools). */
export interface BudgetView extends BudgetState {
  throttlesLastHour: number;
}

/** The budget and its 429s in the last hour, from the two items as read (unmarshalled). */
export function budgetViewOf(
  item: Record<string, unknown>,
  throttles: Record<string, unknown> | undefined,
  nowMs: number,
): BudgetView {
  let throttlesLastHour = 0;
  for (const [name, value] of Object.entries(throttles ?? {})) {
    if (/^m\d+$/.test(name) && Number(name.slice(1)) * 60_000 > nowMs - HOUR_MS && typeof value === 'number')
      throttlesLastHour += value;
  }
  return { ...stateOf(item), throttlesLastHour };
}
