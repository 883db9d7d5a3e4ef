// Typed errors of the partner API client, in undici's style: a stable machine `code`, plus what the
// caller needs to act (status, the server's message, how long to wait). No error ever carries the token
// or a request header: messages are built from the method, the path and the server's `message` only.
import type { Int64 } from '../model/int64.js';

export class PartnerApiError extends Error {
  readonly code: `ERR_PARTNER_${string}`;
  readonly statusCode: number | undefined;

  constructor(
    code: PartnerApiError['code'],
    message: string,
    options?: { statusCode?: number; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.statusCode = options?.statusCode;
  }
}

/** 401: the token is missing, expired or revoked. Never retried; there is no re-authentication flow. */
export class AuthenticationError extends PartnerApiError {
  constructor(message = 'partner API rejected the token (401 Unauthorized)') {
    super('ERR_PARTNER_AUTH', message, { statusCode: 401 });
  }
}

/** 404 `pageId not found`: the cursor was purged by retention (spec pagination rule 4). */
export class CursorExpiredError extends PartnerApiError {
  constructor(message = 'pageId not found: the stored cursor has expired') {
    super('ERR_PARTNER_CURSOR_EXPIRED', message, { statusCode: 404 });
  }
}

/** 404 on GET /v1/orders/{id}. */
export class OrderNotFoundError extends PartnerApiError {
  constructor(
    readonly orderId: Int64,
    serverMessage?: string,
  ) {
    super('ERR_PARTNER_NOT_FOUND', `order ${orderId} not found${serverMessage ? `: ${serverMessage}` : ''}`, {
      statusCode: 404,
    });
  }
}

/** 400: the server refused the input; carries the server's message. */
export class BadRequestError extends PartnerApiError {
  constructor(readonly serverMessage: string | undefined) {
    const message = `partner API rejected the request (400): ${serverMessage ?? 'no message'}`;
    super('ERR_PARTNER_BAD_REQUEST', message, { statusCode: 400 });
  }
}

/**
 * The request could not succeed before the caller's deadline: a 429 whose Retry-After does not fit, or
 * 5xx / network failures / unreadable answers (a 3xx, a 200 that is not a readable page; `cause`: its
 * ResponseFormatError) that outlasted the retry budget. The caller ends its run and repeats it later.
 */
export class RetryLaterError extends PartnerApiError {
  readonly retryAfterMs: number | undefined;
  /** The caller's deadline passed with the request in flight or between attempts (out of time). */
  readonly deadlinePassed: boolean;
  constructor(
    readonly reason: 'rate-limited' | 'server-error' | 'network' | 'unreadable',
    message: string,
    options?: {
      statusCode?: number | undefined;
      retryAfterMs?: number;
      cause?: unknown;
      deadlinePassed?: boolean;
    },
  ) {
    super('ERR_PARTNER_RETRY_LATER', message, options);
    this.retryAfterMs = options?.retryAfterMs;
    this.deadlinePassed = options?.deadlinePassed === true;
  }
}

/**
 * The 200 body was not JSON, was too large, or was not the documented shape (an over-long nextPageId
 * included); never quotes the body (it is customer data): `body` describes it by size, content type and the first 16 hex digits of its SHA-256.
 */
export class ResponseFormatError extends PartnerApiError {
  readonly problem: 'body-too-large' | 'not-json' | 'wrong-shape';
  readonly body: { bytes: number; contentType: string | undefined; sha256: string } | undefined;
  constructor(
    message: string,
    options: {
      statusCode: number;
      problem?: ResponseFormatError['problem'];
      body?: ResponseFormatError['body'];
    },
  ) {
    super('ERR_PARTNER_RESPONSE_FORMAT', message, options);
    this.problem = options.problem ?? 'wrong-shape';
    this.body = options.body;
  }
}

/** Any other non-2xx status that is not retryable (e.g. 403, 405, 404 on the feed that is not a cursor). */
export class UnexpectedStatusError extends PartnerApiError {
  constructor(statusCode: number, serverMessage: string | undefined) {
    super(
      'ERR_PARTNER_HTTP',
      `partner API answered ${statusCode}${serverMessage ? `: ${serverMessage}` : ''}`,
      {
        statusCode,
      },
    );
  }
}

/** A caller passed a value the API would refuse (pageSize 0, a non-int64 id, an http:// non-loopback URL). */
export class InvalidArgumentError extends PartnerApiError {
  constructor(message: string) {
    super('ERR_PARTNER_INVALID_ARGUMENT', message);
  }
}

export function isPartnerApiError(err: unknown): err is PartnerApiError {
  return err instanceof PartnerApiError;
}
