// `npm start` (tools/local/start.ts) against a partner that cannot be reached, as a user runs it: waited for,
// given up on with exit 75 and the emulator it started kept, then resumed by the printed command. Its own file,
// since the run starts and deploys into its own emulator (nothing to share with local-mode.test.ts) and so the
// tier's two workers share local mode's time.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLocalAwsClients, parseAwsEndpoint, readDeployment } from '../../tools/local/runtime.js';
import { type RunningSimulator, SCENARIO_EXPECTATIONS, startSimulator } from '../../tools/simulator/index.js';
import { freePort } from '../support/moto.js';
import { killRunning, readSummaryFile, runCli, startCli, tableAndLedger } from './cli.js';

const TOKEN = 'local-mode-test-token-5d1e0c7b';
const workDir = mkdtempSync(join(tmpdir(), 'local-mode-outage-test-'));

afterEach(killRunning);
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

const summaryPath = (name: string) => join(workDir, `${name}.json`);

describe('npm start against a partner that is down', () => {
  it('waits out a partner that cannot be reached, gives up after --give-up-after with exit 75, the summary written and its own emulator kept running; the printed resume command, started while the partner is still down, drains in one run once it comes back, with the table exact', async () => {
    // Prepare: a partner nobody listens for (connection refused), its token in a file
    const port = await freePort();
    const apiUrl = `http://127.0.0.1:${port}/test-versioning`;
    const tokenFile = join(workDir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`);
    const expected = SCENARIO_EXPECTATIONS['test-versioning'];
    let keptPid: number | undefined;
    let partner: RunningSimulator | undefined;
    try {
      // Act 1: local mode with its own emulator (no --aws-endpoint)
      const gaveUp = await runCli([
        ...['--api-url', apiUrl, '--token-file', tokenFile, '--give-up-after', '15s'],
        ...['--summary-json', summaryPath('gave-up')],
      ]);
      const kept = /still runs at (http:\/\/localhost:\d+) \(pid (\d+)\)/.exec(gaveUp.stdout);
      keptPid = kept ? Number(kept[2]) : undefined;

      expect(gaveUp.code, gaveUp.stdout + gaveUp.stderr).toBe(75);
      // It said what it waited for, while it waited: the failure, the next run, the give-up.
      expect(gaveUp.stdout).toMatch(
        /waiting for the partner: \d+ failed run\(s\), the last ended retry-later: partner unreachable: .*ECONNREFUSED.*; (next run in \d+s|running again); gives up in \d+s/,
      );
      expect(gaveUp.stderr).toContain('error: gave up waiting for the partner after 15s without progress');
      const summary = readSummaryFile(summaryPath('gave-up'));
      expect(summary).toMatchObject({
        outcome: 'gave-up',
        apiUrl,
        orders: 0,
        keptEmulator: { endpoint: kept?.[1], pid: keptPid },
        counters: { pages: 0 },
      });
      expect(summary.counters.polls).toBeGreaterThanOrEqual(2);
      // The emulator outlives the process, with the stack and the cursor table in it.
      const endpoint = kept?.[1] ?? '';
      const keptAws = createLocalAwsClients(parseAwsEndpoint(endpoint));
      try {
        expect((await readDeployment(keptAws)).cursorTable).toBe(summary.cursorTable);
        const command = /^ {2}npm start -- (.*)$/m.exec(gaveUp.stdout)?.[1] ?? '';
        expect(command).toBe(
          `--aws-endpoint ${endpoint} --api-url ${apiUrl} --token-file ${tokenFile} --give-up-after 15s --summary-json ${summaryPath('gave-up')}`,
        );
        expect(gaveUp.stdout + gaveUp.stderr).not.toContain(TOKEN);

        // Act 2: the resume command while the partner is still down; the partner comes back after its first failure
        const resumed = startCli(command.split(' '));
        await resumed.waitForLine(/poller run ended retry-later: partner unreachable/);
        partner = await startSimulator({ token: TOKEN, port });
        const end = await resumed.exited;

        expect(end.code, end.stdout + end.stderr).toBe(0);
        expect(readSummaryFile(summaryPath('gave-up'))).toMatchObject({
          outcome: 'drained',
          deadLettered: 0,
        });
        expect(await tableAndLedger(keptAws, summary.ordersTable)).toEqual({
          orders: expected.orders,
          sales: expected.sales,
        });
      } finally {
        keptAws.destroy();
      }
    } finally {
      await partner?.close();
      try {
        if (keptPid !== undefined) process.kill(keptPid, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
  }, 300_000);
});
