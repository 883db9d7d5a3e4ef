// Command line entry of the partner API simulator: `npm run simulator -- --port 8080 [options]`.
// Flow: parse and check flags (usage + exit 2 on any mistake) → start → print how to use it → run until
// SIGINT/SIGTERM → close.

import { flagInteger, isMain, parseFlags, reportUsageError, UsageError } from '../cli-args.js';
import { FAULT_CATALOGUE, FAULT_DETAILS } from './faults.js';
import { SCENARIOS } from './scenarios/index.js';
import { startSimulator } from './server.js';
import {
  FAULT_SCENARIO_IDS,
  type FaultOptions,
  HOSTILE_SCENARIO_IDS,
  SCENARIO_IDS,
  type SimulatorOptions,
} from './types.js';

const DEV_TOKEN = 'test-token';

const USAGE = `Usage: npm run simulator -- [options]

  --port N                   port to listen on (default 8080; 0 = any free port)
  --host H                   address to bind (default 127.0.0.1)
  --token T                  accepted bearer token (default: env PARTNER_API_TOKEN, else '${DEV_TOKEN}')
  --orders N                 serve a generated feed of N orders under /v1 (default: empty /v1 stream)
  --seed S                   feed seed (default 1)
  --vendors V                vendor locations vendor-1..vendor-V (default 5)
  --currencies C1,C2         currencies of the feed (default EUR)
  --duplicate-versions F     fraction of versions served twice (0..1)
  --out-of-order-versions F  fraction of orders with a version served after a higher one (0..1)
  --fault-seed S             seed of the fault dice (default 1)
  --fault-rate-limit P       probability of a 429 per /v1 request (0..1)
  --fault-retry-after S      seconds announced in Retry-After (default 1)
  --fault-server-error P     probability of a 5xx burst per /v1 request (0..1)
  --fault-server-error-burst N  length of a 5xx burst (default 1)
  --fault-connection-reset P probability of a reset connection per /v1 request (0..1)
  --fault-slow P             probability of a slow answer per /v1 request (0..1)
  --fault-slow-ms MS         delay of a slow answer (default 200)
  --fault-repeat-page P      probability that a cursor answers the previous page again (0..1)
  --fault-expire-cursor P    probability that a cursor answers 404 pageId not found (0..1)
  --faults JSON              any faults of the catalogue as FaultOptions JSON, over the --fault-* flags, e.g.
                             '{"encoding":1,"codings":["gzip"],"slow":0.1,"slowMs":12000}' (README: Faults;
                             \`npm run fuzz\` prints the faults of a seed's partner in this form)
  --scenario-retry-after S   Retry-After of the test-rate-limit scenario (default 1)
  --token-rate-limit R       rate-limit each token to R requests/s (429 + Retry-After), on every path
  --token-rate-burst N       requests the per-token bucket holds (default R)
  --help                     print this help
`;

const OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string' },
  token: { type: 'string' },
  orders: { type: 'string' },
  seed: { type: 'string' },
  vendors: { type: 'string' },
  currencies: { type: 'string' },
  'duplicate-versions': { type: 'string' },
  'out-of-order-versions': { type: 'string' },
  'fault-seed': { type: 'string' },
  'fault-rate-limit': { type: 'string' },
  'fault-retry-after': { type: 'string' },
  'fault-server-error': { type: 'string' },
  'fault-server-error-burst': { type: 'string' },
  'fault-connection-reset': { type: 'string' },
  'fault-slow': { type: 'string' },
  'fault-slow-ms': { type: 'string' },
  'fault-repeat-page': { type: 'string' },
  'fault-expire-cursor': { type: 'string' },
  faults: { type: 'string' },
  'scenario-retry-after': { type: 'string' },
  'token-rate-limit': { type: 'string' },
  'token-rate-burst': { type: 'string' },
  help: { type: 'boolean' },
} as const;

type Values = ReturnType<typeof parseFlags<typeof OPTIONS>>;

function integer(values: Values, name: keyof Values, min: number, max: number): number | undefined {
  const raw = values[name];
  return typeof raw === 'string' ? flagInteger(`--${name}`, raw, min, max) : undefined;
}

function fraction(values: Values, name: keyof Values): number | undefined {
  const raw = values[name];
  if (raw === undefined || typeof raw !== 'string') return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new UsageError(`--${name} must be a number from 0 to 1 (got '${raw}')`);
  }
  return value;
}

/** `--faults`: a JSON object of FaultOptions fields the catalogue knows (faults.ts), checked by name and type. */
function faultsJson(raw: string): Partial<FaultOptions> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new UsageError('--faults must be a JSON object, e.g. \'{"encoding":1,"codings":["gzip"]}\'');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError('--faults must be a JSON object');
  const known = new Set<string>(['seed', ...FAULT_CATALOGUE.map((entry) => entry.option), ...FAULT_DETAILS]);
  for (const [key, value] of Object.entries(parsed)) {
    if (!known.has(key)) throw new UsageError(`--faults: unknown field "${key}" (README: Faults)`);
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new UsageError(`--faults: ${key} must be a finite number`);
  }
  return parsed as Partial<FaultOptions>;
}

export interface CliConfig {
  options: SimulatorOptions;
  /** Where the token came from, for the banner (never printed unless it is the dev default). */
  tokenSource: 'default' | 'env' | 'flag';
  help: boolean;
}

/** Parses the command line; throws UsageError on anything it does not understand. */
export function parseCli(args: string[], env: NodeJS.ProcessEnv): CliConfig {
  const values: Values = parseFlags(args, OPTIONS);
  const tokenSource = values.token !== undefined ? 'flag' : env.PARTNER_API_TOKEN ? 'env' : 'default';
  const token = values.token ?? (env.PARTNER_API_TOKEN || DEV_TOKEN);
  if (token.trim() === '' || /\s/.test(token))
    throw new UsageError('the token must be non-empty, without spaces');
  const options: SimulatorOptions = {
    token,
    port: integer(values, 'port', 0, 65_535) ?? 8080,
    host: values.host ?? '127.0.0.1',
  };
  const orders = integer(values, 'orders', 0, 1_000_000);
  if (orders !== undefined) {
    const currencies = values.currencies?.split(',').map((c) => c.trim());
    if (currencies?.some((c) => !/^[A-Z]{3}$/.test(c)))
      throw new UsageError('--currencies takes ISO 4217 codes');
    options.feed = {
      orders,
      seed: integer(values, 'seed', 0, 2 ** 32 - 1) ?? 1,
      vendors: integer(values, 'vendors', 1, 10_000) ?? 5,
      ...(currencies ? { currencies } : {}),
      ...(values['duplicate-versions'] ? { duplicateVersions: fraction(values, 'duplicate-versions') } : {}),
      ...(values['out-of-order-versions']
        ? { outOfOrderVersions: fraction(values, 'out-of-order-versions') }
        : {}),
    };
  } else if (values.seed || values.vendors || values.currencies) {
    throw new UsageError('--seed, --vendors and --currencies need --orders');
  }
  const faults: FaultOptions = { seed: integer(values, 'fault-seed', 0, 2 ** 32 - 1) ?? 1 };
  const set = <K extends keyof FaultOptions>(key: K, value: FaultOptions[K] | undefined): void => {
    if (value !== undefined) faults[key] = value;
  };
  set('rateLimit', fraction(values, 'fault-rate-limit'));
  set('retryAfterSeconds', integer(values, 'fault-retry-after', 0, 3_600));
  set('serverError', fraction(values, 'fault-server-error'));
  set('serverErrorBurst', integer(values, 'fault-server-error-burst', 1, 1_000));
  set('connectionReset', fraction(values, 'fault-connection-reset'));
  set('slow', fraction(values, 'fault-slow'));
  set('slowMs', integer(values, 'fault-slow-ms', 0, 600_000));
  set('repeatPage', fraction(values, 'fault-repeat-page'));
  set('expireCursor', fraction(values, 'fault-expire-cursor'));
  if (values.faults !== undefined) Object.assign(faults, faultsJson(values.faults));
  if (Object.keys(faults).length > 1) options.faults = faults;
  const retryAfter = integer(values, 'scenario-retry-after', 0, 3_600);
  if (retryAfter !== undefined) options.scenarioRetryAfterSeconds = retryAfter;
  const perToken = integer(values, 'token-rate-limit', 1, 100_000);
  const burst = integer(values, 'token-rate-burst', 1, 100_000);
  if (burst !== undefined && perToken === undefined)
    throw new UsageError('--token-rate-burst needs --token-rate-limit');
  if (perToken !== undefined) {
    options.tokenRateLimit = { requestsPerSecond: perToken, ...(burst === undefined ? {} : { burst }) };
  }
  return { options, tokenSource, help: values.help === true };
}

function banner(url: string, config: CliConfig): string {
  const { options, tokenSource } = config;
  const tokenLine =
    tokenSource === 'default'
      ? `token: ${options.token} (development default)`
      : `token: from ${tokenSource === 'env' ? 'PARTNER_API_TOKEN' : '--token'}`;
  const header =
    tokenSource === 'default'
      ? `Authorization: Bearer ${options.token}`
      : 'Authorization: Bearer $PARTNER_API_TOKEN';
  const feed = options.feed
    ? `generated feed: ${options.feed.orders} orders, seed ${options.feed.seed}, ${options.feed.vendors} vendors`
    : 'generated feed: none (/v1 serves the empty stream; add --orders N)';
  const width = Math.max(...[...SCENARIO_IDS, ...FAULT_SCENARIO_IDS].map((id) => id.length));
  const list = (ids: readonly (keyof typeof SCENARIOS)[]) =>
    ids.map((id) => `  ${id.padEnd(width)}  ${SCENARIOS[id].summary}`);
  return [
    `partner API simulator listening on ${url}`,
    tokenLine,
    feed,
    options.faults ? `faults: ${JSON.stringify(options.faults)}` : 'faults: none',
    ...(options.tokenRateLimit ? [`rate limit per token: ${JSON.stringify(options.tokenRateLimit)}`] : []),
    '',
    'try:',
    `  curl -s -H '${header}' '${url}/v1/orderUpdates?pageSize=5'`,
    `  curl -s -H '${header}' '${url}/test-order-lifecycle/v1/orderUpdates'`,
    `  curl -s -H '${header}' '${url}/test-versioning/v1/orders/3009000001'`,
    '',
    'scenarios (prefix /<scenario_id>/v1/...):',
    ...list(SCENARIO_IDS),
    '',
    'partners nobody scripted (same prefix form; tools/simulator/README.md says how each run ends):',
    ...list(HOSTILE_SCENARIO_IDS),
    '',
    'named faults of the catalogue (same prefix form; tools/simulator/README.md, Faults):',
    ...list(FAULT_SCENARIO_IDS),
    '',
    'Ctrl-C to stop.',
  ].join('\n');
}

async function main(): Promise<void> {
  let config: CliConfig;
  try {
    config = parseCli(process.argv.slice(2), process.env);
  } catch (err) {
    process.exit(reportUsageError(err, USAGE, 'error: '));
  }
  if (config.help) {
    process.stdout.write(USAGE);
    return;
  }
  const simulator = await startSimulator(config.options);
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping after ${simulator.requests.length} requests\n`);
    simulator.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`error while closing: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  // Handlers first: whoever reads the banner may signal at once.
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stdout.write(`${banner(simulator.url, config)}\n`);
}

// Runs only as a program (`tsx tools/simulator/cli.ts`), not when a test imports parseCli.
if (isMain(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`simulator failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
