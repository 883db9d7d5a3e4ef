// What the partner client may put into an error (and so into a log line): the token redacted, server
// text cut short, foreign errors copied down to name, code and message.

/** Server text quoted in an error message is cut to this length. */
export const MAX_QUOTED_CHARS = 200;

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
