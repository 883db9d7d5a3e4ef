// EventBridge `rate(N unit)` expressions, read in one place: by the deployment configuration (the
// synth-time check of `schedule`) and by local mode (which runs the deployed schedule itself). No
// aws-cdk-lib import, so local mode can load it without the CDK.

const RATE = /^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$/;

export interface RateExpression {
  amount: number;
  unit: 'minute' | 'minutes' | 'hour' | 'hours' | 'day' | 'days';
  /** The interval in minutes. */
  minutes: number;
}

/** `rate(5 minutes)` → { amount: 5, unit: 'minutes', minutes: 5 }; anything else → undefined. */
export function parseRateExpression(text: string): RateExpression | undefined {
  const match = RATE.exec(text);
  if (match === null || match[1] === undefined || match[2] === undefined) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] as RateExpression['unit'];
  const factor = unit.startsWith('minute') ? 1 : unit.startsWith('hour') ? 60 : 1440;
  return { amount, unit, minutes: amount * factor };
}
