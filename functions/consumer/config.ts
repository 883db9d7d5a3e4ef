import type { HistoryTable } from '../core/apply/apply-order-version.js';
import { CONSUMER_ENVIRONMENT, type Env, readEnvironment } from '../core/config/settings.js';

export interface ConsumerConfig {
  ordersTableName: string;
  /** None when the stack keeps no history (`history: false`). */
  history?: HistoryTable;
}

export function loadConsumerConfig(env: Env): ConsumerConfig {
  const read = readEnvironment(CONSUMER_ENVIRONMENT, env);
  return {
    ordersTableName: read.ORDERS_TABLE_NAME,
    ...(read.HISTORY_TABLE_NAME === undefined
      ? {}
      : { history: { tableName: read.HISTORY_TABLE_NAME, retentionDays: read.HISTORY_RETENTION_DAYS } }),
  };
}
