// The consumer's configuration, read from its environment and checked at cold start (declared in
// core/config/settings.ts, from which the stack also writes it).
import { CONSUMER_ENVIRONMENT, type Env, readEnvironment } from '../core/config/settings.js';

export function loadConsumerConfig(env: Env): { ordersTableName: string } {
  return { ordersTableName: readEnvironment(CONSUMER_ENVIRONMENT, env).ORDERS_TABLE_NAME };
}
