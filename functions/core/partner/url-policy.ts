// Which base URLs the client may send a bearer token to: HTTPS anywhere, plain HTTP only to this
// machine (the local simulator). Checked once, when the client is built, so a misconfigured
// environment fails the cold start instead of leaking the token over the network in clear text.

import { InvalidArgumentError } from './errors.js';

/** 127.0.0.0/8, ::1 and `localhost`. The WHATWG URL parser has already normalised `127.1` etc. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Why `baseUrl` may not receive the token ("must …", read after the setting's name), or undefined. One
 * policy for the client and the configuration. Messages never echo the URL: userinfo could be a secret.
 */
export function partnerBaseUrlProblem(baseUrl: string): string | undefined {
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  if (url === undefined) return 'must be an absolute URL such as https://partner.example.com';
  if (url.username !== '' || url.password !== '') {
    return 'must not carry credentials; the token goes in the Authorization header';
  }
  // `new URL('https://h/?')` has an empty `search`, so look at the raw string as well.
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(baseUrl)) {
    return 'must not have a query string or fragment';
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    return 'must use https (http is accepted only for loopback hosts: 127.0.0.0/8, ::1, localhost)';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https URL';
  return undefined;
}

/**
 * Splits a valid partner base URL into origin (scheme, host, port) and path prefix. The prefix may carry a
 * test-scenario segment (`https://partner.example/test-versioning`); trailing slashes are dropped so
 * `${basePath}/v1/...` never has `//`.
 */
export function parsePartnerBaseUrl(baseUrl: string): { origin: string; basePath: string } {
  const problem = partnerBaseUrlProblem(baseUrl);
  if (problem !== undefined) throw new InvalidArgumentError(`baseUrl ${problem}`);
  const url = new URL(baseUrl);
  return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
}
