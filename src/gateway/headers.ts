/**
 * Header handling of the gateway, on Node's raw header lists (`[name, value, name, value, …]` as
 * received): names keep their case, repeated headers (Set-Cookie) keep every value in order.
 */
export type RawHeaders = readonly string[];

/** RFC 9110 §7.6.1 hop-by-hop headers, and the de-facto ones proxies also drop. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

const NONE: ReadonlySet<string> = new Set();

/** The lower-cased header names a `Connection` header lists (they are hop-by-hop for this hop). */
export function connectionTokens(raw: RawHeaders): Set<string> {
  const tokens = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'connection') continue;
    for (const t of raw[i + 1]!.split(',')) {
      const name = t.trim().toLowerCase();
      if (name) tokens.add(name);
    }
  }
  return tokens;
}

export function isHopByHop(name: string, listed: ReadonlySet<string>): boolean {
  const n = name.toLowerCase();
  return HOP_BY_HOP.has(n) || n.startsWith('proxy-') || listed.has(n);
}

/**
 * The end-to-end headers of a message: hop-by-hop ones dropped (Connection, Keep-Alive, Proxy-*,
 * TE, Trailer, Transfer-Encoding, Upgrade, and every header Connection names), and those in `drop`
 * (lower-case) too. Everything else is kept as received.
 */
export function endToEnd(raw: RawHeaders, drop: { has(name: string): boolean } = NONE): string[] {
  const listed = connectionTokens(raw);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (isHopByHop(name, listed) || drop.has(name.toLowerCase())) continue;
    out.push(name, raw[i + 1]!);
  }
  return out;
}

/** The first value of a header, by case-insensitive name. */
export function headerValue(raw: RawHeaders, name: string): string | undefined {
  const n = name.toLowerCase();
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === n) return raw[i + 1];
  return undefined;
}

/** Every value of a header joined with ", " (RFC 9110 §5.3), by case-insensitive name. */
export function headerValues(raw: RawHeaders, name: string): string | undefined {
  const n = name.toLowerCase();
  const values: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === n) values.push(raw[i + 1]!);
  return values.length ? values.join(', ') : undefined;
}

export type Coding = 'identity' | 'gzip' | 'br' | 'deflate';

/**
 * The content coding of a body the gateway rewrites: one of those it can decode and re-encode, or
 * undefined for anything else (several codings stacked, zstd, compress, …).
 */
export function codingOf(raw: RawHeaders): Coding | undefined {
  const value = headerValues(raw, 'content-encoding');
  if (value === undefined) return 'identity';
  const codings = value
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0) return 'identity';
  if (codings.length > 1) return undefined;
  const c = codings[0] === 'x-gzip' ? 'gzip' : codings[0];
  return c === 'gzip' || c === 'br' || c === 'deflate' ? c : undefined;
}

/**
 * The caller's Accept-Encoding narrowed to the codings the gateway can decode, so an upstream
 * answering a route with response selectors never picks one it cannot rewrite.
 */
export function decodableAcceptEncoding(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const kept = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => {
      const name = p.split(';')[0]!.trim().toLowerCase();
      return name === 'gzip' || name === 'x-gzip' || name === 'br' || name === 'deflate' || name === 'identity';
    });
  return kept.length ? kept.join(', ') : 'identity';
}

/** JSON media types: application/json and any +json suffix (problem+json, vnd.api+json). */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(type);
}

/** A strong ETag turned weak: the gateway's rewritten body is not byte-equal to the upstream's. */
export function weakenEtag(value: string): string {
  return value.startsWith('W/') ? value : `W/${value}`;
}
