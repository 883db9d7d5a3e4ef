import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCli } from '../../../tools/simulator/cli.js';

const CLI = fileURLToPath(new URL('../../../tools/simulator/cli.ts', import.meta.url));

function run(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    env: { ...process.env, PARTNER_API_TOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('parseCli', () => {
  it('defaults to port 8080 on 127.0.0.1 with the development token', () => {
    const config = parseCli([], {});
    expect(config.options).toEqual({ token: 'test-token', port: 8080, host: '127.0.0.1' });
    expect(config.tokenSource).toBe('default');
  });

  it('takes the token from PARTNER_API_TOKEN, and --token over it', () => {
    expect(parseCli([], { PARTNER_API_TOKEN: 'from-env' })).toMatchObject({
      options: { token: 'from-env' },
      tokenSource: 'env',
    });
    expect(parseCli(['--token', 'flag'], { PARTNER_API_TOKEN: 'from-env' }).options.token).toBe('flag');
  });

  it('builds the feed and fault options', () => {
    const { options } = parseCli(
      [
        '--orders',
        '500',
        '--seed',
        '4',
        '--vendors',
        '3',
        '--fault-rate-limit',
        '0.1',
        '--fault-slow-ms',
        '50',
      ],
      {},
    );
    expect(options.feed).toEqual({ orders: 500, seed: 4, vendors: 3 });
    expect(options.faults).toEqual({ seed: 1, rateLimit: 0.1, slowMs: 50 });
  });

  it('takes any faults of the catalogue as --faults JSON, over the --fault-* flags', () => {
    const { options } = parseCli(
      [
        '--orders',
        '10',
        '--fault-rate-limit',
        '0.1',
        '--faults',
        '{"encoding":1,"codings":["br"],"rateLimit":0.5}',
      ],
      {},
    );
    expect(options.faults).toEqual({ seed: 1, rateLimit: 0.5, encoding: 1, codings: ['br'] });
  });

  it.each([
    ['--bogus'],
    ['--faults', 'gzip'],
    ['--faults', '[1]'],
    ['--faults', '{"gzip":1}'],
    ['--port', 'eighty'],
    ['--port', '70000'],
    ['--orders', '-1'],
    ['--fault-rate-limit', '2'],
    ['--seed', '3'],
    ['positional'],
  ])('refuses %s', (...args) => {
    expect(() => parseCli(args, {})).toThrow();
  });
});

describe('the simulator command', () => {
  it('prints the URL and scenarios, serves, and stops cleanly on SIGTERM', async () => {
    const child = run(['--port', '0', '--orders', '20']);
    const exited = exitOf(child);
    let output = '';
    child.stdout?.setEncoding('utf8');
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout?.on('data', (chunk: string) => {
        output += chunk;
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match?.[1] && output.includes('Ctrl-C')) resolve(match[1]);
      });
      child.once('exit', () => reject(new Error(`exited early: ${output}`)));
    });
    expect(output).toContain('token: test-token');
    expect(output).toContain('test-multi-location');
    expect(output).toContain('far-future-retry-after');
    expect(output).toContain('curl');
    const res = await fetch(`${url}/v1/orderUpdates`, { headers: { authorization: 'Bearer test-token' } });
    expect(res.status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('does not print a token that came from the environment', async () => {
    const child = run(['--port', '0'], { PARTNER_API_TOKEN: 'secret-value' });
    const exited = exitOf(child);
    let output = '';
    child.stdout?.setEncoding('utf8');
    await new Promise<void>((resolve) =>
      child.stdout?.on('data', (chunk: string) => {
        output += chunk;
        if (output.includes('Ctrl-C')) resolve();
      }),
    );
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toContain('token: from PARTNER_API_TOKEN');
    expect(output).not.toContain('secret-value');
  });

  it('prints usage and exits 2 on a bad flag', async () => {
    const child = run(['--nope']);
    let errors = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      errors += chunk;
    });
    expect(await exitOf(child)).toBe(2);
    expect(errors).toContain('Usage:');
  });
});
