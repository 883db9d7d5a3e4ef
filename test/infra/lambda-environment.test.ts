// Lambda's 4 KB limit on a function's environment, checked at synth with deploy-time values at their longest.
import { Lazy } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import {
  checkEnvironmentSize,
  environmentBytesAtMost,
  LAMBDA_ENVIRONMENT_LIMIT_BYTES,
} from '../../infra/constructs/lambda-environment.js';
import { REQUIRED_CONFIG, synthStack } from './synth.js';

/** A value CloudFormation fills in at deploy time, as a generated resource name is at synth. */
const deployTime = () => Lazy.string({ produce: () => 'resolved-at-deploy' });

describe('the size of a function environment', () => {
  it('is the JSON Lambda is sent, a deploy-time value counted at the longest stated for it', () => {
    const { total, byVariable } = environmentBytesAtMost(
      { FEED_ID: 'eu', TABLE: deployTime() },
      { TABLE: 255 },
    );

    expect(total).toBe(JSON.stringify({ FEED_ID: 'eu', TABLE: 'x'.repeat(255) }).length);
    expect(byVariable).toEqual([
      ['TABLE', '"TABLE":""'.length + 255],
      ['FEED_ID', '"FEED_ID":"eu"'.length],
    ]);
  });

  it('cannot be judged for a deploy-time value whose longest is not stated', () => {
    expect(() => environmentBytesAtMost({ TABLE: deployTime() }, {})).toThrow(
      /TABLE is only known at deploy time: state the longest it can get/,
    );
  });

  it('over 4 KB fails, naming the largest variables', () => {
    const environment = { BIG: 'b'.repeat(3000), MIDDLE: 'm'.repeat(900), SMALL: 's', TABLE: deployTime() };

    expect(() => checkEnvironmentSize('Poller', environment, { TABLE: 255 })).toThrow(
      /^Poller: its environment can reach 4\d{3} bytes, over Lambda's limit of 4096 \(largest: BIG 3008, MIDDLE 911, TABLE 265\)/,
    );
    expect(() =>
      checkEnvironmentSize('Poller', { ...environment, MIDDLE: 'm' }, { TABLE: 255 }),
    ).not.toThrow();
  });
});

describe("the stack's functions", () => {
  it("refuse at synth a configuration that passes key by key but overflows the poller's environment", () => {
    // Each value is within its own rule; together with the longest generated names they pass 4 KB.
    const config = {
      ...REQUIRED_CONFIG,
      tokenParameterName: `/${'p'.repeat(1010)}`,
      vendorIds: Array.from({ length: 220 }, (_, index) => `vendor-${String(index).padStart(4, '0')}`),
    };

    expect(() => synthStack(config)).toThrow(
      new RegExp(
        `/Poller\\w*/Function: its environment can reach \\d+ bytes, over Lambda's limit of ${LAMBDA_ENVIRONMENT_LIMIT_BYTES} \\(largest: VENDOR_IDS 26\\d\\d, PARTNER_TOKEN_PARAMETER 10\\d\\d`,
      ),
    );
  });

  it('accept the longest vendor list the configuration allows, beside the defaults', () => {
    const vendorIds = Array.from({ length: 233 }, (_, index) => `vendor-${String(index).padStart(4, '0')}`);
    expect(vendorIds.join(',').length).toBeLessThanOrEqual(2800);

    expect(() => synthStack({ ...REQUIRED_CONFIG, vendorIds })).not.toThrow();
  });
});
