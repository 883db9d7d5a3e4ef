// Age of a queue's oldest message. SQS has no queue attribute for it: it is the CloudWatch metric
// AWS/SQS ApproximateAgeOfOldestMessage (per QueueName, one data point a minute). On AWS it is read with
// GetMetricData (the latest point of the last 15 minutes); an emulator has no such metrics, and then the
// answer is "n/a" with the reason, never an invented figure.
//
// The CloudWatch client (@aws-sdk/client-cloudwatch) is not among this repository's dependencies yet; it
// is loaded when present, and without it the age is "n/a" with that reason.
import type { OpsAws } from './aws.js';

export interface OldestAge {
  seconds: number | undefined;
  /** Why there is no figure. */
  note: string | undefined;
}

export interface OldestAgeSource {
  oldestAgeSeconds(queueName: string, nowMs: number): Promise<OldestAge>;
}

export const unavailableAge = (note: string): OldestAgeSource => ({
  oldestAgeSeconds: async () => ({ seconds: undefined, note }),
});

/** The slice of @aws-sdk/client-cloudwatch used here. */
interface CloudWatchModule {
  CloudWatchClient: new (
    config: Record<string, unknown>,
  ) => {
    send(command: unknown): Promise<{
      MetricDataResults?: Array<{ Timestamps?: Date[]; Values?: number[] }>;
    }>;
  };
  GetMetricDataCommand: new (input: Record<string, unknown>) => unknown;
}

const CLOUDWATCH_PACKAGE = '@aws-sdk/client-cloudwatch';
const WINDOW_MS = 15 * 60_000;

export function oldestAgeSourceFor(aws: OpsAws): OldestAgeSource {
  if (aws.endpoint !== undefined) return unavailableAge('no CloudWatch metrics on an emulator');
  let loaded: Promise<CloudWatchModule | undefined> | undefined;
  let client: InstanceType<CloudWatchModule['CloudWatchClient']> | undefined;
  return {
    async oldestAgeSeconds(queueName, nowMs) {
      loaded ??= import(CLOUDWATCH_PACKAGE).then(
        (module: unknown) => module as CloudWatchModule,
        () => undefined,
      );
      const cloudWatch = await loaded;
      if (cloudWatch === undefined)
        return { seconds: undefined, note: `${CLOUDWATCH_PACKAGE} not installed` };
      client ??= new cloudWatch.CloudWatchClient(aws.region ? { region: aws.region } : {});
      try {
        const output = await client.send(
          new cloudWatch.GetMetricDataCommand({
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
