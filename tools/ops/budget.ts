// The token budgets in the cursor table (functions/core/adapters/dynamo-request-budget.ts), for `status` and
// `budget`: per token parameter, the shared rate, any hold in force and its end, and the 429s of the last
// hour. `budget release` drops one token's budget item, which ends its hold at once.
import { ConditionalCheckFailedException, DeleteItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import {
  type BudgetView,
  budgetItemKey,
  budgetThrottlesKey,
  budgetViewOf,
} from '../../functions/core/adapters/dynamo-request-budget.js';
import type { AwsAt } from '../aws.js';
import { CommandError } from '../cli-args.js';
import { formatDuration, renderTable } from './format.js';

export interface BudgetStatus extends BudgetView {
  tokenParameter: string;
}

export async function readBudgets(
  aws: Pick<AwsAt, 'dynamo'>,
  cursorTable: string,
  nowMs: number,
): Promise<BudgetStatus[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, never> | undefined;
  do {
    const page = await aws.dynamo.send(
      new ScanCommand({
        TableName: cursorTable,
        FilterExpression: 'begins_with(feedId, :budget)',
        ExpressionAttributeValues: { ':budget': { S: 'budget#' } },
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    items.push(...(page.Items ?? []).map((item) => unmarshall(item)));
    start = page.LastEvaluatedKey as typeof start;
  } while (start);
  const byKey = new Map(items.map((item) => [String(item.feedId), item]));
  return [...byKey]
    .filter(([key]) => !key.endsWith('#429s'))
    .map(([key, item]) => ({
      tokenParameter: key.slice('budget#'.length),
      ...budgetViewOf(item, byKey.get(budgetThrottlesKey(key)), nowMs),
    }));
}

const rateOf = (budget: BudgetStatus) =>
  budget.rate > 0 ? `${budget.rate}/s` : 'not limited (no 429 yet, no cap)';

const holdOf = (budget: BudgetStatus, nowMs: number) =>
  budget.holdUntil > nowMs
    ? `held until ${new Date(budget.holdUntil).toISOString()} (${formatDuration(budget.holdUntil - nowMs)})`
    : 'none';

/** One row per token: parameter, rate, hold, 429s in the last hour. */
export function budgetRows(budgets: readonly BudgetStatus[], nowMs: number): string[][] {
  return budgets.map((budget) => [
    budget.tokenParameter,
    rateOf(budget),
    holdOf(budget, nowMs),
    String(budget.throttlesLastHour),
  ]);
}

export const BUDGET_HEADER = ['TOKEN BUDGET', 'RATE', 'HOLD', '429s LAST HOUR'] as const;

/** `budget`: the table, or why there is none. */
export function renderBudgets(budgets: readonly BudgetStatus[], nowMs: number): string {
  if (budgets.length === 0) return 'No request budget yet: no feed has sent a partner request.';
  return renderTable(BUDGET_HEADER, budgetRows(budgets, nowMs));
}

/** What `budget release` would change, in words (the plan printed without --yes). */
export function releasePlan(budget: BudgetStatus, nowMs: number): string[] {
  return [
    `release the request budget of token parameter ${budget.tokenParameter}:`,
    budget.holdUntil > nowMs
      ? `  hold: ${holdOf(budget, nowMs)} -> none (every feed on the token may send at once)`
      : '  hold: none in force',
    `  rate: ${rateOf(budget)} -> the cap (partnerRequestsPerSecond), or not limited until the next 429`,
    `  the item ${budgetItemKey(budget.tokenParameter)} is deleted; the next request creates it afresh`,
  ];
}

/**
 * Deletes the token's budget item, unless its hold changed since it was read (a newer 429: look again).
 * The 429 counts (a second item) stay.
 */
export async function releaseBudget(
  aws: Pick<AwsAt, 'dynamo'>,
  cursorTable: string,
  read: BudgetStatus,
): Promise<void> {
  try {
    await aws.dynamo.send(
      new DeleteItemCommand({
        TableName: cursorTable,
        Key: marshall({ feedId: budgetItemKey(read.tokenParameter) }),
        ConditionExpression: 'holdUntil = :read',
        ExpressionAttributeValues: marshall({ ':read': read.holdUntil }),
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    throw new CommandError(
      `the budget of ${read.tokenParameter} changed after it was read (a new 429, or released already): run the command again`,
    );
  }
}
