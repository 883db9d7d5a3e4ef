// The poller's configuration, read from its environment and checked at cold start. Every variable is
// declared once in core/config/settings.ts, from which the stack also writes it.
import { type Env, readEnv } from '../core/config/env.js';
import { FEED_SETTINGS, POLLER_RESOURCES, POLLER_SETTINGS, POLLER_TUNING } from '../core/config/settings.js';

export interface PollerConfig {
  feedId: string;
  cursorTableName: string;
  partnerBaseUrl: string;
  tokenParameterName: string;
  ordersQueueUrl: string;
  /** Downstream subscriber name → its queue URL. */
  downstreamQueueUrls: Record<string, string>;
  quarantineBucketName: string;
  pageSize: number;
  /** Undefined: no page cap; the run ends when caught up or out of time. */
  maxPagesPerRun: number | undefined;
  /** False: the feed is switched off and every run does nothing. */
  enabled: boolean;
  /** Runs that may follow one another at once while a backlog lasts (0: every run waits for the schedule). */
  maxContinuations: number;
  minAgeMinutes: number | undefined;
  vendorIds: string[] | undefined;
  orderIds: number[] | undefined;
  arrayQueryEncoding: 'repeat' | 'comma';
  recoveryLookbackMinutes: number | undefined;
  /** Time kept free at the end of an invocation to publish and commit the last page. */
  safetyMarginMs: number;
  /**
   * How long the lease outlives the invocation's own deadline, so only a crashed invocation's lease ever
   * lapses. The time a crashed run blocks the feed is its remaining time plus this.
   */
  leaseGraceMs: number;
  authBackoff: { initialMs: number; maxMs: number };
}

export function loadPollerConfig(env: Env): PollerConfig {
  const feed = FEED_SETTINGS;
  const poller = POLLER_SETTINGS;
  const tuning = POLLER_TUNING;
  const resources = POLLER_RESOURCES;
  return {
    feedId: readEnv(env, feed.feedId),
    cursorTableName: readEnv(env, resources.cursorTableName),
    partnerBaseUrl: readEnv(env, feed.partnerBaseUrl),
    tokenParameterName: readEnv(env, feed.tokenParameterName),
    ordersQueueUrl: readEnv(env, resources.ordersQueueUrl),
    downstreamQueueUrls: readEnv(env, resources.downstreamQueueUrls),
    quarantineBucketName: readEnv(env, resources.quarantineBucketName),
    pageSize: readEnv(env, poller.pageSize),
    maxPagesPerRun: readEnv(env, poller.maxPagesPerRun),
    enabled: readEnv(env, feed.enabled),
    maxContinuations: readEnv(env, poller.maxContinuations),
    minAgeMinutes: readEnv(env, feed.minAgeMinutes),
    vendorIds: readEnv(env, feed.vendorIds),
    orderIds: readEnv(env, tuning.orderIds),
    arrayQueryEncoding: readEnv(env, poller.arrayQueryEncoding),
    recoveryLookbackMinutes: readEnv(env, poller.cursorRecoveryLookbackMinutes),
    safetyMarginMs: readEnv(env, tuning.safetyMarginSeconds) * 1000,
    leaseGraceMs: readEnv(env, tuning.leaseGraceSeconds) * 1000,
    authBackoff: {
      initialMs: readEnv(env, tuning.authBackoffInitialSeconds) * 1000,
      maxMs: readEnv(env, tuning.authBackoffMaxSeconds) * 1000,
    },
  };
}
