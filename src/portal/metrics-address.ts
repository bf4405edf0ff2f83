import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import type { ConfigIssue } from '../engine/index.ts';
import { PortalFault } from './errors.ts';

/**
 * Where the portal's metrics scraper must never go unless the operator allows the host by name:
 * link-local networks (169.254.0.0/16, fe80::/10), where cloud instance metadata lives, and the
 * metadata services' well-known addresses and names. A scrape from the serving process could
 * otherwise read instance credentials and chart them to every viewer.
 */
const REFUSED = new BlockList();
REFUSED.addSubnet('169.254.0.0', 16, 'ipv4');
REFUSED.addSubnet('fe80::', 10, 'ipv6');
REFUSED.addAddress('fd00:ec2::254', 'ipv6');
const REFUSED_NAMES = new Set(['metadata.google.internal', 'metadata.goog', 'metadata']);

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a9fe:a9fe`, `::ffff:169.254.1.1`). */
function mappedIpv4(address: string): string | undefined {
  const m = /^(?:0{0,4}:){0,5}:?ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!m) return undefined;
  if (m[1]) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address is link-local or a metadata address. */
export function isRefusedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = isIP(bare) === 4 ? bare : mappedIpv4(bare);
  if (v4) return REFUSED.check(v4, 'ipv4');
  return isIP(bare) === 6 && REFUSED.check(bare, 'ipv6');
}

const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');

/** Why a metrics URL's host is refused (a literal address or a metadata name), or undefined. */
export function refusedHost(url: URL, allowed: readonly string[]): string | undefined {
  // the WHATWG parser has normalised the host: 2852039166 and 0xa9.0xfe.0xa9.0xfe are 169.254.169.254
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (allowed.some((a) => sameHost(a, host))) return undefined;
  if (REFUSED_NAMES.has(host)) return 'a cloud metadata host';
  if (isRefusedAddress(host)) return 'a link-local or cloud metadata address';
  return undefined;
}

/** Configuration check of a pipeline's metricsUrls (pointers relative to the pipeline). */
export function metricsUrlIssues(urls: readonly string[], allowed: readonly string[]): ConfigIssue[] {
  return urls.flatMap((text, i) => {
    const why = URL.canParse(text) ? refusedHost(new URL(text), allowed) : undefined;
    return why
      ? [
          {
            severity: 'error' as const,
            pointer: `/metricsUrls/${i}`,
            message: `is ${why}, which the portal does not scrape unless portal.metricsAllowedHosts names the host`,
          },
        ]
      : [];
  });
}

/** A metrics URL that is, or resolves to, a link-local or metadata address: PortalFault METRICS_ADDRESS_REFUSED, its message the reason shown. */
export function refusedAddress(): PortalFault {
  return new PortalFault('METRICS_ADDRESS_REFUSED', 'refused: link-local or metadata address');
}

/**
 * A DNS lookup that fails when a name resolves to a refused address. The connection is made to the
 * address this lookup returned, so a name cannot pass the check and then resolve elsewhere.
 */
export function guardedLookup(allowedHost: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      if (!allowedHost && addresses.some((a) => isRefusedAddress(a.address))) return callback(refusedAddress(), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/**
 * `fetch` for the metrics scraper: GET only, no redirects followed (a 3xx is returned as is), no
 * proxy, and no connection to a refused address — literal, or resolved from a name.
 */
export function guardedFetch(allowed: () => readonly string[]): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    // a host the operator named is trusted wherever it resolves; any other is checked, literal and resolved
    const isAllowed = allowed().some((a) => sameHost(a, url.hostname));
    if (!isAllowed && refusedHost(url, [])) throw refusedAddress();
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'GET',
          lookup: guardedLookup(isAllowed),
          headers: Object.fromEntries(new Headers(init?.headers).entries()),
          ...(init?.signal ? { signal: init.signal } : {}),
        },
        resolve,
      );
      req.once('error', reject);
      req.end();
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
    return new Response(Readable.toWeb(res) as ReadableStream, { status: res.statusCode ?? 502, headers });
  }) as typeof fetch;
}
