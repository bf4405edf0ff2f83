import type { IncomingMessage } from 'node:http';
import { BlockList, isIPv4 } from 'node:net';
import { endToEnd, headerValues } from './headers.ts';

/** Who called, as the gateway tells the upstream: X-Forwarded-For/-Proto/-Host and Forwarded (RFC 7239). */
const FORWARDING = [
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-server',
  'forwarded',
  'x-real-ip',
];

/**
 * Headers that make some frameworks route or dispatch a request as another path or method than its
 * request line (IIS/Symfony X-Original-URL, X-Rewrite-URL; method overrides): the upstream would
 * act on a request the gateway never routed. Never forwarded, from any peer.
 */
const REROUTING = ['x-original-url', 'x-rewrite-url', 'x-http-method-override', 'x-http-method', 'x-method-override'];

/** Never forwarded as the caller sent them: Host, Expect, the caller's framing (the gateway frames), rerouting and forwarding headers. */
const ALWAYS_DROPPED: ReadonlySet<string> = new Set(['host', 'expect', 'content-length', 'transfer-encoding', ...REROUTING, ...FORWARDING]);

/** The configured trusted proxies: peers whose forwarding headers are kept and extended. */
export class TrustedProxies {
  private readonly list = new BlockList();
  private readonly empty: boolean;

  constructor(entries: readonly string[]) {
    this.empty = entries.length === 0;
    for (const entry of entries) {
      const [address, bits] = entry.split('/') as [string, string | undefined];
      const type = isIPv4(address) ? 'ipv4' : 'ipv6';
      if (bits === undefined) this.list.addAddress(address, type);
      else this.list.addSubnet(address, Number(bits), type);
    }
  }

  has(peer: string | undefined): boolean {
    if (this.empty || peer === undefined) return false;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(peer);
    const address = mapped ? mapped[1]! : peer;
    return this.list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
  }
}

export interface ForwardOptions {
  /** lower-case names to drop besides hop-by-hop, framing, forwarding and rerouting headers */
  drop: ReadonlySet<string>;
  /** the caller's Authorization header goes upstream */
  forwardAuthorization: boolean;
  upstreamHost: string;
  /** the Host the caller sent (the gateway's own authority as the caller named it) */
  host: string;
  proto: 'http' | 'https';
  trusted: TrustedProxies;
  /**
   * tracing is on: the W3C traceparent naming the gateway's span for the exchange, sent in place of
   * the caller's (whose tracestate passes on as it came). Off: the caller's traceparent passes on untouched.
   */
  traceparent?: string | undefined;
}

/**
 * The caller's headers as the upstream gets them: end-to-end headers only, without Host, Expect,
 * the caller's framing (the gateway adds its own), Authorization (unless forwarded), rerouting
 * headers, and the caller's forwarding headers unless its peer is a trusted proxy; then the
 * upstream's Host and the gateway's forwarding headers.
 */
export function forwardHeaders(req: IncomingMessage, options: ForwardOptions): string[] {
  const peer = req.socket.remoteAddress;
  const trusted = options.trusted.has(peer);
  // a rule over the static set, not a Set built per request: this runs on every exchange
  const drop = {
    has: (name: string) =>
      ALWAYS_DROPPED.has(name) ||
      options.drop.has(name) ||
      (name === 'authorization' && !options.forwardAuthorization) ||
      (name === 'traceparent' && options.traceparent !== undefined),
  };
  const out = endToEnd(req.rawHeaders, drop);
  out.push('Host', options.upstreamHost);
  const addr = peer?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '') ?? 'unknown';
  const prior = (name: string) => (trusted ? headerValues(req.rawHeaders, name) : undefined);
  const xff = prior('x-forwarded-for');
  out.push('X-Forwarded-For', xff ? `${xff}, ${addr}` : addr);
  out.push('X-Forwarded-Proto', prior('x-forwarded-proto') ?? options.proto);
  out.push('X-Forwarded-Host', prior('x-forwarded-host') ?? options.host);
  const element = `for=${quote(addr.includes(':') ? `[${addr}]` : addr)};host=${quote(options.host)};proto=${options.proto}`;
  const forwarded = prior('forwarded');
  out.push('Forwarded', forwarded ? `${forwarded}, ${element}` : element);
  if (trusted) {
    for (const name of ['x-forwarded-port', 'x-forwarded-prefix', 'x-forwarded-server', 'x-real-ip']) {
      const v = headerValues(req.rawHeaders, name);
      if (v !== undefined) out.push(name, v);
    }
  }
  if (options.traceparent !== undefined) out.push('traceparent', options.traceparent);
  return out;
}

function quote(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}
