// Key schemas the adapters rely on, shared by the CDK constructs and the test harness so the tables
// tests run against are the tables the stack deploys.

export const ORDERS_TABLE_SCHEMA = {
  partitionKey: { name: 'orderId', type: 'N' },
  salesIndex: {
    name: 'salesByVendor',
    partitionKey: { name: 'saleKey', type: 'S' },
    sortKey: { name: 'orderId', type: 'N' },
    nonKeyAttributes: ['saleAmount', 'vendorId'],
  },
} as const;

export const CURSOR_TABLE_SCHEMA = {
  partitionKey: { name: 'feedId', type: 'S' },
} as const;

/** The order history: one item per (orderId, version), every version the consumer received, once. */
export const HISTORY_TABLE_SCHEMA = {
  partitionKey: { name: 'orderId', type: 'N' },
  sortKey: { name: 'version', type: 'N' },
  timeToLiveAttribute: 'expiresAt',
} as const;
