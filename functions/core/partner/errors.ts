// The partner client's one error, in undici's style: a `kind` to switch on, a stable `code`, and what the
// caller needs to act. Built from the method, the path and the server's redacted message: never the token.

export type PartnerErrorKind =
  | 'auth' // 401; never retried (there is no re-authentication flow)
  | 'cursor-expired' // 404 `pageId not found` for a cursor sent (pagination rule 4)
  | 'not-found' // 404 on GET /v1/orders/{id}
  | 'bad-request' // 400
  | 'http' // any other status not retried (403, a 404 on the feed that is not about the cursor)
  | 'body-too-large' // a 200 over the body cap: not retried; the caller asks for a smaller page
  | 'unreadable' // a 200 not JSON or not the documented shape: retried; the `cause` of a retry-later
  | 'retry-later' // no answer worth having before the deadline or within the attempts: `reason` says why
  | 'invalid-argument'; // a base URL or token the client will not send a request with

/** What the last attempt of a retry-later met (also the `kind` of each retry event). */
export type RetryReason = 'rate-limited' | 'server-error' | 'network' | 'unreadable';

const CODES: Record<PartnerErrorKind, `ERR_PARTNER_${string}`> = {
  auth: 'ERR_PARTNER_AUTH',
  'cursor-expired': 'ERR_PARTNER_CURSOR_EXPIRED',
  'not-found': 'ERR_PARTNER_NOT_FOUND',
  'bad-request': 'ERR_PARTNER_BAD_REQUEST',
  http: 'ERR_PARTNER_HTTP',
  'body-too-large': 'ERR_PARTNER_RESPONSE_FORMAT',
  unreadable: 'ERR_PARTNER_RESPONSE_FORMAT',
  'retry-later': 'ERR_PARTNER_RETRY_LATER',
  'invalid-argument': 'ERR_PARTNER_INVALID_ARGUMENT',
};

const DEFAULT_MESSAGES: Partial<Record<PartnerErrorKind, string>> = {
  auth: 'partner API rejected the token (401 Unauthorized)',
  'cursor-expired': 'pageId not found: the stored cursor has expired',
};

export interface PartnerErrorDetails {
  statusCode?: number | undefined;
  /** The server's `message`, cut short and redacted. */
  serverMessage?: string | undefined;
  reason?: RetryReason;
  retryAfterMs?: number | undefined;
  /** The caller's deadline passed with the request in flight or between attempts (out of time). */
  deadlinePassed?: boolean;
  cause?: unknown;
}

export class PartnerError extends Error {
  override readonly name = 'PartnerError';
  readonly code: `ERR_PARTNER_${string}`;
  declare readonly statusCode: number | undefined;
  declare readonly serverMessage: string | undefined;
  declare readonly reason: RetryReason | undefined;
  declare readonly retryAfterMs: number | undefined;
  readonly deadlinePassed: boolean;

  constructor(
    readonly kind: PartnerErrorKind,
    message = DEFAULT_MESSAGES[kind] ?? kind,
    { cause, deadlinePassed, ...details }: PartnerErrorDetails = {},
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = CODES[kind];
    this.deadlinePassed = deadlinePassed === true;
    Object.assign(this, { statusCode: kind === 'auth' ? 401 : undefined, ...details });
  }
}

/** The kind of a PartnerError, undefined for anything else: what callers switch on. */
export const partnerErrorKind = (error: unknown): PartnerErrorKind | undefined =>
  error instanceof PartnerError ? error.kind : undefined;
