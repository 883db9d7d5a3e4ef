// Stateless: a feed's poll schedule. An EventBridge rule invokes the feed's poller asynchronously on a fixed
// rate; a disabled feed keeps its rule, disabled (switching the feed on again is a deployment, not a rebuild).
//
// Why no retries and no dead-letter queue: a run is idempotent and resumes from the stored cursor, so a
// lost or failed tick costs one interval of latency and the next tick does the work. Retrying instead
// would only start more runs that find the lease held and end at once. Events older than one interval
// are dropped for the same reason. Ticks that stop altogether show up as the lag alarm (missing data breaches).
import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';

export interface PollScheduleProps {
  readonly target: IFunction;
  readonly interval: Duration;
  readonly feedId: string;
  /** False: the rule exists but does not fire (the feed is switched off). */
  readonly enabled: boolean;
}

export class PollSchedule extends Construct {
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: PollScheduleProps) {
    super(scope, id);
    const seconds = props.interval.toSeconds();
    this.rule = new Rule(this, 'Rule', {
      description: `Runs the order feed poller of feed ${props.feedId}`,
      schedule: Schedule.rate(props.interval),
      enabled: props.enabled,
    });
    this.rule.addTarget(
      new LambdaFunction(props.target, {
        // EventBridge → Lambda delivery failures (throttled Invoke API): retry within the interval only.
        retryAttempts: 2,
        maxEventAge: Duration.seconds(clamp(seconds, 60, 86_400)),
      }),
    );
    // Lambda's own async queue: do not retry a failed run; drop ticks that waited longer than an interval.
    props.target.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: Duration.seconds(clamp(seconds, 60, 21_600)),
    });
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(value, min), max);
}
