// The consumer's configuration, read from its environment and checked at cold start (declared in
// core/config/settings.ts, from which the stack also writes it).
import { type Env, readEnv } from '../core/config/env.js';
import { CONSUMER_RESOURCES } from '../core/config/settings.js';

export interface ConsumerConfig {
  ordersTableName: string;
}

export function loadConsumerConfig(env: Env): ConsumerConfig {
  return { ordersTableName: readEnv(env, CONSUMER_RESOURCES.ordersTableName) };
}
