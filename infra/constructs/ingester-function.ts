// The one place that fixes how our Lambda functions are built and run; poller, dispatcher and consumer only
// add their entry, sizing, environment and grants.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  ApplicationLogLevel,
  Architecture,
  Code,
  LoggingFormat,
  Runtime,
  SystemLogLevel,
  Tracing,
} from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { OrderFeedConfig } from '../config.js';
import { checkEnvironmentSize } from './lambda-environment.js';

/** Rewrites the bundle's source map to cover our own code only (see infra/bundling/own-code-source-map.ts). */
const TRIM_SOURCE_MAP_SCRIPT = fileURLToPath(new URL('../bundling/trim-source-map.ts', import.meta.url));

/**
 * Context key: a hash of everything the functions' bundles are built from, set by tools/deploy-local.ts for its
 * synths into moto. With it the bundles get that custom asset hash, known before bundling, and CDK skips esbuild
 * for a bundle whose `asset.<hash>` directory the cloud assembly already holds (deploy-local copies the bundles of
 * its last synth with the same sources there). Unset, as in every other synth, CDK hashes what esbuild built.
 */
export const BUNDLE_SOURCES_HASH_CONTEXT_KEY = 'bundleSourcesHash';

/**
 * Where the published construct library ships each function's prebuilt bundle (`dist/lambda/<name>/index.mjs`,
 * built by packages/construct/build.ts from this repository's own bundling), relative to this module once compiled.
 * In this repository no such folder exists, and the functions are bundled from source at synth.
 */
export function prebuiltBundle(name: string): string | undefined {
  const directory = fileURLToPath(new URL(`../../lambda/${name}/`, import.meta.url));
  return existsSync(`${directory}index.mjs`) ? directory : undefined;
}

export interface IngesterFunctionProps {
  /** Absolute path of the handler module; it must export `handler`. */
  readonly entry: string;
  /** The function's name among the prebuilt bundles (`poller`, `dispatcher`, `consumer`). */
  readonly bundle: string;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize: number;
  /** Unset (undefined) variables are left out. */
  readonly environment: Readonly<Record<string, string | undefined>>;
  /**
   * The longest each deploy-time value of `environment` can get (a generated name, a queue URL), by
   * variable: the whole environment is checked against Lambda's 4 KB at synth.
   */
  readonly longestDeployTimeValues: Readonly<Record<string, number>>;
  /** Why the role holds another action on "*" beside X-Ray's (its acknowledgement says both). */
  readonly resourceStarReason?: string;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * A Node.js 22 / ARM64 function bundled locally by esbuild as a minified ESM bundle with source maps,
 * with its own log group (JSON format, fixed retention), X-Ray active tracing, and its own role holding
 * nothing but the right to write that log group and trace segments: every other permission is granted
 * explicitly by the construct that uses it.
 *
 * The AWS SDK v3 is bundled rather than taken from the runtime, so the deployed code runs the exact
 * client versions pinned in package-lock.json and exercised by the tests (the runtime's copy changes
 * under us without notice). The price is bundle size: about 1.0 MB minified for the poller (four
 * clients and undici's Agent), 0.4 MB for the consumer, well within Lambda's limits.
 *
 * Stack traces are source-mapped (`--enable-source-maps`), but the map keeps only our own code: Node
 * reads and parses the whole map at cold start, and the AWS SDK's and undici's mappings made it 1.7 MB
 * (6-12 ms of the poller's init; now 82 KB) for frames that stay readable enough as bundle positions.
 * infra/bundling/esbuild-options.ts restates these options (LAMBDA_ESBUILD_OPTIONS): keep the two in step.
 *
 * Installed from the published construct library, the function takes the bundle built that way and shipped in
 * the package (prebuiltBundle), so an app synthesizes it without our source or esbuild of its own.
 */
export class IngesterFunction extends NodejsFunction {
  /** The function's own role (also reachable as the optional `role`), for the grants of the caller. */
  readonly executionRole: Role;

  constructor(scope: Construct, id: string, props: IngesterFunctionProps) {
    const prebuilt = prebuiltBundle(props.bundle);
    if (prebuilt === undefined && !existsSync(props.entry)) {
      throw new Error(`${id}: handler entry ${props.entry} does not exist`);
    }
    if ('NODE_OPTIONS' in props.environment)
      throw new Error(`${id}: NODE_OPTIONS is fixed by IngesterFunction`);
    const environment: Record<string, string> = {};
    for (const [name, value] of Object.entries(props.environment)) {
      if (value !== undefined) environment[name] = value;
    }
    // No heap flag: with none, Lambda's runtime sizes V8's heap from memorySize (infra/README.md).
    environment.NODE_OPTIONS = '--enable-source-maps';
    checkEnvironmentSize(`${scope.node.path}/${id}`, environment, props.longestDeployTimeValues);
    const sourcesHash: unknown = scope.node.tryGetContext(BUNDLE_SOURCES_HASH_CONTEXT_KEY);
    // Created beside the function (ids derived from its id) because `this` does not exist before super().
    const logGroup = new LogGroup(scope, `${id}LogGroup`, {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${props.description}`,
    });
    super(scope, id, {
      entry: props.entry,
      handler: 'handler',
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      timeout: props.timeout,
      memorySize: props.memorySize,
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      applicationLogLevelV2: ApplicationLogLevel.INFO,
      systemLogLevelV2: SystemLogLevel.WARN,
      // X-Ray active tracing: Lambda samples invocations and the function's spans (Powertools Tracer,
      // functions/core/observability) join its trace. CDK grants xray:PutTraceSegments and
      // xray:PutTelemetryRecords to the role for it.
      tracing: Tracing.ACTIVE,
      environment,
      ...(prebuilt === undefined ? {} : { code: Code.fromAsset(prebuilt), handler: 'index.handler' }),
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        mainFields: ['module', 'main'],
        // ESM bundles have no `require`; some bundled CommonJS dependencies still call it.
        banner:
          "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        externalModules: [],
        bundleAwsSDK: true,
        forceDockerBundling: false,
        ...(typeof sourcesHash === 'string' ? { assetHash: `${props.bundle}-${sourcesHash}` } : {}),
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          // Run from the project root (CDK's working directory for hooks), where tsx is installed.
          afterBundling: (_inputDir, outputDir) => [
            `"${process.execPath}" --import tsx "${TRIM_SOURCE_MAP_SCRIPT}" "${outputDir}/index.mjs.map"`,
          ],
        },
      },
    });
    this.executionRole = role;
    logGroup.grantWrite(role);
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords, which CDK grants, support no ' +
        'resource-level permissions, so their resource is "*" (AWS managed policy AWSXRayDaemonWriteAccess alike).' +
        (props.resourceStarReason === undefined ? '' : ` ${props.resourceStarReason}`),
    });
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Pinned to Node.js 22 (LTS, supported by Lambda until 2027) so production runs the major version the ' +
        'bundle targets and the tests exercise; moving to a newer runtime is a deliberate, tested change.',
    });
  }
}

/**
 * What Powertools reads in every function: its service name, the metrics namespace, the log level; and the
 * instance's id, the `Ingester` dimension of every metric.
 */
export function observabilityEnvironment(
  serviceName: string,
  config: Pick<OrderFeedConfig, 'metricsNamespace'>,
  instanceId: string,
) {
  return {
    POWERTOOLS_SERVICE_NAME: serviceName,
    POWERTOOLS_METRICS_NAMESPACE: config.metricsNamespace,
    POWERTOOLS_LOG_LEVEL: 'INFO',
    INGESTER_INSTANCE: instanceId,
  };
}
