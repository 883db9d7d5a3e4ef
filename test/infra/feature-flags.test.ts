// Feature flags are pinned (infra/feature-flags.ts) so that an aws-cdk-lib upgrade cannot change the template
// without a review: a newly recommended flag, or a changed recommendation, fails here until it is adopted.
import { CURRENTLY_RECOMMENDED_FLAGS } from 'aws-cdk-lib/cx-api';
import { describe, expect, it } from 'vitest';
import { FEATURE_FLAGS } from '../../infra/feature-flags.js';
import { REQUIRED_CONFIG, synthStack } from './synth.js';

describe('CDK feature flags', () => {
  it('pins every flag aws-cdk-lib currently recommends, at the recommended value', () => {
    expect(FEATURE_FLAGS).toEqual(CURRENTLY_RECOMMENDED_FLAGS);
  });

  it('applies the pinned flags to the app every synth builds', () => {
    const { stack } = synthStack(REQUIRED_CONFIG);
    for (const [flag, value] of Object.entries(FEATURE_FLAGS)) {
      expect(stack.node.tryGetContext(flag), flag).toEqual(value);
    }
  });
});
