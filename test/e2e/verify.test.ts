// `npm run verify` as a user runs it, on a few spec scenarios (every scenario's end state is asserted through
// the same handlers by test/integration/pipeline-scenarios.test.ts; the full 17/17 is run by hand): against the
// built-in simulator they PASS on every configured feed; against a partner that does not behave as the spec
// says, verify FAILs with a reason and exits 1. One emulator serves both runs (the stack is deployed once).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalAwsClients, parseAwsEndpoint, readDeployment } from '../../tools/local/runtime.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';
import { runCli } from './cli.js';

const VERIFY = 'tools/local/verify.ts';
let moto: RunningMoto;
let partner: ScriptedServer;
const workDir = mkdtempSync(join(tmpdir(), 'verify-test-'));

beforeAll(async () => {
  moto = await startMoto();
  partner = await startScriptedServer();
});
afterAll(async () => {
  await partner?.close();
  await moto?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

const verify = async (args: string[], env: Record<string, string> = {}) => {
  const { code, stdout, stderr } = await runCli(['--aws-endpoint', moto.endpoint, ...args], env, VERIFY);
  return { code: code ?? 1, stdout, stderr };
};

describe('npm run verify', () => {
  it('passes the scenarios asked for (an empty stream among them) on every configured feed, each feed with its own cursor, and writes --json', async () => {
    const json = join(workDir, 'results.json');

    const result = await verify([
      '--feeds',
      '2',
      '--scenario',
      'test-versioning',
      '--scenario',
      'test-empty-stream',
      '--scenario',
      'test-rate-limit',
      '--json',
      json,
    ]);

    expect(result.code, result.stdout + result.stderr).toBe(0);
    // The AWS SDK's Node.js 20 notice is turned off, as in every CLI of the tools.
    expect(result.stderr).not.toContain('NodeVersionSupportWarning');
    expect(result.stdout).toMatch(/test-versioning\s+PASS/);
    expect(result.stdout).toMatch(/test-empty-stream\s+PASS/);
    expect(result.stdout).toMatch(/test-rate-limit\s+PASS/);
    expect(result.stdout).toContain('3 passed, 0 failed');
    const rows = JSON.parse(readFileSync(json, 'utf8')) as Array<{ scenario: string; pass: boolean }>;
    expect(rows.map((row) => [row.scenario, row.pass])).toEqual([
      ['test-versioning', true],
      ['test-empty-stream', true],
      ['test-rate-limit', true],
    ]);
    // Both feeds ran the last scenario to the end, each on its own cursor item.
    const aws = createLocalAwsClients(parseAwsEndpoint(moto.endpoint));
    try {
      const deployment = await readDeployment(aws);
      expect(deployment.pollers.map((poller) => poller.feedId)).toEqual(['feed-1', 'feed-2']);
      const { Items = [] } = await aws.dynamo.send(new ScanCommand({ TableName: deployment.cursorTable }));
      const feeds = Items.map((item) => unmarshall(item)).filter(
        (item) => !String(item.feedId).includes('#'),
      );
      expect(feeds.map((item) => [item.feedId, item.lastRunOutcome]).sort()).toEqual([
        ['feed-1', 'caught-up'],
        ['feed-2', 'caught-up'],
      ]);
    } finally {
      aws.destroy();
    }
  });

  it('fails a partner that serves nothing for a scenario that needs data, naming why, and a partner that stays down past --give-up-after, for that reason, and never prints the token', async () => {
    // One partner for two scenarios: test-versioning answered with an empty stream; test-empty-stream, which an
    // empty table would pass, answered 503 for as long as verify asks.
    partner.setFallback((request) =>
      request.pathname.startsWith('/test-empty-stream/')
        ? { status: 503, body: { message: 'down for maintenance' } }
        : { status: 200, body: { data: [], hasMore: false } },
    );
    const token = 'partner-test-token-9c1e77f0d2';

    const result = await verify(
      [
        ...['--feeds', '2', '--test-base-url', partner.url, '--give-up-after', '3s'],
        ...['--scenario', 'test-versioning', '--scenario', 'test-empty-stream'],
      ],
      { PARTNER_API_TOKEN: token },
    );

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/test-versioning\s+FAIL\s+.*no orders stored/);
    // It fails because the partner never answered.
    expect(result.stdout).toMatch(
      /test-empty-stream\s+FAIL\s+.*gave up waiting for the partner after 3s without progress.*503/,
    );
    expect(result.stdout + result.stderr).not.toContain(token);
    expect(partner.requests.every((request) => request.headers.authorization === `Bearer ${token}`)).toBe(
      true,
    );
    expect(partner.requests.map((request) => request.pathname)).toContain('/test-versioning/v1/orderUpdates');
  });

  it('prints usage and exits 2 on a bad flag, a bad --give-up-after or a test URL without a token', async () => {
    const [bad, badFeeds, badGiveUp, noToken] = await Promise.all([
      verify(['--frobnicate']),
      verify(['--feeds', '9']),
      verify(['--give-up-after', 'soon']),
      verify(['--test-base-url', 'https://partner.example/test'], { PARTNER_API_TOKEN: '' }),
    ]);

    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Usage: npm run verify');
    expect(badFeeds.code).toBe(2);
    expect(badFeeds.stderr).toContain('--feeds must be an integer from 1 to 5');
    expect(badGiveUp.code).toBe(2);
    expect(badGiveUp.stderr).toContain('--give-up-after must be a duration from 1s to 24h');
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('needs a test token');
  });
});
