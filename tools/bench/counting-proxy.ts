// A reverse proxy on 127.0.0.1 in front of the emulator that records every AWS call passing through
// it: service and operation (from X-Amz-Target, else the `Action=` form parameter, else the SigV4
// credential scope and the HTTP method for REST services such as S3), status, request and response
// bytes, the SQS queue addressed and, for DynamoDB PutItem, the table and item written.
import { Agent, createServer, type IncomingMessage, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Item } from '../../functions/core/adapters/dynamo-item-size.js';

export interface RecordedCall {
  service: string;
  operation: string;
  status: number;
  requestBytes: number;
  responseBytes: number;
  /** From the request's last byte received to the response's last byte forwarded. */
  ms: number;
  /** SQS: the queue name the call addressed. */
  queue?: string;
  /** DynamoDB: the table the call addressed. */
  table?: string;
  /** DynamoDB PutItem: the item as sent. */
  item?: Item;
}

export interface CountingProxy {
  readonly url: string;
  readonly calls: RecordedCall[];
  close(): Promise<void>;
}

const TARGET_SERVICES: Record<string, string> = {
  DynamoDB_20120810: 'dynamodb',
  AmazonSQS: 'sqs',
  AmazonSSM: 'ssm',
};

export function classify(
  headers: IncomingMessage['headers'],
  method: string,
  body: string,
): Omit<RecordedCall, 'status' | 'requestBytes' | 'responseBytes' | 'ms'> {
  const target = headers['x-amz-target'];
  const scope = /Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\//.exec(String(headers.authorization ?? ''))?.[1];
  let service = scope ?? 'unknown';
  let operation: string;
  let parsed: Record<string, unknown> | undefined;
  if (typeof target === 'string' && target.includes('.')) {
    const [prefix = '', name = ''] = target.split('.');
    service = TARGET_SERVICES[prefix] ?? scope ?? prefix;
    operation = name;
    try {
      parsed = JSON.parse(body) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
  } else {
    const action = /(?:^|&)Action=([^&]+)/.exec(body)?.[1];
    operation = action ?? method;
  }
  const call: Omit<RecordedCall, 'status' | 'requestBytes' | 'responseBytes' | 'ms'> = { service, operation };
  if (typeof parsed?.QueueUrl === 'string') call.queue = parsed.QueueUrl.split('/').pop() ?? parsed.QueueUrl;
  if (typeof parsed?.TableName === 'string') call.table = parsed.TableName;
  if (operation === 'PutItem' && typeof parsed?.Item === 'object' && parsed.Item !== null) {
    call.item = parsed.Item as Item;
  }
  return call;
}

export async function startCountingProxy(upstreamPort: number): Promise<CountingProxy> {
  const calls: RecordedCall[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const call = classify(req.headers, req.method ?? 'GET', body.toString('utf8'));
      const started = performance.now();
      const upstream = request(
        {
          host: '127.0.0.1',
          port: upstreamPort,
          method: req.method,
          path: req.url,
          headers: req.headers,
          agent,
        },
        (answer) => {
          let responseBytes = 0;
          answer.on('data', (chunk: Buffer) => {
            responseBytes += chunk.length;
          });
          answer.on('end', () => {
            calls.push({
              ...call,
              status: answer.statusCode ?? 0,
              requestBytes: body.length,
              responseBytes,
              ms: performance.now() - started,
            });
          });
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', (error) => {
        calls.push({
          ...call,
          status: 0,
          requestBytes: body.length,
          responseBytes: 0,
          ms: performance.now() - started,
        });
        res.destroy(error);
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve, reject) => {
        agent.destroy();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** Mean milliseconds per call by `service.operation`. */
export function meanMsByOperation(calls: readonly RecordedCall[]): Record<string, number> {
  const totals: Record<string, { ms: number; count: number }> = {};
  for (const call of calls) {
    const key = `${call.service}.${call.operation}`;
    const total = totals[key] ?? { ms: 0, count: 0 };
    total.ms += call.ms;
    total.count += 1;
    totals[key] = total;
  }
  return Object.fromEntries(Object.entries(totals).map(([key, total]) => [key, total.ms / total.count]));
}

/** Calls counted by `service.operation`. */
export function countByOperation(calls: readonly RecordedCall[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const call of calls) {
    const key = `${call.service}.${call.operation}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
