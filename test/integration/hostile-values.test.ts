// A partner that sends what the spec allows but AWS cannot carry as is, through the real handlers, a scripted
// partner over HTTP and moto: what can be stored is stored exactly or with a recorded change, the rest is
// quarantined with its reason, the cursor moves on, messages match the contract, no dead-letter queue is used.
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3_MAX_KEY_BYTES } from '../../functions/core/aws-limits.js';
import type { Int64 } from '../../functions/core/model/int64.js';
import {
  type AwsClients,
  createPipelineResources,
  drainQueue,
  type PipelineResources,
  pipelineEnv,
  quarantinedKeys,
  scanOrders,
  stackTemplate,
  useEmulator,
} from '../../tools/harness/pipeline.js';
import { money, productItem, sampleOrder } from '../fixtures/orders.js';
import { contractViolations } from '../support/contract.js';
import { handlersFor } from '../support/handlers.js';
import { type RunningMoto, workerMoto } from '../support/moto.js';
import { readLedger, readQuarantined, receiveAll } from '../support/pipeline.js';
import { type ScriptedServer, startScriptedServer } from '../support/scripted-http-server.js';

let moto: RunningMoto;
let aws: AwsClients;
let partner: ScriptedServer;
let resources: PipelineResources;
let outcome: unknown;
let stored: Map<Int64, Record<string, unknown>>;
let quarantined: string[];
let downstream: string[];

/** `bytes` of random CJK text (3 bytes a character in UTF-8): gzip saves little of it. */
function randomText(bytes: number): string {
  const random = randomBytes(bytes);
  let text = '';
  for (let i = 0; i + 1 < bytes / 3; i++)
    text += String.fromCharCode(0x4e00 + (((random[i] ?? 0) << 4) | ((random[i + 1] ?? 0) & 15)));
  return text;
}

/** An order of `count` line items, each with a name of `nameBytes` bytes (random: `incompressible`). */
function bigOrder(id: number, count: number, nameBytes: number, incompressible = false) {
  const items = Array.from({ length: count }, (_, index) => ({
    ...productItem(
      `item-${index}`,
      incompressible ? randomText(nameBytes) : `Item ${index} `.padEnd(nameBytes, 'x'),
      100,
    ),
    barcode: String(4_000_000_000_000 + index),
  }));
  return sampleOrder({
    id,
    items,
    total: money(100 * count),
    customerPayments: [{ type: 'online', collectedBy: 'platform', payment: money(100 * count) }],
    deliveryFee: undefined,
    serviceFee: money(0),
  });
}

// Every hostile value in one page of one feed run (a pipeline round trip costs seconds under load); each test
// below asserts on its part of that run. The page is written by hand: JSON.stringify cannot write an id beyond
// int64 or a 64-bit integer exactly, and writes a lone surrogate as the escape \ud800, as a partner's JSON would.
const huge = bigOrder(10, 1500, 300); // ~600 KB: over DynamoDB's 400 KB, under SQS's 1 MiB
const wide = (version: string, status: string) =>
  JSON.stringify(sampleOrder({ id: 111, version: 222, vendorId: 'vendor-64', status: status as 'accepted' }))
    .replace('"id":111', '"id":9223372036854775807')
    .replace('"version":222', `"version":${version}`)
    .replaceAll('"amount":3098', '"amount":9007199254740993');
const page = [
  sampleOrder({ id: 1, vendorId: '' }),
  sampleOrder({ id: 2, vendorId: 'vendor\u0001\u001f' }),
  sampleOrder({ id: 3, vendorId: 'vendor-\uD800' }),
  sampleOrder({ id: 4, placedAt: 253_402_300_800_000 }), // year 10000
  sampleOrder({ id: 5, placedAt: '9999-12-31T23:30:00-01:00' }), // rolls over into year 10000
  { ...sampleOrder({ id: 6 }), loyaltyTier: 'gold' },
  // `<vendorId>#EUR` is the sales index key: 2,048 bytes fit, 2,049 AWS refuses (moto would not).
  sampleOrder({ id: 7, vendorId: 'v'.repeat(2045) }),
  sampleOrder({ id: 8, vendorId: 'v'.repeat(2044) }),
  sampleOrder({ id: 9, vendorId: 'v'.repeat(5000) }), // its id, beyond int64, is written below
  huge,
  bigOrder(11, 3000, 400), // ~1.4 MB: over SQS's 1 MiB
  bigOrder(12, 1000, 900, true), // ~950 KB of random text: gzip saves too little
].map((order) => {
  const json = JSON.stringify(order);
  return order.id === 9 ? json.replace('"id":9,', `"id":${'9'.repeat(5000)},`) : json;
});
// The higher version first, then the lower one: as JS numbers both would be 9007199254740992.
page.push(wide('9007199254740993', 'accepted'), wide('9007199254740992', 'placed'));

beforeAll(async () => {
  // The stack's template is read (and hashed) while moto starts.
  [moto, partner] = await Promise.all([workerMoto(), startScriptedServer(), stackTemplate()]);
  aws = useEmulator(moto);
  resources = await createPipelineResources(aws, { maxReceiveCount: 2 });
  partner.setFallback({
    status: 200,
    body: `{"data":[${page.join(',')}],"hasMore":false,"nextPageId":"c1"}`,
  });
  const handlers = handlersFor(aws, pipelineEnv(resources, partner.url));
  outcome = await handlers.poll();
  await drainQueue(aws, resources.ordersQueueUrl, handlers);
  stored = await scanOrders(aws, resources.ordersTable);
  quarantined = await quarantinedKeys(aws, resources.quarantineBucket);
  downstream = await receiveAll(aws, resources.downstreamQueueUrl);
});
afterAll(async () => {
  await Promise.all([partner?.close(), moto?.stop()]);
});

describe('hostile values from the partner', () => {
  it('keeps the feed moving: every version published or quarantined, messages match the contract, no dead letters', async () => {
    expect(outcome).toMatchObject({ kind: 'caught-up', versionsPublished: 8, quarantined: 6 });
    expect(downstream).toHaveLength(8);
    expect(contractViolations(downstream)).toEqual([]);
    expect(await receiveAll(aws, resources.ordersDlqUrl)).toEqual([]);
  });

  it('stores what AWS can hold, quarantines the rest with its reason', async () => {
    expect([...stored.keys()].map(String).sort()).toEqual(
      ['1', '2', '3', '6', '8', '10', '9223372036854775807'].sort(),
    );
    expect(Buffer.byteLength(String(stored.get(8)?.saleKey))).toBe(2048);
    expect(stored.get(1)?.vendorId).toBe('');
    expect(stored.get(2)?.vendorId).toBe('vendor\u0001\u001f');
    expect(stored.get(3)?.vendorId).toBe('vendor-\uFFFD');
    expect(stored.get(3)?.findingCodes).toEqual(new Set(['invalid-unicode-replaced']));
    expect(stored.get(6)?.findingCodes).toEqual(new Set(['unknown-field']));
    expect(stored.get(1)?.findingCodes).toBeUndefined();

    // 4, 5, 7, the unidentified one (id beyond int64), and 11 and 12 (too big for SQS).
    expect(quarantined).toHaveLength(6);
    // The quarantine takes what nothing else can: its keys stay short whatever the record's ids and values.
    for (const key of quarantined) expect(Buffer.byteLength(key)).toBeLessThanOrEqual(S3_MAX_KEY_BYTES);
    const tooLong = quarantined.find((key) => key.includes('/7/')) as string;
    expect(await readQuarantined(aws, resources.quarantineBucket, tooLong)).toMatchObject({
      orderId: 7,
      reason: expect.stringMatching(
        /^vendorId too long: the salesByVendor index key saleKey would be 2049 bytes/,
      ),
    });
    expect(quarantined.filter((key) => key.includes('/unidentified/'))).toHaveLength(1);
    for (const id of [11, 12]) expect(quarantined.filter((key) => key.includes(`/${id}/`))).toHaveLength(1);
  });

  it('carries an order too big for a DynamoDB item as one message and stores its items compressed', () => {
    expect(stored.get(10)?.itemsEncoding).toBe('gzip+json');
    const items = JSON.parse(gunzipSync(stored.get(10)?.itemsGzip as Uint8Array).toString('utf8'));
    expect(items).toEqual(huge.items);
    expect(downstream.filter((message) => message.includes('"id":10,'))).toHaveLength(1);
  });

  it('carries 64-bit ids, versions and amounts exactly, and keeps the higher of two versions 1 apart above 2^53', async () => {
    expect(stored.get(9_223_372_036_854_775_807n)).toMatchObject({
      orderId: 9_223_372_036_854_775_807n,
      version: 9_007_199_254_740_993n,
      status: 'accepted',
      total: { amount: 9_007_199_254_740_993n, currency: 'EUR' },
      saleAmount: 9_007_199_254_740_993n,
    });
    const ledger = await readLedger(aws, resources.ordersTable);
    expect(ledger.filter((total) => total.vendorId === 'vendor-64')).toEqual([
      { vendorId: 'vendor-64', currency: 'EUR', count: 1, amount: 9_007_199_254_740_993n },
    ]);
    const messages = downstream.filter((message) => message.includes('"id":9223372036854775807'));
    expect(messages).toHaveLength(2);
    for (const message of messages) expect(message).toContain('"amount":9007199254740993');
  });
});
