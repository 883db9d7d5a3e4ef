// Stateful: the quarantine bucket, where the poller stores partner records it could not publish
// (invalid, or too large for SQS) under `quarantine/`, for a person to inspect and replay.
import { Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

export const QUARANTINE_PREFIX = 'quarantine/';

export interface QuarantineBucketProps {
  readonly removalPolicy: RemovalPolicy;
}

export class QuarantineBucket extends Construct {
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string, props: QuarantineBucketProps) {
    super(scope, id);
    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // SSE-S3: encrypted at rest with no key to manage and no kms:* grant for the writer.
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      // Record keys derive from content, so a replay overwrites: versions keep the earlier copy a while.
      versioned: true,
      lifecycleRules: [
        { id: 'expire-overwritten-copies', noncurrentVersionExpiration: Duration.days(30) },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Only the poller role can write (prefix quarantine/) and nothing reads it automatically; object-level ' +
        'auditing, if wanted, belongs to CloudTrail data events rather than a second, itself unlogged, log bucket.',
    });
  }

  /** PutObject under `quarantine/` only: no reads, no deletes, no other prefix. */
  grantPutQuarantined(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['s3:PutObject'],
      resourceArns: [this.bucket.arnForObjects(`${QUARANTINE_PREFIX}*`)],
    });
  }
}
