// The poller's partner client, every request taken from the token's shared request budget (a DynamoDB item
// in the cursor table) through an interceptor on the client's own Agent.
import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { budgetItemKey, DynamoRequestBudgetStore } from '../core/adapters/dynamo-request-budget.js';
import { RequestBudget } from '../core/ingest/request-budget.js';
import { withRequestBudget } from '../core/partner/budgeted-dispatcher.js';
import { createPartnerAgent, createPartnerClient } from '../core/partner/client.js';
import type { PartnerApi } from '../core/partner/types.js';
import type { PollerConfig } from './config.js';

export function createBudgetedPartner(
  config: PollerConfig,
  deps: {
    token: () => Promise<string>;
    dynamo: DynamoDBClient;
    logger: Pick<Logger, 'warn'>;
    /** False: per-feed pacing only, no shared budget (the bench's comparison). Default true. */
    shareBudget?: boolean;
  },
): PartnerApi {
  const agent = createPartnerAgent();
  const budget = new RequestBudget({
    store: new DynamoRequestBudgetStore(deps.dynamo, config.cursorTableName),
    key: budgetItemKey(config.tokenParameterName),
    cap: config.partnerRequestsPerSecond,
    // The feed goes on without the budget (its own pace and the client's 429 handling still hold).
    onStoreError: (error) =>
      deps.logger.warn('request budget unavailable; this request is not paced with the other feeds', {
        feedId: config.feedId,
        error: error instanceof Error ? error.message : String(error),
      }),
  });
  return createPartnerClient({
    baseUrl: config.partnerBaseUrl,
    token: deps.token,
    arrayEncoding: config.arrayQueryEncoding,
    maxBodyBytes: config.maxPageBodyBytes,
    dispatcher: deps.shareBudget === false ? agent : withRequestBudget(agent, budget),
  });
}
