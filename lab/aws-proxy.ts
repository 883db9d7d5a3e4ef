// An intercepting reverse proxy on 127.0.0.1 in front of the emulator, shared by the chaos runner and the
// bench: every AWS call passing through it is classified (service, operation, table, queue, DynamoDB
// expressions and keys, DynamoDB error type) and recorded with moto's answer, its sizes and its time. Two
// optional hooks let the chaos runner act at an exact point:
//   onRequest  before the request is forwarded: 'forward', or 'drop' (never reaches moto)
//   onResponse after moto answered, before the answer is delivered: 'deliver', or 'drop'
// A hook may be async: the proxy holds the request (or moto's answer) until it resolves, which is how
// a SIGKILL lands exactly between two AWS calls. A dropped exchange ends with a destroyed socket.
import { Agent, createServer, type IncomingHttpHeaders, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AwsCall {
  /** Order of arrival at the proxy, from 1. */
  seq: number;
  /** The local-mode run (child process) in progress when the request arrived. */
  run: number;
  service: string;
  operation: string;
  table?: string;
  /** SQS: the queue name (last path segment of QueueUrl). */
  queue?: string;
  /** Parsed JSON request body (JSON protocols only). */
  body?: Record<string, unknown>;
  /** HTTP status moto answered; 0 when the request was never forwarded or failed upstream. */
  status: number;
  /** DynamoDB / SQS JSON error `__type`, short form (e.g. ConditionalCheckFailedException). */
  errorType?: string;
  /** Parsed JSON response body (JSON protocols only, successful answers). */
  response?: Record<string, unknown>;
  forwarded: boolean;
  delivered: boolean;
  receivedAt: number;
  requestBytes: number;
  /** 0 when moto's answer never came. */
  responseBytes: number;
  /** From forwarding the request to moto's last byte (0 when not forwarded). */
  ms: number;
}

export type RequestVerdict = 'forward' | 'drop';
export type ResponseVerdict = 'deliver' | 'drop';

export interface ProxyHooks {
  onRequest?(call: AwsCall): RequestVerdict | Promise<RequestVerdict>;
  onResponse?(call: AwsCall): ResponseVerdict | Promise<ResponseVerdict>;
  /** Every call once it is settled (answered, dropped or failed). */
  onSettled?(call: AwsCall): void;
}

export interface InterceptingProxy {
  /** `http://localhost:PORT`: the form `cdk deploy` needs (LOCAL-AWS.md); the proxy binds 127.0.0.1. */
  readonly endpoint: string;
  readonly port: number;
  readonly calls: AwsCall[];
  /** Run number stamped on calls from now on. */
  setRun(run: number): void;
  close(): Promise<void>;
}

const TARGET_SERVICES: Record<string, string> = {
  DynamoDB_20120810: 'dynamodb',
  AmazonSQS: 'sqs',
  AmazonSSM: 'ssm',
};

function parseJson(text: string): Record<string, unknown> | undefined {
  if (text === '') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Service and operation of a request: X-Amz-Target, else `Action=`, else the SigV4 scope and method. */
export function classifyRequest(
  headers: IncomingHttpHeaders,
  method: string,
  text: string,
): Pick<AwsCall, 'service' | 'operation' | 'table' | 'queue' | 'body'> {
  const target = headers['x-amz-target'];
  const scope = /Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\//.exec(String(headers.authorization ?? ''))?.[1];
  if (typeof target === 'string' && target.includes('.')) {
    const [prefix = '', operation = ''] = target.split('.');
    const body = parseJson(text);
    const call: Pick<AwsCall, 'service' | 'operation' | 'table' | 'queue' | 'body'> = {
      service: TARGET_SERVICES[prefix] ?? scope ?? prefix,
      operation,
    };
    if (body) call.body = body;
    if (typeof body?.TableName === 'string') call.table = body.TableName;
    if (typeof body?.QueueUrl === 'string') call.queue = body.QueueUrl.split('/').pop() ?? body.QueueUrl;
    return call;
  }
  const form = new URLSearchParams(headers['content-type']?.includes('x-www-form-urlencoded') ? text : '');
  const action = form.get('Action');
  const queueUrl = form.get('QueueUrl');
  return {
    service: scope ?? 'unknown',
    operation: action ?? method,
    ...(queueUrl ? { queue: queueUrl.split('/').pop() ?? queueUrl } : {}),
  };
}

/** `com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException` → `ConditionalCheckFailedException`. */
function errorTypeOf(
  headers: IncomingHttpHeaders,
  body: Record<string, unknown> | undefined,
): string | undefined {
  const raw = typeof body?.__type === 'string' ? body.__type : headers['x-amzn-errortype'];
  if (typeof raw !== 'string' || raw === '') return undefined;
  return raw.split('#').pop()?.split(':')[0];
}

export async function startInterceptingProxy(
  upstreamPort: number,
  hooks: ProxyHooks = {},
): Promise<InterceptingProxy> {
  const calls: AwsCall[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let run = 0;
  let seq = 0;

  const settle = (call: AwsCall) => {
    calls.push(call);
    hooks.onSettled?.(call);
  };

  const handle = async (
    method: string,
    url: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    res: ServerResponse,
  ) => {
    const text = body.toString('utf8');
    const call: AwsCall = {
      seq: ++seq,
      run,
      ...classifyRequest(headers, method, text),
      status: 0,
      forwarded: false,
      delivered: false,
      receivedAt: Date.now(),
      requestBytes: body.length,
      responseBytes: 0,
      ms: 0,
    };
    if ((await hooks.onRequest?.(call)) === 'drop') {
      settle(call);
      res.destroy();
      return;
    }
    // The body is sent whole: drop `expect: 100-continue`, which this proxy has already answered.
    const forwardHeaders = { ...headers };
    delete forwardHeaders.expect;
    call.forwarded = true;
    const forwarded = performance.now();
    const upstream = request(
      { host: '127.0.0.1', port: upstreamPort, method, path: url, headers: forwardHeaders, agent },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('error', () => {
          settle(call);
          res.destroy();
        });
        answer.on('end', async () => {
          const payload = Buffer.concat(chunks);
          call.status = answer.statusCode ?? 0;
          call.responseBytes = payload.length;
          call.ms = performance.now() - forwarded;
          const json = call.body === undefined ? undefined : parseJson(payload.toString('utf8'));
          if (call.status >= 400) {
            const type = errorTypeOf(answer.headers, json);
            if (type) call.errorType = type;
          } else if (json) {
            call.response = json;
          }
          const verdict = await hooks.onResponse?.(call);
          if (verdict === 'drop') {
            settle(call);
            res.destroy();
            return;
          }
          call.delivered = true;
          settle(call);
          res.writeHead(call.status || 502, answer.headers);
          res.end(payload);
        });
      },
    );
    upstream.on('error', () => {
      settle(call);
      res.destroy();
    });
    upstream.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req.method ?? 'GET', req.url ?? '/', req.headers, Buffer.concat(chunks), res).catch(() =>
        res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://localhost:${port}`,
    port,
    calls,
    setRun(value) {
      run = value;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        agent.destroy();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** Calls counted by `service.operation`, sorted by key. */
export function countByOperation(calls: readonly AwsCall[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const call of calls) {
    const key = `${call.service}.${call.operation}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** Mean milliseconds per call by `service.operation`. */
export function meanMsByOperation(calls: readonly AwsCall[]): Record<string, number> {
  const counts = countByOperation(calls);
  const totals: Record<string, number> = {};
  for (const call of calls) {
    const key = `${call.service}.${call.operation}`;
    totals[key] = (totals[key] ?? 0) + call.ms;
  }
  return Object.fromEntries(Object.entries(totals).map(([key, ms]) => [key, ms / (counts[key] ?? 1)]));
}
