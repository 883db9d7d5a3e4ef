// The partner token parameters a deployment's functions may read: every parameter under `tokenParameterPath`
// (feeds added at runtime name theirs there), and the initial set's own parameters wherever they are. The
// poller reads a token's value (decrypted); the dispatcher only its version (no decryption, no KMS). The
// initial set's parameters are named one by one, but the set itself fits the dispatcher's environment (2,800
// bytes, infra/config.ts), which keeps them far within IAM's 10,240 characters of inline policy per role.
import { ArnFormat, Stack, Validations } from 'aws-cdk-lib';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { isUnderParameterPath, type OrderFeedConfig } from '../config.js';

export class TokenParameters {
  /** arn:…:parameter<path>* and the ARN of each initial token parameter outside the path. */
  readonly parameterArns: string[];
  /** The customer-managed keys of the initial set's parameters (`tokenKmsKeyArn`). */
  readonly keyArns: string[];
  private readonly stack: Stack;

  constructor(scope: Construct, config: Pick<OrderFeedConfig, 'tokenParameterPath' | 'feeds'>) {
    this.stack = Stack.of(scope);
    const parameterArn = (name: string) =>
      this.stack.formatArn({
        service: 'ssm',
        resource: 'parameter',
        resourceName: name.replace(/^\//, ''),
        arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
      });
    const outside = config.feeds
      .map((feed) => feed.tokenParameterName)
      .filter((name) => !isUnderParameterPath(name, config.tokenParameterPath));
    this.parameterArns = [
      parameterArn(`${config.tokenParameterPath}*`),
      ...[...new Set(outside)].map(parameterArn),
    ];
    this.keyArns = [
      ...new Set(config.feeds.flatMap((feed) => (feed.tokenKmsKeyArn ? [feed.tokenKmsKeyArn] : []))),
    ];
  }

  /**
   * ssm:GetParameter on the parameters. With `decrypt`, also kms:Decrypt on the customer-managed keys, only
   * when called through SSM; the AWS-managed `alias/aws/ssm` key needs no grant (its key policy lets any
   * principal of the account decrypt through SSM).
   */
  grantRead(role: IRole, options: { decrypt: boolean }): void {
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['ssm:GetParameter'], resources: this.parameterArns }),
    );
    if (options.decrypt && this.keyArns.length > 0) {
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: this.keyArns,
          conditions: { StringEquals: { 'kms:ViaService': `ssm.${this.stack.region}.amazonaws.com` } },
        }),
      );
    }
    const [pathArn] = this.parameterArns;
    const acknowledgement = {
      id: `AwsSolutions-IAM5[Resource::${nagResource(this.stack.resolve(pathArn))}]`,
      reason:
        'Feeds are added at runtime (npm run ops -- feeds add), each naming its token parameter: the role reads ' +
        'the parameters under tokenParameterPath, one SSM path of this deployment, and no other but the initial ' +
        "set's own.",
    };
    try {
      Validations.of(role).acknowledge(acknowledgement);
    } catch (error) {
      // aws-cdk-lib before the brace-aware rule ids (2.254 here: test/e2e/packages.test.ts) refuses an id whose
      // resource holds `::` (`<AWS::Partition>`): the app still synthesizes, and a cdk-nag run there reports
      // the finding this acknowledges.
      if (!(error instanceof Error && error.message.includes('Invalid validation rule ID'))) throw error;
    }
  }
}

/** A resolved ARN as cdk-nag names a finding's resource: `{ Ref: X }` as `<X>`, joined. */
function nagResource(resolved: unknown): string {
  if (typeof resolved === 'string') return resolved;
  const node = resolved as Record<string, unknown>;
  if (typeof node.Ref === 'string') return `<${node.Ref}>`;
  const join = node['Fn::Join'] as [string, unknown[]] | undefined;
  if (join) return join[1].map(nagResource).join(join[0]);
  throw new Error(`cannot name ${JSON.stringify(resolved)} as cdk-nag does`);
}
