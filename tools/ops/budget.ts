// The token budgets in the cursor table (functions/core/adapters/dynamo-request-budget.ts), for `status`:
// per token parameter, the shared rate, any hold in force, and the 429s of the last hour.
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  type BudgetView,
  budgetThrottlesKey,
  budgetViewOf,
} from '../../functions/core/adapters/dynamo-request-budget.js';
import type { AwsAt } from '../aws.js';
import { formatDuration } from './format.js';

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

/** One row per token: parameter, rate, hold, 429s in the last hour. */
export function budgetRows(budgets: readonly BudgetStatus[], nowMs: number): string[][] {
  return budgets.map((budget) => [
    budget.tokenParameter,
    budget.rate > 0 ? `${budget.rate}/s` : 'not limited (no 429 yet, no cap)',
    budget.holdUntil > nowMs
      ? `held until ${new Date(budget.holdUntil).toISOString()} (${formatDuration(budget.holdUntil - nowMs)})`
      : 'none',
    String(budget.throttlesLastHour),
  ]);
}
