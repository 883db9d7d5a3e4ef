// A failure the operator can act on (unknown stack or feed, a refused change, an AWS error with its
// context): the CLI prints its message and exits 1, without a stack trace.
export class OpsError extends Error {
  readonly code = 'ERR_OPS';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OpsError';
  }
}
