// The undici Agent the partner client sends through, set up in one place: the poller's module-level
// Agent and the reconcile tool's own Agent use the same timeouts.

import type { Dispatcher } from 'undici';
import { Agent } from './undici-agent.js';

export interface PartnerClientTimeouts {
  /** TCP + TLS handshake. Applies to the default Agent only (an injected dispatcher has its own). */
  connectTimeoutMs: number;
  /** From sending the request to the last response header. */
  headersTimeoutMs: number;
  /** Longest silence between two body chunks. */
  bodyTimeoutMs: number;
}

/**
 * undici's own defaults (300 s) exceed a Lambda's whole budget; these leave room for retries within
 * one poll. Each request is additionally cut off at the call's deadline.
 */
export const DEFAULT_TIMEOUTS: Readonly<PartnerClientTimeouts> = Object.freeze({
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 15_000,
});

/** A new Agent with the client's timeouts; whoever creates one closes it (`agent.close()`). */
export function createPartnerAgent(connectTimeoutMs: number = DEFAULT_TIMEOUTS.connectTimeoutMs): Agent {
  return new Agent({
    connectTimeout: connectTimeoutMs,
    headersTimeout: DEFAULT_TIMEOUTS.headersTimeoutMs,
    bodyTimeout: DEFAULT_TIMEOUTS.bodyTimeoutMs,
  });
}

let sharedAgent: Agent | undefined;

/**
 * One Agent per process (created on first use) so keep-alive sockets survive across warm invocations.
 * A non-default connect timeout gets an Agent of its own.
 */
export function defaultPartnerDispatcher(connectTimeoutMs: number): Dispatcher {
  if (connectTimeoutMs !== DEFAULT_TIMEOUTS.connectTimeoutMs) return createPartnerAgent(connectTimeoutMs);
  sharedAgent ??= createPartnerAgent();
  return sharedAgent;
}
