// The order-feed-ingester stack of this repository's app: the OrderFeedIngester construct with the `orderFeed`
// CDK context as its props. The construct's id `Default` is left out of logical ids by CDK, so every resource
// keeps the id it had when the stack held the resources itself (an existing deployment updates in place).
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { OrderFeedIngester, type OrderFeedIngesterProps } from './order-feed-ingester.js';

export interface OrderFeedIngesterStackProps extends StackProps {
  readonly ingester: OrderFeedIngesterProps;
}

export class OrderFeedIngesterStack extends Stack {
  readonly ingester: OrderFeedIngester;

  constructor(scope: Construct, id: string, props: OrderFeedIngesterStackProps) {
    super(scope, id, props);
    this.ingester = new OrderFeedIngester(this, 'Default', props.ingester);
  }
}
