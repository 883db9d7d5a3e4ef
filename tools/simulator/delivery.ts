// How an answer travels (faults.ts, layers 3 and 4): whole, or after slow headers, trickled, cut short, reset
// after its headers, without end; coded with gzip, deflate or br; a decompression bomb. Only node:http and
// node:zlib: what a real server or gateway does on the wire.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  brotliCompressSync,
  constants,
  createBrotliCompress,
  createDeflate,
  createGzip,
  deflateSync,
  gzipSync,
} from 'node:zlib';
import type { DeliveryFault } from './faults.js';
import type { Coding } from './types.js';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface DeliveryPlan {
  /** Wait this long before the headers (slow headers). */
  headersDelayMs: number;
  delivery: DeliveryFault | undefined;
  trickle: { chunkBytes: number; intervalMs: number };
  /** Bytes an endless body repeats after its first chunk. */
  endlessUnit?: Buffer;
}

/** Waits that end early when the simulator closes (server.ts owns the timers). */
export type Delay = (ms: number) => Promise<void>;

const CONTENT_ENCODING: Record<Coding, string> = { gzip: 'gzip', deflate: 'deflate', br: 'br' };

/** The body coded (brotli at quality 5: pages of MiBs in milliseconds, as a gateway would configure it). */
export function encode(body: Buffer, coding: Coding): Buffer {
  if (coding === 'gzip') return gzipSync(body);
  if (coding === 'deflate') return deflateSync(body);
  return brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } });
}

export function contentEncoding(coding: Coding): string {
  return CONTENT_ENCODING[coding];
}

const bombs = new Map<string, Promise<Buffer>>();

/**
 * A coded body that decodes to `bytes` of a Page's opening followed by JSON whitespace (so a client that
 * decodes it all before looking holds it all). Built once per coding and size by streaming, never whole.
 */
export function bomb(coding: Coding, bytes: number): Promise<Buffer> {
  const key = `${coding}:${bytes}`;
  let built = bombs.get(key);
  if (!built) {
    built = new Promise<Buffer>((resolve, reject) => {
      const stream =
        coding === 'gzip'
          ? createGzip({ level: 9 })
          : coding === 'deflate'
            ? createDeflate({ level: 9 })
            : createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 5 } });
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.once('error', reject);
      stream.once('end', () => resolve(Buffer.concat(chunks)));
      const opening = Buffer.from('{"data":[');
      const spaces = Buffer.alloc(1024 * 1024, 0x20);
      let left = Math.max(0, bytes - opening.length);
      stream.write(opening);
      const pump = (): void => {
        while (left > 0) {
          const chunk = left >= spaces.length ? spaces : spaces.subarray(0, left);
          left -= chunk.length;
          if (!stream.write(chunk)) {
            stream.once('drain', pump);
            return;
          }
        }
        stream.end();
      };
      pump();
    });
    bombs.set(key, built);
  }
  return built;
}

/**
 * Sends `answer` as `plan` says. Resolves once the exchange is over: `whole` when the whole body was handed to
 * the connection, `cut` when the simulator cut it (a fault) or the client hung up first.
 */
export async function deliver(
  req: IncomingMessage,
  res: ServerResponse,
  answer: Answer,
  plan: DeliveryPlan,
  delay: Delay,
): Promise<'whole' | 'cut'> {
  let closed = false;
  res.once('close', () => {
    closed = true;
  });
  // A client that hangs up mid-write is what several faults provoke: never an uncaught error here.
  res.on('error', () => undefined);
  if (plan.headersDelayMs > 0) await delay(plan.headersDelayMs);
  if (closed) return 'cut';
  const { status, headers, body } = answer;
  const finished = new Promise<'whole' | 'cut'>((resolve) => {
    res.once('finish', () => resolve('whole'));
    res.once('close', () => resolve('cut'));
  });
  switch (plan.delivery) {
    case undefined:
    case 'truncated-json':
      res.writeHead(status, { ...headers, 'content-length': String(body.length) });
      res.end(body);
      return finished;
    case 'reset-after-headers':
    case 'truncated-body': {
      // Content-Length promises the whole body; a first part goes out, then the connection ends: a reset
      // (after the headers and a few bytes), or a clean close halfway through.
      res.writeHead(status, { ...headers, 'content-length': String(body.length) });
      const part =
        plan.delivery === 'reset-after-headers' ? Math.min(16, body.length >> 1) : body.length >> 1;
      res.write(body.subarray(0, part));
      await delay(50);
      if (plan.delivery === 'reset-after-headers') req.socket.resetAndDestroy();
      else req.socket.destroy();
      return 'cut';
    }
    case 'trickle': {
      res.writeHead(status, { ...headers, 'content-length': String(body.length) });
      const { chunkBytes, intervalMs } = plan.trickle;
      for (let sent = 0; sent < body.length; sent += chunkBytes) {
        if (closed) return 'cut';
        res.write(body.subarray(sent, sent + chunkBytes));
        if (sent + chunkBytes < body.length) await delay(intervalMs);
      }
      if (closed) return 'cut';
      res.end();
      return finished;
    }
    case 'endless-body': {
      // No Content-Length: chunked, and the end never comes; stops when the client hangs up (or at 4 GiB).
      res.writeHead(status, headers);
      const unit = plan.endlessUnit ?? Buffer.from('{"id":1},');
      const block = Buffer.alloc(Math.max(unit.length, 64 * 1024 - ((64 * 1024) % unit.length)));
      for (let at = 0; at < block.length; at += unit.length) unit.copy(block, at);
      res.write('{"data":[');
      for (let sent = 0; !closed && sent < 4 * 1024 ** 3; sent += block.length) {
        if (!res.write(block))
          await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
      }
      if (!closed) req.socket.destroy();
      return 'cut';
    }
  }
}
