// Section 12: freshness, from a version becoming visible at the partner to its row in the orders table and
// its message in a downstream queue, at a 1-minute and a 5-minute schedule, with each schedule's idle cost.
// How it is measured: minutes of real schedule cannot run here, so a time model joins two parts.
//   1. measured: d, from a run's start to (a) the row written by the consumer and (b) the message received
//      from the downstream queue, for a page of new versions: the real poller (one page per run) and the
//      real consumer invoked as soon as the poller returns (Lambda's event source long-polls an idle queue),
//      against moto and the simulator, `samples` times;
//   2. modelled: a version becomes visible at a uniform moment of the schedule interval S and waits for the
//      next run, U × S. Freshness = U × S + d, over an even grid of U crossed with the measured d's.
// Idle cost per feed per month at each schedule: the fleet's, every line item (section 14, fleet-cost.ts).
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { buildConsumer } from '../../functions/consumer/build-consumer.js';
import { loadConsumerConfig } from '../../functions/consumer/config.js';
import { createObservability } from '../../functions/core/observability/powertools.js';
import {
  createPipelineResources,
  drainQueue,
  pipelineEnv,
  useEmulator,
} from '../../tools/harness/pipeline.js';
import { singleFeedPoller } from '../../tools/harness/single-feed.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import type { RunningMoto } from '../../tools/local/moto.js';
import { startSimulator } from '../../tools/simulator/index.js';
import { figure, formatNumber, type Section } from './report.js';

const TOKEN = 'bench-freshness-token-3b9e0c71';

export interface FreshnessMeasurement {
  samples: number;
  /** Run start → row in the orders table, ms, per sample. */
  toRowMs: number[];
  /** Run start → message received from the downstream queue, ms, per sample. */
  toDownstreamMs: number[];
}

export async function measureFreshness(options: {
  moto: RunningMoto;
  samples: number;
  latencyMs: number;
  seed: number;
}): Promise<FreshnessMeasurement> {
  const pageSize = 5;
  const sim = await startSimulator({
    token: TOKEN,
    latencyMs: options.latencyMs,
    feed: { seed: options.seed, orders: Math.ceil((options.samples * pageSize) / 3) + 2, vendors: 3 },
  });
  await options.moto.reset();
  const aws = useEmulator(options.moto);
  try {
    const resources = await createPipelineResources(aws, { token: TOKEN });
    const env = pipelineEnv(resources, sim.url, { PAGE_SIZE: String(pageSize), MAX_PAGES_PER_RUN: '1' });
    // Quiet (pipelineEnv: WARN, no metrics), as the harness runs them.
    const fleetPoller = singleFeedPoller(aws, env, createObservability('order-feed-poller', env));
    const poller = (_event: unknown, context: Context) => fleetPoller.poll(context);
    const consumer = buildConsumer(
      aws,
      loadConsumerConfig(env),
      createObservability('order-feed-consumer', env),
    );
    const toRowMs: number[] = [];
    const toDownstreamMs: number[] = [];
    for (let i = 0; i < options.samples; i += 1) {
      const started = performance.now();
      const result = await poller({ source: 'aws.events' }, lambdaContext('poller', 60_000));
      if (result.versionsPublished === 0) break;
      const [row, message] = await Promise.all([
        drainQueue(aws, resources.ordersQueueUrl, { consume: consumer }).then(() => performance.now()),
        receiveAll(aws, resources.downstreamQueueUrl, result.versionsPublished).then(() => performance.now()),
      ]);
      toRowMs.push(row - started);
      toDownstreamMs.push(message - started);
    }
    return { samples: toRowMs.length, toRowMs, toDownstreamMs };
  } finally {
    aws.destroy();
    await sim.close();
  }
}

async function receiveAll(
  aws: ReturnType<typeof useEmulator>,
  queueUrl: string,
  count: number,
): Promise<void> {
  let received = 0;
  while (received < count) {
    const output = await aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    received += output.Messages?.length ?? 0;
  }
}

/** The p-th percentile (0..100) of `values` (nearest rank). */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
}

/** Freshness at a schedule of `minutes`: U × S (an even grid of 1,000 U's) + each measured d in turn. */
export function freshnessAt(minutes: number, measuredMs: readonly number[]): { p50: number; p99: number } {
  const grid = 1000;
  const values = Array.from(
    { length: grid },
    (_, i) => ((i + 0.5) / grid) * minutes * 60_000 + (measuredMs[i % measuredMs.length] ?? 0),
  );
  return { p50: percentile(values, 50) / 1000, p99: percentile(values, 99) / 1000 };
}

/** `idleCost(minutes)`: the fleet's idle cost of a feed per month, all-in, at that schedule (section 14). */
export function freshnessSection(
  m: FreshnessMeasurement,
  idleCost: (scheduleMinutes: number) => number,
  schedules: readonly number[] = [1, 5],
): Section {
  return {
    id: 'freshness',
    title: `Freshness: partner → orders table row and downstream message, time model over ${m.samples} measured runs (moto)`,
    floorIs:
      'targets at the chosen default: p99 ≤ 90 s (ratio to 90 s), idle cost all-in ≤ $0.15 per feed per month (the fleet, section 14)',
    figures: schedules.flatMap((minutes) => {
      const row = freshnessAt(minutes, m.toRowMs);
      const downstream = freshnessAt(minutes, m.toDownstreamMs);
      const label = `${minutes}-minute schedule`;
      return [
        figure(`${label}: to the orders row p50`, 's', row.p50),
        figure(`${label}: to the orders row p99`, 's', row.p99, 90),
        figure(`${label}: to the downstream message p99`, 's', downstream.p99),
        figure(`${label}: idle cost per feed per month (fleet, all-in)`, '$', idleCost(minutes), 0.15, 1),
      ];
    }),
    formulas: [
      `measured d (run start → row): p50 ${formatNumber(percentile(m.toRowMs, 50))} ms, p99 ${formatNumber(percentile(m.toRowMs, 99))} ms; → downstream message p50 ${formatNumber(percentile(m.toDownstreamMs, 50))} ms`,
      "freshness = U × S + d, U uniform over the interval (the wait for the next scheduled run); idle cost: the fleet's all-in (section 14)",
      ...schedules.map((minutes) => {
        const row = freshnessAt(minutes, m.toRowMs);
        const downstream = freshnessAt(minutes, m.toDownstreamMs);
        return `  ${minutes} min: row p50 ${formatNumber(row.p50)} s, p99 ${formatNumber(row.p99)} s; downstream p50 ${formatNumber(downstream.p50)} s, p99 ${formatNumber(downstream.p99)} s; idle $${formatNumber(idleCost(minutes))}/feed/month`;
      }),
    ],
    details: { ...m },
  };
}
