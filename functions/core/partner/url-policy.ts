// Which base URLs the client may send a bearer token to: HTTPS anywhere, plain HTTP only to this
// machine (the local simulator). Checked once, when the client is built, so a misconfigured
// environment fails the cold start instead of leaking the token over the network in clear text.

import { InvalidArgumentError } from './errors.js';

export interface PartnerBaseUrl {
  /** `https://partner.example` (scheme, host, port). */
  origin: string;
  /** Path prefix without a trailing slash: '' or e.g. '/test-pagination'. */
  basePath: string;
}

/** 127.0.0.0/8, ::1 and `localhost`. The WHATWG URL parser has already normalised `127.1` etc. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Validates the partner base URL and splits it into origin and path prefix. The prefix may carry
 * a test-scenario segment (`https://partner.example/test-versioning`); trailing slashes are dropped
 * so `${basePath}/v1/...` never has `//`. Messages never echo the URL: userinfo could be a secret.
 */
export function parsePartnerBaseUrl(baseUrl: string): PartnerBaseUrl {
  if (typeof baseUrl !== 'string' || baseUrl.trim() === '') {
    throw new InvalidArgumentError('baseUrl must be a non-empty absolute URL');
  }
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new InvalidArgumentError('baseUrl is not a valid absolute URL');
  }
  if (url.username !== '' || url.password !== '') {
    throw new InvalidArgumentError(
      'baseUrl must not carry credentials (user:password@); the token goes in a header',
    );
  }
  // `new URL('https://h/?')` has an empty `search`, so look at the raw string as well.
  if (url.search !== '' || baseUrl.includes('?')) {
    throw new InvalidArgumentError('baseUrl must not carry a query string');
  }
  if (url.hash !== '' || baseUrl.includes('#')) {
    throw new InvalidArgumentError('baseUrl must not carry a fragment');
  }
  if (url.protocol === 'http:') {
    if (!isLoopbackHost(url.hostname)) {
      throw new InvalidArgumentError(
        `baseUrl must use https: plain http is allowed only for loopback hosts (127.0.0.0/8, ::1, localhost), not ${url.hostname}`,
      );
    }
  } else if (url.protocol !== 'https:') {
    throw new InvalidArgumentError(`baseUrl must use https (got ${url.protocol})`);
  }
  return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
}
