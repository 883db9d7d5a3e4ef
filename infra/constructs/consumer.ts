// Stateless: the consumer function. It reads the orders queue in batches (reporting per-message failures,
// so one bad record does not fail its batch) and applies each order version to the orders table under
// a version guard, and (history on) keeps each version once in the history table. Its role reaches those
// tables and its queue only: not the token, not the cursor.
import { fileURLToPath } from 'node:url';
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ConsumerEnvironment } from '../../functions/core/config/settings.js';
import type { OrderFeedConfig } from '../config.js';
import type { HistoryTable } from './history-table.js';
import { IngesterFunction, observabilityEnvironment } from './ingester-function.js';
import { LONGEST_GENERATED } from './lambda-environment.js';
import type { OrdersTable } from './orders-table.js';

export const CONSUMER_ENTRY = fileURLToPath(new URL('../../functions/consumer/handler.ts', import.meta.url));
export const CONSUMER_SERVICE_NAME = 'order-feed-consumer';
export const CONSUMER_TIMEOUT = Duration.seconds(30);

/** AWS's guidance for an SQS event source: visibility ≥ 6 × function timeout + batching window. */
export function ordersQueueVisibilityTimeout(config: OrderFeedConfig): Duration {
  return Duration.seconds(6 * CONSUMER_TIMEOUT.toSeconds() + config.consumerMaxBatchingWindowSeconds);
}

export interface ConsumerProps {
  readonly config: OrderFeedConfig;
  readonly ordersTable: OrdersTable;
  /** Absent when `history` is off. */
  readonly historyTable?: HistoryTable;
  readonly ordersQueue: Queue;
  /** The `Ingester` dimension of its metrics (OrderFeedIngester.instanceId). */
  readonly instanceId: string;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export class Consumer extends Construct {
  readonly function: IngesterFunction;

  constructor(scope: Construct, id: string, props: ConsumerProps) {
    super(scope, id);
    const { config } = props;

    this.function = new IngesterFunction(this, 'Function', {
      entry: CONSUMER_ENTRY,
      bundle: 'consumer',
      description: 'order-feed-ingester consumer: orders queue to orders table',
      timeout: CONSUMER_TIMEOUT,
      memorySize: 512,
      environment: consumerEnvironment(config, props.instanceId, props.ordersTable, props.historyTable),
      longestDeployTimeValues: {
        ORDERS_TABLE_NAME: LONGEST_GENERATED.tableName,
        HISTORY_TABLE_NAME: LONGEST_GENERATED.tableName,
      },
      logRetention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });

    props.ordersTable.grantApplyVersions(this.function.executionRole);
    props.historyTable?.grantRecordVersions(this.function.executionRole);
    // Also grants the consume actions (receive, delete, change visibility) on this queue only.
    this.function.addEventSource(
      new SqsEventSource(props.ordersQueue, {
        batchSize: config.consumerBatchSize,
        maxBatchingWindow:
          config.consumerMaxBatchingWindowSeconds > 0
            ? Duration.seconds(config.consumerMaxBatchingWindowSeconds)
            : undefined,
        maxConcurrency: config.consumerMaxConcurrency,
        reportBatchItemFailures: true,
      }),
    );
  }
}

/** The consumer's environment, typed by the variables it reads (functions/core/config/settings.ts). */
export function consumerEnvironment(
  config: OrderFeedConfig,
  instanceId: string,
  ordersTable: OrdersTable,
  historyTable?: HistoryTable,
): ConsumerEnvironment {
  return {
    ORDERS_TABLE_NAME: ordersTable.table.tableName,
    ...(historyTable
      ? {
          HISTORY_TABLE_NAME: historyTable.table.tableName,
          HISTORY_RETENTION_DAYS: String(config.historyRetentionDays),
        }
      : {}),
    ...observabilityEnvironment(CONSUMER_SERVICE_NAME, config, instanceId),
  };
}
