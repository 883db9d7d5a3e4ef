// The real poller and consumer handlers, built by their factories from a function's environment (as the
// deployed stack writes it) and the caller's AWS clients, instead of importing handler.ts with
// process.env set. Each call builds an independent pair, so several pipelines can run in one process.
// Used by local mode, the integration tests and the benchmarks.
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import {
  type BatchCounts,
  type ConsumerHandler,
  createConsumerHandler,
} from '../../functions/consumer/create-handler.js';
import { DynamoCursorStore } from '../../functions/core/adapters/dynamo-cursor-store.js';
import { S3Quarantine } from '../../functions/core/adapters/s3-quarantine.js';
import { SqsFanoutPublisher } from '../../functions/core/adapters/sqs-fanout-publisher.js';
import { SsmTokenProvider } from '../../functions/core/adapters/ssm-token.js';
import type { Env } from '../../functions/core/config/settings.js';
import type { Continuation, CursorStore, OrderVersionPublisher } from '../../functions/core/ingest/ports.js';
import { NO_METRICS, powertoolsMetrics } from '../../functions/core/observability/powertools.js';
import { loadPollerConfig } from '../../functions/poller/config.js';
import { createPollerHandler, type PollerHandler } from '../../functions/poller/create-handler.js';
import { createBudgetedPartner } from '../../functions/poller/partner.js';
import type { AwsAt } from '../aws.js';

type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
const LOG_LEVELS: readonly string[] = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'];
const asLogLevel = (value: string | undefined): LogLevel | undefined =>
  value !== undefined && LOG_LEVELS.includes(value.toUpperCase())
    ? (value.toUpperCase() as LogLevel)
    : undefined;

type HandlerClients = Pick<AwsAt, 'dynamo' | 'sqs' | 's3' | 'ssm'>;

interface LevelOptions {
  /** Handler log level; default the environment's POWERTOOLS_LOG_LEVEL, else WARN (deployed: INFO). */
  logLevel?: LogLevel;
  /** Print the functions' EMF metrics to stdout as Lambda would; default: metrics are dropped. */
  emitMetrics?: boolean;
}

const logLevelOf = (options: LevelOptions, env: Env): LogLevel =>
  options.logLevel ?? asLogLevel(env.POWERTOOLS_LOG_LEVEL) ?? 'WARN';

function metricsFor(options: LevelOptions, env: Env, service: string, feedId?: string) {
  if (!options.emitMetrics) return NO_METRICS;
  const metrics = new Metrics({
    serviceName: service,
    namespace: env.POWERTOOLS_METRICS_NAMESPACE ?? 'OrderFeedIngester',
  });
  return powertoolsMetrics(metrics, feedId === undefined ? undefined : { feedId });
}

/** One feed's poller handler, from its function's environment (a deployment has one poller per feed). */
export function buildPollerHandler(
  options: LevelOptions & {
    env: Env;
    clients: HandlerClients;
    /** False: no shared request budget, each feed paces itself only (the bench's comparison). */
    shareBudget?: boolean;
    /** Self-continuation (default: none, every run waits for its caller). */
    continuation?: Continuation;
    /** Wraps the real adapters, e.g. to time or fail them (the bench times publish and commit). */
    wrap?: {
      publisher?: (real: OrderVersionPublisher) => OrderVersionPublisher;
      cursorStore?: (real: CursorStore) => CursorStore;
    };
  },
): PollerHandler {
  const { clients, env } = options;
  const config = loadPollerConfig(env);
  const service = env.POWERTOOLS_SERVICE_NAME ?? 'order-feed-poller';
  const tokens = new SsmTokenProvider(clients.ssm, config.tokenParameterName);
  const wrapPublisher = options.wrap?.publisher ?? ((real: OrderVersionPublisher) => real);
  const wrapCursorStore = options.wrap?.cursorStore ?? ((real: CursorStore) => real);
  const logger = new Logger({ serviceName: service, logLevel: logLevelOf(options, env) });
  return createPollerHandler({
    config,
    logger,
    metrics: metricsFor(options, env, service, config.feedId),
    tokens,
    cursorStore: wrapCursorStore(new DynamoCursorStore(clients.dynamo, config.cursorTableName)),
    partner: createBudgetedPartner(config, {
      token: () => tokens.token(),
      dynamo: clients.dynamo,
      logger,
      ...(options.shareBudget === false ? { shareBudget: false } : {}),
    }),
    publisher: wrapPublisher(
      new SqsFanoutPublisher(clients.sqs, [
        config.ordersQueueUrl,
        ...Object.values(config.downstreamQueueUrls),
      ]),
    ),
    quarantine: new S3Quarantine(clients.s3, config.quarantineBucketName),
    ...(options.continuation ? { continuation: options.continuation } : {}),
  });
}

/** The consumer's handler, and its records so far summed over its invocations. */
export function buildConsumerHandler(options: LevelOptions & { env: Env; clients: HandlerClients }): {
  consumer: ConsumerHandler;
  consumerTotals: Readonly<BatchCounts>;
} {
  const { clients, env } = options;
  const config = loadConsumerConfig(env);
  const service = env.POWERTOOLS_SERVICE_NAME ?? 'order-feed-consumer';
  const consumerTotals: BatchCounts = { applied: 0, stale: 0, failed: 0 };
  const consumer = createConsumerHandler({
    orders: {
      client: clients.dynamo,
      tableName: config.ordersTableName,
      ...(config.history ? { history: config.history } : {}),
    },
    logger: new Logger({ serviceName: service, logLevel: logLevelOf(options, env) }),
    metrics: metricsFor(options, env, service),
    onBatchSettled: (counts) => {
      consumerTotals.applied += counts.applied;
      consumerTotals.stale += counts.stale;
      consumerTotals.failed += counts.failed;
    },
  });
  return { consumer, consumerTotals };
}
