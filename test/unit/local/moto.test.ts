import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MissingToolError, missingTools, requireTools } from '../../../tools/local/moto.js';

const bin = mkdtempSync(join(tmpdir(), 'order-feed-path-'));
const empty = mkdtempSync(join(tmpdir(), 'order-feed-path-'));
writeFileSync(join(bin, 'moto_server'), '#!/bin/sh\n');
chmodSync(join(bin, 'moto_server'), 0o755);
writeFileSync(join(bin, 'cfn-lint'), 'not executable');
afterAll(() => {
  rmSync(bin, { recursive: true, force: true });
  rmSync(empty, { recursive: true, force: true });
});

describe('missingTools', () => {
  it('finds an executable file in any PATH directory, and not a file that cannot be run', () => {
    expect(missingTools(['moto_server', 'cfn-lint'], [empty, bin].join(delimiter))).toEqual(['cfn-lint']);
  });
});

describe('requireTools', () => {
  it('names each missing tool and the one command that installs it, and passes when every tool is on PATH', () => {
    expect(() => requireTools(['moto_server', 'cfn-lint'], empty)).toThrow(
      new MissingToolError(
        'moto_server and cfn-lint are not installed (not on PATH): install them with pip install "moto[server]" cfn-lint',
      ),
    );
    expect(() => requireTools(['cfn-lint'], empty)).toThrow(
      /^cfn-lint is not installed .*install it with pip/,
    );
    expect(() => requireTools(['moto_server'], bin)).not.toThrow();
  });
});
