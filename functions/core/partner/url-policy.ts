// Which base URLs the bearer token may go to: HTTPS anywhere, plain HTTP only to this machine. One policy for
// the settings schema, the client (the CLIs' --api-url reaches it unchecked) and local mode.
import { PartnerError } from './errors.js';

/** 127.0.0.0/8, ::1 and `localhost`. The WHATWG URL parser has already normalised `127.1` etc. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Why `baseUrl` may not receive the token ("must …"), or undefined; never echoes the URL (userinfo). */
export function partnerBaseUrlProblem(baseUrl: string): string | undefined {
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  if (url === undefined) return 'must be an absolute URL such as https://partner.example.com';
  if (url.username !== '' || url.password !== '')
    return 'must not carry credentials; the token goes in the Authorization header';
  // `new URL('https://h/?')` has an empty `search`, so look at the raw string as well.
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(baseUrl))
    return 'must not have a query string or fragment';
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    return 'must use https (http is accepted only for loopback hosts: 127.0.0.0/8, ::1, localhost)';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https URL';
  return undefined;
}

/** Origin and path prefix (a test scenario's, say) without trailing slashes, so `${basePath}/v1` has no `//`. */
export function parsePartnerBaseUrl(baseUrl: string): { origin: string; basePath: string } {
  const problem = partnerBaseUrlProblem(baseUrl);
  if (problem !== undefined) throw new PartnerError('invalid-argument', `baseUrl ${problem}`);
  const url = new URL(baseUrl);
  return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
}
