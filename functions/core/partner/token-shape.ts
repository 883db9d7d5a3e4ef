// The one check a bearer token passes before it goes into a header, shared by the client (every
// attempt) and the reconcile tool (when it reads the token). Checked without ever echoing the value.

/** Visible ASCII only: anything else undici would refuse, or could smuggle a second header. */
const BEARER_TOKEN_SHAPE = /^[\x21-\x7e]+$/;

export function isBearerTokenShape(value: unknown): value is string {
  return typeof value === 'string' && BEARER_TOKEN_SHAPE.test(value);
}
