// The partner's per-token rate limit, as a real partner applies it: a token bucket of `requestsPerSecond`
// with room for `burst` requests, one per token; a request finding it empty gets 429 with Retry-After in
// whole seconds (the time until a request would be let through, rounded up; at least 1, as the spec's
// header carries delta-seconds). A 429 takes nothing from the bucket. Applies to every path, the generated
// feed and the scenarios alike, before anything else is looked at (after the bearer check).

export interface TokenRateLimitOptions {
  requestsPerSecond: number;
  /** Requests the bucket holds (default: one second's worth, at least 1). */
  burst?: number;
}

export class TokenRateLimit {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly burst: number;

  constructor(private readonly options: TokenRateLimitOptions) {
    this.burst = options.burst ?? Math.max(1, options.requestsPerSecond);
  }

  /** undefined: let through (one request taken); else the Retry-After seconds of the 429. */
  check(token: string, nowMs: number): number | undefined {
    const rate = this.options.requestsPerSecond;
    const bucket = this.buckets.get(token) ?? { tokens: this.burst, at: nowMs };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * rate);
    bucket.at = nowMs;
    this.buckets.set(token, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
  }
}
