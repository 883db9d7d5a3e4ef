// A real node:http server for client tests: each test scripts the answers to the next requests in
// order, and every request is recorded (raw URL, headers, arrival time). Listens on 127.0.0.1:0.

import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

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
      /** Wait this long before sending the status line and headers (slow-headers tests). */
      delayMs?: number;
      /** Send the body without Content-Length (chunked), in pieces of this many bytes. */
      chunkBytes?: number;
      /** With chunkBytes: one piece every this many milliseconds (a trickling body). */
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

const UNSCRIPTED: ScriptedResponse = { status: 599, body: { message: 'unscripted request' } };

export async function startScriptedServer(): Promise<ScriptedServer> {
  const queue: Responder[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let fallback: Responder = UNSCRIPTED;

  const send = (res: ServerResponse, answer: Exclude<ScriptedResponse, { destroy: true }>) => {
    if (res.destroyed || res.socket === null) return;
    const body =
      answer.body === undefined
        ? Buffer.alloc(0)
        : Buffer.isBuffer(answer.body)
          ? answer.body
          : Buffer.from(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
    const headers: Record<string, string> = { 'content-type': 'application/json', ...answer.headers };
    if (answer.chunkBytes === undefined) {
      res.writeHead(answer.status, { ...headers, 'content-length': String(body.length) });
      res.end(body);
      return;
    }
    res.writeHead(answer.status, headers);
    if (answer.intervalMs !== undefined) {
      const { chunkBytes } = answer;
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed || sent >= body.length) {
          clearInterval(timer);
          timers.delete(timer);
          if (!res.destroyed) res.end();
          return;
        }
        res.write(body.subarray(sent, sent + chunkBytes));
        sent += chunkBytes;
      }, answer.intervalMs);
      timers.add(timer);
      return;
    }
    for (let i = 0; i < body.length; i += answer.chunkBytes) {
      if (res.destroyed) return;
      res.write(body.subarray(i, i + answer.chunkBytes));
    }
    res.end();
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const rawUrl = req.url ?? '/';
    const parsed = new URL(rawUrl, 'http://127.0.0.1');
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      url: rawUrl,
      pathname: parsed.pathname,
      query: parsed.searchParams,
      headers: req.headers,
      receivedAt: Date.now(),
    };
    requests.push(recorded);
    const responder = queue.shift() ?? fallback;
    const answer = typeof responder === 'function' ? responder(recorded) : responder;
    // The client sends no body, but drain anything so the socket stays usable.
    req.resume();
    if ('destroy' in answer) {
      req.socket.destroy();
      return;
    }
    if (answer.delayMs !== undefined) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        send(res, answer);
      }, answer.delayMs);
      timers.add(timer);
      return;
    }
    send(res, answer);
  };

  const server = createServer(handle);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A client that gives up mid-response makes writes fail with EPIPE/ECONNRESET: expected here.
  server.on('clientError', (_err, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script(...responses) {
      queue.push(...responses);
    },
    setFallback(responder) {
      fallback = responder;
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
      fallback = UNSCRIPTED;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
