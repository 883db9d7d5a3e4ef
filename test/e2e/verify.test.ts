// `npm run verify` as a user runs it: every spec scenario through local mode against the built-in
// simulator must PASS; against a partner that does not behave as the spec says, it must FAIL with a
// reason and exit 1. One emulator serves both runs (the stack is deployed once).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalAwsClients, parseAwsEndpoint, readDeployment } from '../../tools/local/runtime.js';
import { type RunningMoto, startMoto } from '../support/moto.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

const VERIFY = new URL('../../tools/local/verify.ts', import.meta.url).pathname;
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
});

function verify(args: string[], env: Record<string, string> = {}, endpoint = moto.endpoint) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', VERIFY, '--aws-endpoint', endpoint, ...args], {
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

describe('npm run verify', () => {
  it('passes every spec scenario against the built-in simulator', { timeout: 600_000 }, async () => {
    const json = join(workDir, 'all.json');

    const result = await verify(['--json', json]);

    const rows = JSON.parse(readFileSync(json, 'utf8')) as Array<{
      scenario: string;
      pass: boolean;
      reason: string;
    }>;
    expect(rows.filter((row) => !row.pass)).toEqual([]);
    expect(rows).toHaveLength(17);
    expect(result.stdout).toContain('17 passed, 0 failed');
    expect(result.code).toBe(0);
  });

  it('fails a partner that serves nothing for a scenario that needs data, naming why, and never prints the token', {
    timeout: 300_000,
  }, async () => {
    partner.setFallback({ status: 200, body: { data: [], hasMore: false } });
    const token = 'partner-test-token-9c1e77f0d2';

    const result = await verify(
      ['--test-base-url', partner.url, '--scenario', 'test-versioning', '--scenario', 'test-empty-stream'],
      { PARTNER_API_TOKEN: token },
    );

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/test-versioning\s+FAIL\s+.*no orders stored/);
    expect(result.stdout).toMatch(/test-empty-stream\s+PASS/);
    expect(result.stdout + result.stderr).not.toContain(token);
    expect(partner.requests.every((request) => request.headers.authorization === `Bearer ${token}`)).toBe(
      true,
    );
    expect(partner.requests.map((request) => request.pathname)).toContain('/test-versioning/v1/orderUpdates');
  });

  it('runs every configured feed: two feeds reading each scenario side by side still pass, each with its own cursor', {
    timeout: 300_000,
  }, async () => {
    // A stack with other feeds needs an emulator of its own (moto cannot update a stack).
    const ownMoto = await startMoto();
    try {
      const result = await verify(
        ['--feeds', '2', '--scenario', 'test-versioning', '--scenario', 'test-rate-limit'],
        {},
        ownMoto.endpoint,
      );

      expect(result.stdout).toMatch(/test-versioning\s+PASS/);
      expect(result.stdout).toMatch(/test-rate-limit\s+PASS/);
      expect(result.code).toBe(0);
      // Both feeds ran the last scenario to the end, each on its own cursor item.
      const aws = createLocalAwsClients(parseAwsEndpoint(ownMoto.endpoint));
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
    } finally {
      await ownMoto.stop();
    }
  });

  it('prints usage and exits 2 on a bad flag or a test URL without a token', async () => {
    const bad = await verify(['--frobnicate']);
    const badFeeds = await verify(['--feeds', '9']);
    expect(badFeeds.code).toBe(2);
    expect(badFeeds.stderr).toContain('--feeds must be an integer from 1 to 5');
    const noToken = await verify(['--test-base-url', 'https://partner.example/test'], {
      PARTNER_API_TOKEN: '',
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Usage: npm run verify');
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('needs a test token');
  });
});
