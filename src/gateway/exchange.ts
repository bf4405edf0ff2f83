import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import type { BearerVerifier } from '../identity/token-verifier.ts';
import type { FieldTransformer } from './field-transformer.ts';
import type { GatewayConfig } from './gateway-config.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { endToEnd, headerValue } from './headers.ts';
import type { Upstream, UpstreamRequest } from './upstream.ts';

/** One request through the gateway and what handles it. */
export interface Exchange {
  id: string;
  req: IncomingMessage;
  res: ServerResponse;
  upstream: Upstream;
  config: GatewayConfig;
  transformer: FieldTransformer;
  verifier: BearerVerifier;
  logger: Logger;
  metrics: GatewayMetrics;
  /** the route's name for logs and metrics: configured, `route-<index>`, or `unmatched` */
  routeName: string;
}

/** Sends the request upstream, timing it until the response headers or the failure. */
export async function sendUpstream(x: Exchange, request: UpstreamRequest, signal: AbortSignal): Promise<IncomingMessage> {
  const stop = x.metrics.upstreamLatency.startTimer({ route: x.routeName });
  try {
    const response = await x.upstream.send(request, signal);
    stop({ result: 'response' });
    return response;
  } catch (e) {
    stop({ result: e instanceof VeilError ? e.code : 'error' });
    throw e;
  }
}

/** The upstream's status, message and end-to-end headers, and its body piped as it arrives. */
export function pipeResponse(x: Exchange, response: IncomingMessage): void {
  x.res.writeHead(response.statusCode ?? 502, response.statusMessage, endToEnd(response.rawHeaders));
  response.pipe(x.res);
  response.once('error', () => x.res.destroy());
}

/** X-Forwarded-For (appended to), -Proto and -Host, so the upstream knows who called and how. */
export function forwardedFor(req: IncomingMessage): string[] {
  const prior = headerValue(req.rawHeaders, 'x-forwarded-for');
  const addr = req.socket.remoteAddress ?? 'unknown';
  const out = ['X-Forwarded-For', prior ? `${prior}, ${addr}` : addr, 'X-Forwarded-Proto', 'http'];
  if (req.headers.host) out.push('X-Forwarded-Host', req.headers.host);
  return out;
}
