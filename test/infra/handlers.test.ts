// The stack bundles these entry files; each must exist and export `handler` (Handler: index.handler).
// Read as text: importing a handler would run its cold-start configuration checks.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONSUMER_ENTRY } from '../../infra/constructs/consumer.js';
import { POLLER_ENTRY } from '../../infra/constructs/poller.js';

describe.each([
  ['poller', POLLER_ENTRY, 'functions/poller/handler.ts'],
  ['consumer', CONSUMER_ENTRY, 'functions/consumer/handler.ts'],
])('%s entry', (_name, entry, relative) => {
  it(`is ${relative}`, () => {
    expect(entry.endsWith(relative)).toBe(true);
  });

  it('exports handler', () => {
    const source = readFileSync(entry, 'utf8');

    expect(source).toMatch(/export\s+(const\s+handler\s*=|(async\s+)?function\s+handler\s*\()/);
  });
});
