// The consumer's configuration, validated at cold start.
import { type Env, requiredString } from '../core/config/env.js';

export interface ConsumerConfig {
  ordersTableName: string;
}

export function loadConsumerConfig(env: Env): ConsumerConfig {
  return { ordersTableName: requiredString(env, 'ORDERS_TABLE_NAME') };
}
