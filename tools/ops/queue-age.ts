// Age of a queue's oldest message. SQS has no queue attribute for it: it is the CloudWatch metric
// AWS/SQS ApproximateAgeOfOldestMessage (per QueueName, one data point a minute). On AWS it is read with
// GetMetricData (the latest point of the last 15 minutes); an emulator has no such metrics, and then the
// answer is "n/a" with the reason, never an invented figure.
import { CloudWatchClient, GetMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import type { AwsAt } from '../aws.js';

export interface OldestAge {
  seconds: number | undefined;
  /** Why there is no figure. */
  note: string | undefined;
}

export interface OldestAgeSource {
  oldestAgeSeconds(queueName: string, nowMs: number): Promise<OldestAge>;
}

const WINDOW_MS = 15 * 60_000;

export function oldestAgeSourceFor(aws: AwsAt): OldestAgeSource {
  if (aws.endpoint !== undefined) {
    return {
      oldestAgeSeconds: async () => ({ seconds: undefined, note: 'no CloudWatch metrics on an emulator' }),
    };
  }
  let client: CloudWatchClient | undefined;
  return {
    async oldestAgeSeconds(queueName, nowMs) {
      client ??= new CloudWatchClient(aws.region ? { region: aws.region } : {});
      try {
        const output = await client.send(
          new GetMetricDataCommand({
            StartTime: new Date(nowMs - WINDOW_MS),
            EndTime: new Date(nowMs),
            ScanBy: 'TimestampDescending',
            MetricDataQueries: [
              {
                Id: 'age',
                MetricStat: {
                  Metric: {
                    Namespace: 'AWS/SQS',
                    MetricName: 'ApproximateAgeOfOldestMessage',
                    Dimensions: [{ Name: 'QueueName', Value: queueName }],
                  },
                  Period: 60,
                  Stat: 'Maximum',
                },
              },
            ],
          }),
        );
        const latest = output.MetricDataResults?.[0]?.Values?.[0];
        return latest === undefined
          ? { seconds: undefined, note: 'no data point in the last 15 minutes' }
          : { seconds: latest, note: undefined };
      } catch (error) {
        return {
          seconds: undefined,
          note: `CloudWatch: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
    },
  };
}
