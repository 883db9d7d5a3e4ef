// Ports of the apply use case. Flow: SQS → consumer handler → applyOrderVersion → OrderStore; each record
// in a span of the Tracing port (X-Ray on AWS, see ../observability).
import type { Int64 } from '../model/int64.js';
import type { Order } from '../model/types.js';
import type { SaleEntry } from './sale.js';

export type { Span, Tracing } from '../observability/tracing.js';

export type PutResult =
  | { applied: true; previousVersion: Int64 | undefined; previousSale: SaleEntry | undefined }
  | { applied: false; storedVersion: Int64 };

export interface OrderStore {
  /**
   * Writes the order (and its sale entry, if any) only when no version of it is stored or the stored
   * version is lower, in one conditional write. An equal or higher stored version: `applied: false`.
   */
  putIfNewer(order: Order, sale: SaleEntry | undefined, annotations?: StoredAnnotations): Promise<PutResult>;
}

/** What the stored order carries besides the order itself, for operators to query. */
export interface StoredAnnotations {
  /** Codes of the version's findings (schema drift, consistency-rule violations); empty: none. */
  findingCodes: string[];
  /** The applied version's `source.correlationId` (the run that produced it); absent in older messages. */
  correlationId?: string;
}
