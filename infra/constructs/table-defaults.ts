// Settings every stateful table shares: on-demand capacity, point-in-time recovery, deletion protection,
// retention on stack deletion, and encryption at rest with the AWS-owned key.
//
// Encryption: DynamoDB always encrypts at rest; the AWS-owned key costs nothing, needs no key policy and
// no kms:* grants for our roles. A customer-managed key would only add value with cross-account access
// rules or key-level audit requirements, which this service does not have.
import { RemovalPolicy } from 'aws-cdk-lib';
import {
  type Attribute,
  AttributeType,
  BillingMode,
  TableEncryption,
  type TableProps,
} from 'aws-cdk-lib/aws-dynamodb';

export function statefulTableProps(
  removalPolicy: RemovalPolicy,
): Pick<
  TableProps,
  'billingMode' | 'pointInTimeRecoverySpecification' | 'deletionProtection' | 'encryption' | 'removalPolicy'
> {
  return {
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    // A table meant to be destroyed with its stack cannot also refuse deletion.
    deletionProtection: removalPolicy !== RemovalPolicy.DESTROY,
    encryption: TableEncryption.DEFAULT,
    removalPolicy,
  };
}

/** A key of the shared schemas (functions/core/adapters/table-schemas.ts) as CDK's attribute. */
export function tableKey(key: { readonly name: string; readonly type: 'S' | 'N' | 'B' }): Attribute {
  return {
    name: key.name,
    type: { S: AttributeType.STRING, N: AttributeType.NUMBER, B: AttributeType.BINARY }[key.type],
  };
}
