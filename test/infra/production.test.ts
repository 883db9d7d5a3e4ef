// What a real AWS account needs beyond what moto checks (issue 19): subscriber data that cannot expire unseen,
// a deploy that fits a fresh account's concurrency quota, alarms that reach someone, quarantined customer
// data that expires, and a consumer that keeps up with the number of feeds.
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FEEDS_CONFIG, FULL_CONFIG, REQUIRED_CONFIG, synthStack } from './synth.js';

type Resource = { Type: string; Properties: Record<string, unknown> };

let minimal: Template;
let full: Template;
const withSubscribers = { ...REQUIRED_CONFIG, downstreamSubscribers: ['billing', 'audit-log'] };
let subscribed: Template;

beforeAll(() => {
  minimal = synthStack(REQUIRED_CONFIG).template;
  full = synthStack(FULL_CONFIG).template;
  subscribed = synthStack(withSubscribers).template;
});

function resources(template: Template, type: string, prefix = ''): Array<[string, Resource]> {
  return Object.entries(template.findResources(type) as Record<string, Resource>).filter(([id]) =>
    id.startsWith(prefix),
  );
}

function only(template: Template, type: string, prefix: string): [string, Resource] {
  const found = resources(template, type, prefix);
  expect(
    found.map(([id]) => id),
    `${type} ${prefix}*`,
  ).toHaveLength(1);
  return found[0] as [string, Resource];
}

const DAY = 24 * 3600;

describe('subscriber queues (nothing expires unseen downstream)', () => {
  it('keep messages 14 days by default and subscriberRetentionDays when set; the orders queue keeps 4', () => {
    for (const name of ['Billing', 'AuditLog']) {
      const [, queue] = only(subscribed, 'AWS::SQS::Queue', `QueuesDownstream${name}Queue`);
      expect(queue.Properties.MessageRetentionPeriod).toBe(14 * DAY);
    }
    const [, orders] = only(subscribed, 'AWS::SQS::Queue', 'QueuesOrdersQueue');
    expect(orders.Properties.MessageRetentionPeriod).toBe(4 * DAY);

    const shorter = synthStack({ ...withSubscribers, subscriberRetentionDays: 3 }).template;
    const [, billing] = only(shorter, 'AWS::SQS::Queue', 'QueuesDownstreamBillingQueue');
    expect(billing.Properties.MessageRetentionPeriod).toBe(3 * DAY);
  });

  it('each have an oldest-message-age alarm at half the retention by default, or subscriberMaxAgeHours', () => {
    for (const name of ['Billing', 'AuditLog']) {
      const [queueId] = only(subscribed, 'AWS::SQS::Queue', `QueuesDownstream${name}Queue`);
      const [, alarm] = only(
        subscribed,
        'AWS::CloudWatch::Alarm',
        `MonitoringDownstream${name}QueueAgeAlarm`,
      );
      expect(alarm.Properties).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
        Statistic: 'Maximum',
        Threshold: 7 * DAY,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
    const configured = synthStack({ ...withSubscribers, subscriberMaxAgeHours: 24 }).template;
    const [, alarm] = only(configured, 'AWS::CloudWatch::Alarm', 'MonitoringDownstreamBillingQueueAgeAlarm');
    expect(alarm.Properties.Threshold).toBe(24 * 3600);
  });

  it('refuses an age threshold at or beyond the retention, naming the key', () => {
    expect(() =>
      synthStack({ ...withSubscribers, subscriberRetentionDays: 2, subscriberMaxAgeHours: 48 }),
    ).toThrow(/orderFeed\.subscriberMaxAgeHours: must be below the subscriber queues' retention/);
    expect(() => synthStack({ ...withSubscribers, subscriberRetentionDays: 15 })).toThrow(
      /orderFeed\.subscriberRetentionDays: must be an integer from 1 to 14/,
    );
  });

  it('show on the dashboard, one line per subscriber with the alarm threshold', () => {
    const [, dashboard] = only(subscribed, 'AWS::CloudWatch::Dashboard', 'MonitoringDashboard');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);

    expect(body).toContain('Subscriber queues: age of oldest message');
    expect(body).toContain('\\"label\\":\\"billing\\"');
    expect(body).toContain('\\"label\\":\\"audit-log\\"');
    expect(body).toContain(`\\"value\\":${7 * DAY}`);
  });
});

describe('a fresh account (Lambda keeps 100 executions unreserved)', () => {
  it('reserves no concurrency for any function, with one feed or several', () => {
    for (const template of [minimal, synthStack(FEEDS_CONFIG).template]) {
      for (const [id, fn] of resources(template, 'AWS::Lambda::Function')) {
        expect(fn.Properties.ReservedConcurrentExecutions, id).toBeUndefined();
      }
    }
  });
});

describe('alarm topic (alarms reach someone)', () => {
  it('is created without alarmTopicArn: KMS-encrypted with a rotated key of its own, TLS only, output', () => {
    const [keyId, key] = only(minimal, 'AWS::KMS::Key', 'MonitoringAlarmTopicKey');
    const [topicId, topic] = only(minimal, 'AWS::SNS::Topic', 'MonitoringAlarmTopic');
    only(minimal, 'AWS::SNS::TopicPolicy', 'MonitoringAlarmTopicPolicy');

    expect(topic.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    expect(key.Properties.EnableKeyRotation).toBe(true);
    minimal.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sns:Publish',
            Principal: '*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          Match.objectLike({
            Effect: 'Allow',
            Action: 'sns:Publish',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }),
          }),
        ]),
      },
    });
    minimal.hasOutput('AlarmTopicArn', { Value: { Ref: topicId } });
  });

  it('lets CloudWatch use the key (alarms cannot publish to a topic under the AWS-managed alias/aws/sns)', () => {
    minimal.hasResourceProperties('AWS::KMS::Key', {
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }),
          }),
        ]),
      },
    });
  });

  it('is the given one with alarmTopicArn (nothing created), output too', () => {
    full.resourceCountIs('AWS::SNS::Topic', 0);
    full.resourceCountIs('AWS::KMS::Key', 0);
    full.hasOutput('AlarmTopicArn', { Value: FULL_CONFIG.alarmTopicArn });
  });

  it('subscribes alarmEmail to the stack’s topic or to the given one', () => {
    const own = synthStack({ ...REQUIRED_CONFIG, alarmEmail: 'oncall@example.com' }).template;
    const [topicId] = only(own, 'AWS::SNS::Topic', 'MonitoringAlarmTopic');
    own.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: { Ref: topicId },
    });

    const given = synthStack({ ...FULL_CONFIG, alarmEmail: 'oncall@example.com' }).template;
    given.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: FULL_CONFIG.alarmTopicArn,
    });
    minimal.resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('refuses an alarmEmail that is not an address, without echoing it', () => {
    expect(() => synthStack({ ...REQUIRED_CONFIG, alarmEmail: 'not an address' })).toThrow(
      /orderFeed\.alarmEmail: must be an e-mail address$/m,
    );
  });
});

describe('quarantine bucket (customer data expires)', () => {
  function lifecycle(template: Template) {
    const [, bucket] = only(template, 'AWS::S3::Bucket', 'QuarantineBucket');
    return (bucket.Properties.LifecycleConfiguration as { Rules: Array<Record<string, unknown>> }).Rules;
  }

  it('expires current records after 90 days by default, or quarantineRetentionDays, and overwritten copies after 30', () => {
    expect(lifecycle(minimal)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Id: 'expire-quarantined-records',
          ExpirationInDays: 90,
          Status: 'Enabled',
        }),
        expect.objectContaining({
          Id: 'expire-overwritten-copies',
          NoncurrentVersionExpiration: { NoncurrentDays: 30 },
        }),
      ]),
    );
    const shorter = synthStack({ ...REQUIRED_CONFIG, quarantineRetentionDays: 7 }).template;
    expect(lifecycle(shorter)).toContainEqual(expect.objectContaining({ ExpirationInDays: 7 }));
  });

  it('is emptied on stack deletion with removalPolicy destroy, and never with retain', () => {
    const disposable = synthStack({ ...REQUIRED_CONFIG, removalPolicy: 'destroy' }).template;
    const [bucketId] = only(disposable, 'AWS::S3::Bucket', 'QuarantineBucket');

    disposable.hasResourceProperties('Custom::S3AutoDeleteObjects', { BucketName: { Ref: bucketId } });
    minimal.resourceCountIs('Custom::S3AutoDeleteObjects', 0);
  });
});

describe('consumer concurrency (follows the number of feeds)', () => {
  function maximumConcurrency(template: Template): unknown {
    const [[, mapping]] = resources(template, 'AWS::Lambda::EventSourceMapping') as [[string, Resource]];
    return (mapping.Properties.ScalingConfig as { MaximumConcurrency: number }).MaximumConcurrency;
  }

  it('is 5 per feed by default, and consumerMaxConcurrency when set', () => {
    expect(maximumConcurrency(minimal)).toBe(5);
    expect(maximumConcurrency(synthStack(FEEDS_CONFIG).template)).toBe(15);
    const tenFeeds = {
      ...REQUIRED_CONFIG,
      feeds: Array.from({ length: 10 }, (_, index) => ({ id: `shard-${index}`, vendorIds: [`v-${index}`] })),
    };
    expect(maximumConcurrency(synthStack(tenFeeds).template)).toBe(50);
    expect(maximumConcurrency(synthStack({ ...FEEDS_CONFIG, consumerMaxConcurrency: 7 }).template)).toBe(7);
  });
});
