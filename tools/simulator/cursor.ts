// Opaque page cursors: base64url(JSON) + '.' + a truncated HMAC, so that a garbled or hand-edited cursor
// is told apart (400 `invalid pageId`) from a well-formed one that has expired (404 `pageId not found`).
// Clients never need to look inside. The key is fixed, so cursors survive a simulator restart with the
// same feed options (the stream key carries a fingerprint of them).

import { createHmac } from 'node:crypto';

const SIGNING_KEY = 'partner-order-feed-simulator/v1';

export interface CursorState {
  /** Stream the cursor belongs to: `feed:<fingerprint>` or `scenario:<scenario_id>`. */
  k: string;
  /** Position in the stream of the next entry to serve. */
  p: number;
  /** Position the page that issued this cursor started at (used to answer a repeated page). */
  b: number;
  /** Issued already expired (test-expired-page-id). */
  x?: 1;
}

function sign(body: string): string {
  return createHmac('sha256', SIGNING_KEY).update(body).digest('base64url').slice(0, 16);
}

export function encodeCursor(state: CursorState): string {
  const body = Buffer.from(JSON.stringify(state), 'utf8').toString('base64url');
  return `${body}.${sign(body)}`;
}

function isPosition(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The cursor's content, or undefined when it is not a cursor this simulator issued (garbled, edited). */
export function decodeCursor(cursor: string): CursorState | undefined {
  const dot = cursor.indexOf('.');
  if (dot <= 0) return undefined;
  const body = cursor.slice(0, dot);
  if (cursor.slice(dot + 1) !== sign(body)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { k, p, b, x } = parsed as Record<string, unknown>;
  if (typeof k !== 'string' || !isPosition(p) || !isPosition(b)) return undefined;
  if (x !== undefined && x !== 1) return undefined;
  return x === 1 ? { k, p, b, x } : { k, p, b };
}
