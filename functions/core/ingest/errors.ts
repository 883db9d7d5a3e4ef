// Errors of the ingestion side, each with a stable code.

export class LeaseLostError extends Error {
  readonly code = 'ERR_LEASE_LOST';
  constructor(feedId: string, options?: { cause?: unknown }) {
    super(`lease on feed "${feedId}" was lost: another invocation took it or moved the cursor`, options);
    this.name = 'LeaseLostError';
  }
}

export class PublishError extends Error {
  readonly code = 'ERR_PUBLISH';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PublishError';
  }
}

export class QuarantineError extends Error {
  readonly code = 'ERR_QUARANTINE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'QuarantineError';
  }
}
