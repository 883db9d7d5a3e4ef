// A real node:http server on 127.0.0.1:0 for client tests: each test scripts the answers to the next requests
// in order, and every request is recorded (raw URL, headers, arrival time).
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';

export interface RecordedRequest {
  method: string;
  /** Path and query exactly as received (not decoded). */
  url: string;
  pathname: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  receivedAt: number;
}

export type ScriptedResponse =
  | {
      status: number;
      headers?: Record<string, string>;
      /** A string or Buffer is sent as is; anything else as JSON. */
      body?: unknown;
      /** Encode the body with these codings, in order (`gzip`, `deflate`, `br`, or a list: `gzip, br`), and say so. */
      encoding?: string;
      /** Wait this long before sending the status line and headers. */
      delayMs?: number;
      /** Send the body chunked (no Content-Length) in pieces of this many bytes, one every intervalMs if set. */
      chunkBytes?: number;
      intervalMs?: number;
    }
  /** Destroy the socket without answering: the client sees a connection reset. */
  | { destroy: true };

export type Responder = ScriptedResponse | ((req: RecordedRequest) => ScriptedResponse);

export interface ScriptedServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Queues answers for the next requests, in order. */
  script(...responses: Responder[]): void;
  /** Answer once the queue is empty (default: 599 "unscripted request"). */
  setFallback(responder: Responder): void;
  /** Clears the queue, the fallback and the recorded requests (call between tests). */
  reset(): void;
  close(): Promise<void>;
}

const ENCODERS: Record<string, (body: Buffer) => Buffer> = {
  gzip: gzipSync,
  deflate: deflateSync,
  br: brotliCompressSync,
};

/** `body` encoded with each coding of `codings` in turn (the order Content-Encoding lists them). */
export function encode(body: Buffer, codings: string): Buffer {
  return codings.split(',').reduce((encoded, coding) => {
    const encoder = ENCODERS[coding.trim()];
    if (!encoder) throw new Error(`the scripted server cannot encode ${coding}`);
    return encoder(encoded);
  }, body);
}

const UNSCRIPTED: ScriptedResponse = { status: 599, body: { message: 'unscripted request' } };

export async function startScriptedServer(): Promise<ScriptedServer> {
  const queue: Responder[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let fallback: Responder = UNSCRIPTED;

  const send = (res: ServerResponse, answer: Exclude<ScriptedResponse, { destroy: true }>) => {
    if (res.destroyed) return;
    const { body: value, chunkBytes, intervalMs } = answer;
    let body = Buffer.isBuffer(value)
      ? value
      : Buffer.from(value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));
    const headers: Record<string, string> = { 'content-type': 'application/json', ...answer.headers };
    if (answer.encoding !== undefined) {
      body = encode(body, answer.encoding);
      headers['content-encoding'] = answer.encoding;
    }
    if (chunkBytes === undefined) {
      res.writeHead(answer.status, { ...headers, 'content-length': String(body.length) }).end(body);
      return;
    }
    res.writeHead(answer.status, headers);
    let sent = 0;
    const next = () => {
      while (!res.destroyed && sent < body.length) {
        res.write(body.subarray(sent, sent + chunkBytes));
        sent += chunkBytes;
        if (intervalMs !== undefined) return later(next, intervalMs);
      }
      if (!res.destroyed) res.end();
    };
    next();
  };

  const later = (run: () => void, ms: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
  };

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const { pathname, searchParams } = new URL(url, 'http://127.0.0.1');
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      url,
      pathname,
      query: searchParams,
      headers: req.headers,
      receivedAt: Date.now(),
    };
    requests.push(recorded);
    const responder = queue.shift() ?? fallback;
    const answer = typeof responder === 'function' ? responder(recorded) : responder;
    req.resume(); // drain anything, so the socket stays usable
    if ('destroy' in answer) req.socket.destroy();
    else if (answer.delayMs !== undefined) later(() => send(res, answer), answer.delayMs);
    else send(res, answer);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A client that gives up mid-response makes writes fail with EPIPE/ECONNRESET: expected here.
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (...responses) => void queue.push(...responses),
    setFallback: (responder) => {
      fallback = responder;
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
      fallback = UNSCRIPTED;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
