// The public message contract, pinned to what the released code produced. test/fixtures/golden-messages.json was
// written by commit 186cab9 (before the runtime was simplified): for each raw partner record (the spec's order
// shapes, 64-bit ids, empty and odd strings, unknown fields and enum values, invalid records), what the reader made
// of it and the exact SQS message (body, attributes, size) the poller publishes. Today's reader and builder must
// give the same bytes, and the JSON Schema and AsyncAPI documents must be the released ones. Changing any of this
// is a contract change: bump schemaVersion, say so in functions/core/contract/README.md, and regenerate the pins.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  buildOrderVersionMessage,
  SCHEMA_VERSION,
} from '../../../functions/core/contract/order-version-message.js';
import { parseJsonExact, stringifyJsonExact } from '../../../functions/core/model/int64.js';
import { parseOrder } from '../../../functions/core/model/parse-order.js';

const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const golden = parseJsonExact(read('../../fixtures/golden-messages.json')) as Array<{ record: string }>;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('the message contract', () => {
  it('is schemaVersion 1 with the released JSON Schema and AsyncAPI documents', () => {
    expect(SCHEMA_VERSION).toBe(1);
    // The consumer kit's major version is the schema's (packages/contract: 1.x reads schemaVersion 1).
    const kit = JSON.parse(read('../../../packages/contract/package.json')) as { version: string };
    expect(kit.version.split('.')[0]).toBe(String(SCHEMA_VERSION));
    expect(sha256(read('../../../functions/core/contract/order-version-message.schema.json'))).toBe(
      '0ddfaa5d4edd46731a750753dc738d84e2ed1adbaffef281369297f3b9cb1257',
    );
    expect(sha256(read('../../../functions/core/contract/asyncapi.json'))).toBe(
      '4025160f969f9db95b082ea587410edb09f8efe8aeba4a52268c2628deabc368',
    );
  });

  it('reads every pinned record and builds every message exactly as the released code did', () => {
    const records = golden.map((entry) => entry.record);
    expect(records.length).toBeGreaterThan(10);

    const today = records.map((record) => {
      const parsed = parseOrder(parseJsonExact(record));
      if (!parsed.ok) return { record, parsed };
      const message = buildOrderVersionMessage(parsed.order, {
        feedId: 'golden-feed',
        pageId: 'cursor-7',
        fetchedAt: '2026-11-24T12:00:00.000Z',
        correlationId: 'poll:golden-run:3',
        origin: 'poll',
        findings: parsed.findings,
      });
      return { record, parsed, message };
    });

    // Through JSON and back, so both sides hold the same kinds of values (int64 exact: bigint beyond 2^53).
    expect(parseJsonExact(stringifyJsonExact(today))).toEqual(golden);
  });
});
