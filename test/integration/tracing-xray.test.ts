// The module-level Powertools Tracer as it runs on Lambda. Outside Lambda the tracer is off, so a test in
// this process would prove nothing: the fixture runs in a child process with Lambda's tracing environment (the
// X-Ray SDK in Lambda mode, a facade segment per invocation from _X_AMZN_TRACE_ID) and this test is its X-Ray
// daemon: a UDP socket that receives every subsegment document the SDK sends. The documents are what X-Ray
// would index: the spans, their annotations and metadata, nesting, errors, and never the token.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('../fixtures/tracing/lambda-invocations.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = `tracing-test-token-${randomBytes(6).toString('hex')}`;
const SENTINEL = 'end-of-test-datagrams';

/** What the tests read of a subsegment document. */
interface XRayDocument {
  name: string;
  id: string;
  trace_id: string;
  parent_id?: string;
  type?: string;
  namespace?: string;
  annotations?: Record<string, unknown>;
  metadata?: Record<string, Record<string, unknown>>;
  error?: boolean;
  fault?: boolean;
  cause?: { exceptions?: Array<{ type?: string; message?: string }> };
  aws?: Record<string, unknown>;
}

const traceId = () => `1-${Math.floor(Date.now() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;
const traceIds = [traceId(), traceId(), traceId(), traceId()] as const;

let raw: string[] = [];
let documents: XRayDocument[] = [];
let child: {
  runIds: [string, string];
  partnerTraceHeaders: unknown[];
  dynamoTraceHeaders: unknown[];
};

/** Runs the fixture with `daemon` as its X-Ray daemon; resolves with its one line of output (the last). */
async function runFixture(daemon: Socket): Promise<typeof child> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', FIXTURE], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      AWS_REGION: 'us-east-1',
      // What Lambda sets in a function with active tracing (the trace id itself per invocation).
      LAMBDA_TASK_ROOT: '/var/task',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      AWS_LAMBDA_FUNCTION_NAME: 'order-feed-poller',
      POWERTOOLS_SERVICE_NAME: 'order-feed-poller',
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${(daemon.address() as AddressInfo).port}`,
      TEST_PARTNER_TOKEN: TOKEN,
      TEST_TRACE_IDS: traceIds.join(','),
    },
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
}

beforeAll(async () => {
  const daemon = createSocket('udp4');
  daemon.bind(0, '127.0.0.1');
  await once(daemon, 'listening');
  const received: string[] = [];
  const sentinel = new Promise<void>((resolve) => {
    daemon.on('message', (message) => {
      const text = message.toString('utf8');
      if (text === SENTINEL) resolve();
      else received.push(text);
    });
  });
  child = await runFixture(daemon);
  // The child has exited, so every datagram it sent is queued on this socket; one sent after them is
  // received after them (one queue, in order), so when it arrives all of the child's have too.
  const sender = createSocket('udp4');
  sender.send(SENTINEL, (daemon.address() as AddressInfo).port, '127.0.0.1');
  await sentinel;
  sender.close();
  daemon.close();
  raw = received;
  // Each datagram: the daemon protocol header line, then one segment document.
  documents = received.map((text) => {
    const [header, body] = text.split('\n');
    expect(JSON.parse(header ?? '')).toEqual({ format: 'json', version: 1 });
    return JSON.parse(body ?? '') as XRayDocument;
  });
}, 60_000);

const inTrace = (index: 0 | 1 | 2 | 3) => documents.filter((doc) => doc.trace_id === traceIds[index]);
const named = (docs: XRayDocument[], name: string) => docs.filter((doc) => doc.name === name);

describe('Powertools Tracer on Lambda (X-Ray daemon documents)', () => {
  it('annotates the poll run with cold start, service, run and batch id, and each page with feed, page and its messages’ correlation id', () => {
    const trace = inTrace(0);
    const [run] = named(trace, '## poll run');
    const runId = child.runIds[0];

    expect(run?.annotations).toEqual({
      ColdStart: true,
      Service: 'order-feed-poller',
      runId,
      batchId: 'b-1',
    });
    expect(run?.metadata?.default).toMatchObject({ feeds: 1, pages: 2, versionsPublished: 3 });
    const pages = named(trace, '### page');
    expect(pages.map((page) => [page.annotations, page.metadata?.default])).toEqual([
      [
        { feedId: 'feed-a', page: 1, correlationId: `poll:${runId}:1` },
        { versions: 2, versionsPublished: 2, quarantined: 0 },
      ],
      [
        { feedId: 'feed-a', page: 2, correlationId: `poll:${runId}:2` },
        { versions: 2, versionsPublished: 1, quarantined: 1 },
      ],
    ]);
    // One span per partner request, metadata only (annotations are the pages').
    const fetches = named(trace, '### partner fetch');
    expect(fetches.map((fetch) => [fetch.annotations, fetch.metadata?.default])).toEqual([
      [undefined, { page: 1, versions: 2, rateLimited: false }],
      [undefined, { page: 2, versions: 2, rateLimited: false }],
    ]);
    for (const span of [...pages, ...fetches]) expect(span.parent_id).toBe(run?.id);
  });

  it('marks a failed run and its partner request with the errors, on a later invocation that is no cold start', () => {
    const trace = inTrace(1);
    const [run] = named(trace, '## poll run');
    const [fetch] = named(trace, '### partner fetch');

    expect(run?.annotations).toMatchObject({ ColdStart: false, runId: child.runIds[1] });
    expect(run?.fault || run?.error).toBe(true);
    expect(run?.cause?.exceptions?.[0]?.message).toBe('poll run failed: feed-a auth-failed');
    expect(fetch?.parent_id).toBe(run?.id);
    expect(fetch?.cause?.exceptions?.[0]?.type).toBe('PartnerError');
    expect(named(trace, '### page')).toEqual([]);
  });

  it('records a captured AWS SDK call inside the span it is made from, and sends the trace header on', () => {
    const trace = inTrace(2);
    const [lookup] = named(trace, '### lookup');
    const [call] = named(trace, 'DynamoDB');

    expect(call).toMatchObject({ namespace: 'aws', parent_id: lookup?.id });
    expect(call?.aws).toMatchObject({ operation: 'GetItem', table_name: 'orders' });
    expect(child.dynamoTraceHeaders).toEqual([
      expect.stringMatching(new RegExp(`^Root=${traceIds[2]};Parent=${call?.id};Sampled=1`)),
    ]);
  });

  it('annotates each consumer record with order id and version (exact strings) and correlation id, inside the batch span', () => {
    const trace = inTrace(3);
    const [batch] = named(trace, '## order batch');
    const records = named(trace, '### order version');
    const runId = child.runIds[0];

    expect(batch?.annotations).toEqual({ ColdStart: false, Service: 'order-feed-poller' });
    expect(batch?.metadata?.default).toMatchObject({ records: 5, applied: 3, stale: 1, failed: 1 });
    const summary = (record: XRayDocument) => [
      record.annotations,
      record.metadata?.default?.outcome ?? record.cause?.exceptions?.[0]?.type,
    ];
    expect(records.map(summary)).toEqual(
      expect.arrayContaining([
        [{ orderId: '1', version: '3', correlationId: `poll:${runId}:1` }, 'applied'],
        [{ orderId: '3', version: '3', correlationId: `poll:${runId}:2` }, 'applied'],
        [{ orderId: '9223372036854775807', version: '3', correlationId: 'poll:req-9:1' }, 'applied'],
        [{ orderId: '1', version: '2', correlationId: 'poll:req-8:1' }, 'stale'],
        // No valid body: the correlation id comes from the attribute, and the span carries the error.
        [{ correlationId: 'reconcile:req-2' }, 'OrderVersionMessageError'],
      ]),
    );
    expect(records).toHaveLength(5);
    for (const record of records) expect(record.parent_id).toBe(batch?.id);
  });

  it('sends each span as a subsegment of its invocation’s trace, no trace header to the partner API, and never the token', () => {
    expect(documents.length).toBeGreaterThan(0);
    for (const doc of documents)
      expect([doc.type, traceIds.includes(doc.trace_id)]).toEqual(['subsegment', true]);
    expect(child.partnerTraceHeaders).toEqual([null, null, null]);
    for (const text of raw) expect(text).not.toContain(TOKEN);
  });
});
