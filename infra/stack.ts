// The order-feed-ingester stack of this repository's app: the OrderFeedIngester construct with the checked
// `orderFeed` CDK context as its props (propsFromConfig turns its plain values into CDK types). The construct's
// id `Default` is left out of logical ids by CDK, so every resource keeps the id it had when the stack held the
// resources itself (an existing deployment updates in place).
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { OrderFeedConfig } from './config.js';
import { propsFromConfig } from './config-props.js';
import { OrderFeedIngester } from './order-feed-ingester.js';

export interface OrderFeedIngesterStackProps extends StackProps {
  /** The checked `orderFeed` context (parseConfig). */
  readonly config: OrderFeedConfig;
}

export class OrderFeedIngesterStack extends Stack {
  readonly ingester: OrderFeedIngester;

  constructor(scope: Construct, id: string, props: OrderFeedIngesterStackProps) {
    super(scope, id, props);
    this.ingester = new OrderFeedIngester(this, 'Default', propsFromConfig(this, props.config));
  }
}
