// What the partner client may put into an error (and so into a log line): the token redacted, server
// text cut short, foreign errors copied down to name, code and message. The body of a 200 answer is
// customer data and is never quoted: it is described by its size, content type and a hash instead.

import { createHash } from 'node:crypto';
import type { ResponseBodyFingerprint } from './errors.js';

/** Server text quoted in an error message is cut to this length. */
export const MAX_QUOTED_CHARS = 200;
/** Hex digits of the body's SHA-256 kept in a fingerprint: enough to match a body captured elsewhere. */
const HASH_PREFIX_CHARS = 16;

export function redact(text: string, token: string | undefined): string {
  return token ? text.split(token).join('[redacted]') : text;
}

export function truncate(text: string, maxChars = MAX_QUOTED_CHARS): string {
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text;
}

export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * A detached copy of an error (name, code, message) to use as a `cause`: undici errors can reference
 * sockets and request state; the copy carries neither.
 */
export function safeCause(err: unknown, token: string | undefined): Error {
  const source = err instanceof Error ? err : new Error(String(err));
  const copy = new Error(truncate(redact(source.message, token)));
  copy.name = source.name;
  const code = errorCode(source);
  if (code !== undefined) Object.assign(copy, { code });
  return copy;
}
/**
 * A body described without its content: enough to recognise it (and match a copy captured elsewhere),
 * nothing of what it says. The Content-Type is cut to 100 characters, with the token redacted.
 */
export function fingerprint(
  body: Buffer,
  contentType: string | undefined,
  token: string,
): ResponseBodyFingerprint {
  return {
    bytes: body.length,
    contentType: contentType === undefined ? undefined : truncate(redact(contentType, token), 100),
    sha256: createHash('sha256').update(body).digest('hex').slice(0, HASH_PREFIX_CHARS),
  };
}

export function describeFingerprint(body: ResponseBodyFingerprint): string {
  return `${body.bytes} bytes, content-type ${body.contentType === undefined ? 'none' : JSON.stringify(body.contentType)}, sha256 ${body.sha256}…`;
}
