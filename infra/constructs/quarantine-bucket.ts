// Stateful: the quarantine bucket, where the poller stores partner records it could not publish
// (invalid, or too large for SQS) under `quarantine/`, for a person to inspect and replay. The records are
// raw partner data, customer data included, so they expire (`quarantineRetentionDays`).
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

export const QUARANTINE_PREFIX = 'quarantine/';

/** Days an overwritten (or expired) copy is kept as a noncurrent version before S3 deletes it. */
export const NONCURRENT_VERSION_DAYS = 30;

export interface QuarantineBucketProps {
  /** DESTROY also empties the bucket when the stack is deleted (CloudFormation cannot delete a bucket with objects). */
  readonly removalPolicy: RemovalPolicy;
  /** How long a quarantined record stays current before S3 expires it. */
  readonly retention: Duration;
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
      // S3 lifecycle: in a versioned bucket, expiring a current object adds a delete marker and keeps the data
      // as a noncurrent version, which the second rule deletes NONCURRENT_VERSION_DAYS later (the marker left
      // behind holds no data).
      lifecycleRules: [
        { id: 'expire-quarantined-records', expiration: props.retention },
        {
          id: 'expire-overwritten-copies',
          noncurrentVersionExpiration: Duration.days(NONCURRENT_VERSION_DAYS),
        },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy: props.removalPolicy,
      // CloudFormation deletes only an empty bucket: on a throwaway stack, a custom resource deletes every
      // object version first, so `cdk destroy` succeeds after records were quarantined.
      autoDeleteObjects: props.removalPolicy === RemovalPolicy.DESTROY,
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
