// The chaos runner's command line (node:util parseArgs, strict). `--quick` shrinks the feed and the
// number of kills for a smoke run; explicit flags still win over it.
import { parseFlags, UsageError } from '../../tools/cli-args.js';

export interface ChaosOptions {
  seed: number;
  kills: number;
  orders: number;
  quick: boolean;
  out: string;
}

export const USAGE = `Usage: npm run chaos -- [options]

  --seed N      seed of the feed, the faults and the kill points (default 1)
  --kills N     SIGKILLs of local mode before the run to completion (default 6; --quick: 3)
  --orders N    orders in the generated feed, about 3 versions each (default 800; --quick: 150)
  --quick       small feed, one kill of each kind (about 1-2 minutes)
  --out PATH    JSON report (default .local/chaos/latest.json)
  -h, --help    this text

Exit status: 0 when nothing was lost or wrong, the sales ledger equals the expected one and the poison
message ended in the dead-letter queue; 1 otherwise (or when local mode failed); 2 for a bad flag.
`;

const FLAGS = {
  seed: { type: 'string' },
  kills: { type: 'string' },
  orders: { type: 'string' },
  quick: { type: 'boolean' },
  out: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Parses argv (without node and script); throws UsageError for anything it does not accept. */
export function parseChaosArgs(argv: readonly string[]): ChaosOptions | 'help' {
  const values = parseFlags(argv, FLAGS);
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  return {
    seed: integer('--seed', values.seed, 1, 0),
    kills: integer('--kills', values.kills, quick ? 3 : 6, 0),
    orders: integer('--orders', values.orders, quick ? 150 : 800, 1),
    quick,
    out: values.out ?? '.local/chaos/latest.json',
  };
}

function integer(flag: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > 2 ** 32 - 1) {
    throw new UsageError(`${flag} must be an integer from ${min}, got "${raw}"`);
  }
  return value;
}
