import type { IncomingHttpHeaders } from 'node:http';

/** What the check reads of a request: Fastify's, with `protocol` and `host` as the browser saw them (service.trustProxy). */
export interface OriginFacts {
  headers: IncomingHttpHeaders;
  protocol: string;
  host: string;
}

// a form the admin sent from the portal's own page, or one the browser itself started (a typed URL,
// a bookmark: no page could have made it)
const SAME_ORIGIN_SITES = new Set(['same-origin', 'none']);

/**
 * Why a state-changing portal request is refused as coming from another origin (issue 43), or
 * undefined when it did not. The session cookie is SameSite=Strict, but a site is not an origin:
 * a page on another port of the portal's host, or a sibling subdomain, is same-site and gets the
 * cookie sent with its forms — so the CSRF token is the only other barrier, and this check backs it.
 *
 * A browser says where a request comes from in `Sec-Fetch-Site` and `Origin`; either saying
 * another origin refuses it:
 * - `Sec-Fetch-Site`, when present, must be exactly `same-origin` or `none` (a token: compared as
 *   sent; `same-site` is refused, see above);
 * - `Origin`, when present, must be a serialized origin (scheme, host and port only: no path, no
 *   `null`, not repeated) equal to the portal's own — scheme and host compared case-insensitively
 *   as URLs are, the port exactly, the default one implied.
 * A request with neither comes from no browser that could be tricked (curl, a script holding the
 * cookie and the token), as for sign-in. The reason never quotes a header's value.
 */
export function crossOriginReason(req: OriginFacts): string | undefined {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && (typeof site !== 'string' || !SAME_ORIGIN_SITES.has(site))) return 'Sec-Fetch-Site names another origin';
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  const sent = serializedOrigin(origin);
  if (sent === undefined) return 'Origin is not a serialized origin';
  // the Host header (or a trusted proxy's X-Forwarded-Host) may name the default port: the URL drops it
  const own = parsed(`${req.protocol}://${req.host}`)?.origin;
  return own !== undefined && sent === own ? undefined : 'Origin names another origin';
}

/** An http(s) origin in its serialized form, or undefined when `text` is anything more or other than one. */
function serializedOrigin(text: string): string | undefined {
  const url = parsed(text);
  // a path, query, fragment, user info or an explicit default port makes the text differ from url.origin
  return url && url.origin === text.toLowerCase() ? url.origin : undefined;
}

function parsed(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}
