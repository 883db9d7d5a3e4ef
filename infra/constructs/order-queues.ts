// Stateful: the SQS queues the poller fans order versions onto: the orders queue (read by our consumer)
// and one queue per downstream subscriber, each with its own dead-letter queue.
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { SQS_MAX_MESSAGE_BYTES } from '../../functions/core/contract/order-version-message.js';
import { pascalCase } from '../config.js';

/**
 * SQS keeps a message at most 14 days (MessageRetentionPeriod: 60 s to 1,209,600 s) and deletes it at the
 * end of its retention whether or not anyone received it: an unread message never reaches a dead-letter queue.
 * Dead-letter queues keep messages for that maximum, giving people two weeks to redrive.
 */
export const DEAD_LETTER_RETENTION = Duration.days(14);
/** The orders queue: read by our own consumer, whose age alarm (alarmQueueAgeMinutes) rings within minutes. */
export const QUEUE_RETENTION = Duration.days(4);

export interface QueueWithDlq {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
}

export interface OrderQueuesProps {
  /** Downstream subscriber names (validated `[a-z][a-z0-9-]*`, unique). */
  readonly subscribers: readonly string[];
  readonly maxReceiveCount: number;
  /** For the orders queue: at least six times the consumer's timeout plus its batching window. */
  readonly ordersVisibilityTimeout: Duration;
  /** For subscriber queues, whose consumers we do not know. */
  readonly subscriberVisibilityTimeout: Duration;
  /**
   * How long a subscriber queue keeps an unread message (subscriberRetentionDays, 1 to 14 days): a subscriber
   * that stops reading loses its messages after this, so each queue's age alarm rings well before.
   */
  readonly subscriberRetention: Duration;
  readonly removalPolicy: RemovalPolicy;
}

export class OrderQueues extends Construct {
  readonly orders: QueueWithDlq;
  /** Subscriber name → its queue pair, in configuration order. */
  readonly subscribers: ReadonlyMap<string, QueueWithDlq>;

  constructor(scope: Construct, id: string, props: OrderQueuesProps) {
    super(scope, id);
    this.orders = this.queueWithDlq('Orders', props.ordersVisibilityTimeout, QUEUE_RETENTION, props);
    const subscribers = new Map<string, QueueWithDlq>();
    for (const name of props.subscribers) {
      subscribers.set(
        name,
        this.queueWithDlq(
          `Downstream${pascalCase(name)}`,
          props.subscriberVisibilityTimeout,
          props.subscriberRetention,
          props,
        ),
      );
    }
    this.subscribers = subscribers;
  }

  /** Every queue the poller publishes to. */
  get publishTargets(): Queue[] {
    return [this.orders.queue, ...[...this.subscribers.values()].map((pair) => pair.queue)];
  }

  /** Every dead-letter queue (for alarms). */
  get deadLetterQueues(): Queue[] {
    return [
      this.orders.deadLetterQueue,
      ...[...this.subscribers.values()].map((pair) => pair.deadLetterQueue),
    ];
  }

  private queueWithDlq(
    id: string,
    visibilityTimeout: Duration,
    retentionPeriod: Duration,
    props: OrderQueuesProps,
  ): QueueWithDlq {
    const common = {
      // SQS's largest message (1 MiB): an order of several hundred items still travels as one message.
      maxMessageSizeBytes: SQS_MAX_MESSAGE_BYTES,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
    };
    const deadLetterQueue = new Queue(this, `${id}DeadLetterQueue`, {
      ...common,
      retentionPeriod: DEAD_LETTER_RETENTION,
    });
    const queue = new Queue(this, `${id}Queue`, {
      ...common,
      retentionPeriod,
      visibilityTimeout,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
    });
    return { queue, deadLetterQueue };
  }
}
