// `npm run verify`: conformance against the partner's scenarios (spec section 4). Runs every scenario
// through the whole local pipeline (the real handlers, the deployed stack in an emulator) one after
// another on one deployment, and checks what each left behind against the spec's expectation
// (SPEC_CHECKS, simulator/scenarios/expectations.ts). Default: the built-in simulator. With --test-base-url and a test token, the
// partner's real test environment, so an integration can be certified before going live.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Order } from '../../functions/core/model/types.js';
import {
  flagInteger,
  parseCommandLine,
  parseFlags,
  quietSdkNodeVersionWarning,
  UsageError,
} from '../cli-args.js';
import type { ScenarioRun } from '../simulator/scenarios/expectations.js';
import { SCENARIO_IDS, type ScenarioId } from '../simulator/types.js';
import { DEFAULT_GIVE_UP_AFTER_MS } from './scheduling.js';
import { durationFlag, EXIT_GAVE_UP } from './start.js';

const USAGE = `Usage: npm run verify -- [options]

Runs every partner test scenario (spec section 4) through the whole pipeline and prints PASS/FAIL per
scenario. Exit 0 only when all pass.

  --test-base-url URL   the partner's test environment, e.g. https://partner.example/test (the scenario
                        id is appended). Omitted: the built-in simulator.
  --token-file PATH     file holding the test token (or env PARTNER_API_TOKEN); required with
                        --test-base-url. The token is never printed.
  --scenario ID         run only this scenario (repeatable)
  --feeds N             deploy N feeds (orderFeed.feeds) that each read the whole scenario, run side by side
                        by local mode: the checks must hold with every version arriving N times (1 to 5;
                        with --aws-endpoint, an emulator without the stack or with the same feeds)
  --give-up-after D     a partner that fails for a while (unreachable, 5xx, rate-limiting) is waited for,
                        as local mode does, until nothing progressed for D (90s, 15m, 2h; default ${DEFAULT_GIVE_UP_AFTER_MS / 60_000}m):
                        then the scenario FAILs, "gave up waiting for the partner after D"
  --aws-endpoint URL    reuse a running AWS emulator (e.g. moto_server); omitted: one is started
  --json PATH           also write the results as JSON
  --help                this text
`;

interface Options {
  /** Feeds to deploy (local mode's --feeds); undefined: the single feed. */
  feeds: number | undefined;
  testBaseUrl: string | undefined;
  token: string | undefined;
  scenarios: string[];
  awsEndpoint: string | undefined;
  jsonPath: string | undefined;
  /** Passed on to local mode as given (it is checked here, so a bad one is a usage error up front). */
  giveUpAfter: string | undefined;
}

function parseOptions(argv: string[]): Options | 'help' {
  const values = parseFlags(argv, {
    'test-base-url': { type: 'string' },
    'token-file': { type: 'string' },
    scenario: { type: 'string', multiple: true },
    feeds: { type: 'string' },
    'aws-endpoint': { type: 'string' },
    'give-up-after': { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean' },
  });
  if (values.help) return 'help';
  const scenarios = values.scenario ?? [...SCENARIO_IDS];
  for (const scenario of scenarios) {
    if (!(SCENARIO_IDS as readonly string[]).includes(scenario))
      throw new UsageError(`unknown scenario: ${scenario}`);
  }
  let token = process.env.PARTNER_API_TOKEN?.trim() || undefined;
  if (values['token-file']) {
    try {
      token = readFileSync(values['token-file'], 'utf8').trim();
    } catch {
      throw new UsageError(`cannot read --token-file ${values['token-file']}`);
    }
  }
  if (values['test-base-url'] && !token) {
    throw new UsageError('--test-base-url needs a test token: set PARTNER_API_TOKEN or pass --token-file');
  }
  const giveUpAfter = values['give-up-after'];
  if (giveUpAfter !== undefined) durationFlag('--give-up-after', giveUpAfter);
  return {
    feeds: values.feeds === undefined ? undefined : flagInteger('--feeds', values.feeds, 1, 5),
    testBaseUrl: values['test-base-url']?.replace(/\/+$/, ''),
    token,
    scenarios,
    awsEndpoint: values['aws-endpoint'],
    jsonPath: values.json,
    giveUpAfter,
  };
}

interface Result {
  scenario: string;
  pass: boolean;
  reason: string;
  seconds: number;
}

const START = fileURLToPath(new URL('./start.ts', import.meta.url));

/**
 * Runs local mode for one scenario as a user would, and gathers what it left behind; `gaveUp`: local mode gave
 * up waiting for the partner (its reason), which fails the scenario whatever the data shows.
 */
async function runScenario(
  apiUrl: string,
  token: string,
  endpoint: string,
  workDir: string,
  options: Pick<Options, 'feeds' | 'giveUpAfter'>,
): Promise<ScenarioRun & { gaveUp?: string }> {
  const summaryPath = join(workDir, `summary-${randomBytes(4).toString('hex')}.json`);
  const args = ['--import', 'tsx', START, '--aws-endpoint', endpoint, '--api-url', apiUrl, '--reset-data'];
  if (options.feeds !== undefined) args.push('--overlapping-feeds', String(options.feeds));
  if (options.giveUpAfter !== undefined) args.push('--give-up-after', options.giveUpAfter);
  const exitCode = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [...args, '--summary-json', summaryPath], {
      env: { ...process.env, PARTNER_API_TOKEN: token },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    child.on('exit', (code) => {
      // 3 (a 401) is what test-invalid-token expects; a give-up is reported in the table.
      if (code !== 0 && code !== 3 && code !== EXIT_GAVE_UP && stderr) process.stderr.write(stderr);
      resolve(code ?? 1);
    });
  });
  let summary: Record<string, unknown> = {};
  try {
    summary = JSON.parse(readFileSync(summaryPath, 'utf8'));
  } catch {
    // No summary: local mode failed before writing one; the check reports the exit code.
  }
  return {
    exitCode,
    outcome: typeof summary.outcome === 'string' ? summary.outcome : undefined,
    counters: summary.counters as ScenarioRun['counters'],
    sales: (summary.sales as ScenarioRun['sales']) ?? [],
    deadLettered: Number(summary.deadLettered ?? 0),
    quarantined: (summary.quarantined as string[]) ?? [],
    orders: typeof summary.ordersTable === 'string' ? await readOrders(summary.ordersTable) : [],
    ...(summary.outcome === 'gave-up'
      ? { gaveUp: String(summary.detail ?? 'gave up waiting for the partner') }
      : {}),
  };
}

async function readOrders(tableName: string): Promise<Order[]> {
  const [{ DynamoDBClient }, { scanOrders }] = await Promise.all([
    import('@aws-sdk/client-dynamodb'),
    import('../store/stored-order.js'),
  ]);
  const dynamo = new DynamoDBClient({});
  const orders = await scanOrders({ dynamo }, tableName);
  dynamo.destroy();
  return [...orders.values()] as unknown as Order[];
}

function printTable(results: Result[]): void {
  const width = Math.max(...results.map((result) => result.scenario.length), 'scenario'.length);
  console.log(`${'scenario'.padEnd(width)}  result  time     reason`);
  for (const result of results) {
    console.log(
      `${result.scenario.padEnd(width)}  ${(result.pass ? 'PASS' : 'FAIL').padEnd(6)}  ${`${result.seconds.toFixed(1)}s`.padEnd(7)}  ${result.reason}`,
    );
  }
  const passed = results.filter((result) => result.pass).length;
  console.log(`\n${passed} passed, ${results.length - passed} failed`);
}

async function main(): Promise<number> {
  const parsed = parseCommandLine(() => parseOptions(process.argv.slice(2)), USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const { options } = parsed;
  // Loaded once the flags parsed: --help and a bad flag answer without them.
  const [{ startSimulator }, { SPEC_CHECKS }, { EMULATOR_ENV, startMoto }] = await Promise.all([
    import('../simulator/index.js'),
    import('../simulator/scenarios/expectations.js'),
    import('./moto.js'),
  ]);
  // Before the first AWS client (here, and in each local mode run, which inherits the environment).
  quietSdkNodeVersionWarning();
  const cleanups: Array<() => Promise<void>> = [];
  const workDir = mkdtempSync(join(tmpdir(), 'order-feed-verify-'));
  cleanups.push(async () => rmSync(workDir, { recursive: true, force: true }));
  try {
    let endpoint = options.awsEndpoint;
    if (!endpoint) {
      const moto = await startMoto();
      cleanups.push(() => moto.stop());
      endpoint = moto.endpoint;
    }
    for (const [name, value] of Object.entries(EMULATOR_ENV)) process.env[name] ??= value;
    process.env.AWS_ENDPOINT_URL = endpoint;

    let baseUrl = options.testBaseUrl;
    let token = options.token;
    if (!baseUrl) {
      token ??= randomBytes(24).toString('base64url');
      const simulator = await startSimulator({ token });
      cleanups.push(() => simulator.close());
      baseUrl = simulator.url;
      console.log(`partner API: built-in simulator at ${baseUrl}`);
    } else {
      console.log(`partner API: ${baseUrl}/<scenario>`);
    }
    if (!token) throw new Error('no token');

    const results: Result[] = [];
    for (const scenario of options.scenarios) {
      const started = Date.now();
      const run = await runScenario(`${baseUrl}/${scenario}`, token, endpoint, workDir, options);
      const spec = SPEC_CHECKS[scenario as ScenarioId];
      // A partner down for longer than --give-up-after fails the scenario for that reason alone.
      const problems = run.gaveUp === undefined ? spec.check(run) : [run.gaveUp];
      const result = {
        scenario,
        pass: problems.length === 0,
        reason: problems.length === 0 ? spec.expectation : problems.join('; '),
        seconds: (Date.now() - started) / 1000,
      };
      results.push(result);
      console.log(`${result.pass ? 'PASS' : 'FAIL'} ${scenario} (${result.seconds.toFixed(1)}s)`);
    }
    console.log('');
    printTable(results);
    if (options.jsonPath) {
      writeFileSync(options.jsonPath, `${JSON.stringify(results, null, 2)}\n`);
    }
    return results.every((result) => result.pass) ? 0 : 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`verify failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
