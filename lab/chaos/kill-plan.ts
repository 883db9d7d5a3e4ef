// Where the chaos runner SIGKILLs local mode: a seeded list of kill points, one per run of the child
// process (the run after the last kill goes to completion).
//   publish-commit      the poller has published the n-th page of this process (SendMessageBatch answered
//                       by the emulator) and has not committed its cursor: either the page's cursor commit
//                       (UpdateItem on the cursor table) arrives and is held, or the k-th SendMessageBatch
//                       of the page is answered and that answer is held; the child dies before either
//                       reaches it
//   consumer-mid-batch  the k-th PutItem of a consumer batch that has more orders to write is answered by
//                       the emulator (the answer is held): the batch dies half applied, nothing deleted
//   timer               a random delay after the process's first pipeline call (not during `cdk deploy`)
import { Random } from '../../tools/simulator/random.js';

export const KILL_KINDS = ['publish-commit', 'consumer-mid-batch', 'timer'] as const;
export type KillKind = (typeof KILL_KINDS)[number];

export type KillPoint =
  | {
      kind: 'publish-commit';
      /** The n-th page with messages in this process (1-based). */
      page: number;
      /** Hold the page's cursor commit, or the answer to its `send`-th SendMessageBatch. */
      at: 'before-commit' | 'after-send';
      send: number;
    }
  | { kind: 'consumer-mid-batch'; put: number }
  | { kind: 'timer'; delayMs: number };

export interface KillPlanSizes {
  /** Highest page number a publish-commit kill may wait for. */
  maxPage: number;
  /** Timer delays are drawn from [minDelayMs, maxDelayMs]. */
  minDelayMs: number;
  maxDelayMs: number;
}

/**
 * `count` kill points: the kinds in rounds (every kind once per round, so the counts differ by at most
 * one), each round in a seeded order. `fixedOrder` keeps the rounds in KILL_KINDS order: on a small feed a
 * timer kill early on may let the poller reach the end of the stream, after which no publish is left to
 * interrupt.
 */
export function planKills(
  seed: number,
  count: number,
  sizes: KillPlanSizes,
  fixedOrder = false,
): KillPoint[] {
  const random = new Random((seed ^ 0x5eed_c4a0) >>> 0);
  const kinds: KillKind[] = [];
  while (kinds.length < count) {
    const round: KillKind[] = [...KILL_KINDS];
    if (!fixedOrder) shuffle(random, round);
    kinds.push(...round.slice(0, count - kinds.length));
  }
  return kinds.map((kind): KillPoint => {
    if (kind === 'publish-commit') {
      return {
        kind,
        page: random.int(1, sizes.maxPage),
        at: random.chance(0.5) ? 'before-commit' : 'after-send',
        send: random.int(1, 5),
      };
    }
    if (kind === 'consumer-mid-batch') return { kind, put: random.int(2, 5) };
    return { kind, delayMs: random.int(sizes.minDelayMs, sizes.maxDelayMs) };
  });
}

function shuffle<T>(random: Random, values: T[]): void {
  for (let i = values.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    const a = values[i] as T;
    values[i] = values[j] as T;
    values[j] = a;
  }
}

export function describeKillPoint(point: KillPoint): string {
  switch (point.kind) {
    case 'publish-commit':
      return point.at === 'before-commit'
        ? `page ${point.page} published, its cursor commit held`
        : `page ${point.page}: answer to SendMessageBatch #${point.send} held`;
    case 'consumer-mid-batch':
      return `after PutItem #${point.put} of a batch`;
    case 'timer':
      return `${(point.delayMs / 1000).toFixed(1)} s after the first pipeline call`;
  }
}
