import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import type { BearerVerifier } from '../identity/index.ts';
import type { FieldTransformer } from './field-transformer.ts';
import type { GatewayConfig } from './gateway-config.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { forwardHeaders, type TrustedProxies } from './forwarding.ts';
import type { Framing } from './framing.ts';
import { endToEnd } from './headers.ts';
import type { Route } from './routes.ts';
import type { Upstream, UpstreamRequest } from './upstream.ts';
import { ATTR, httpErrorType, SpanKind, SpanStatusCode, type Span, type Tracing } from '../observability/index.ts';

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
  /** the matched route; undefined for an unmatched request forwarded by `unmatched: forward` */
  route: Route | undefined;
  /** how the caller delimited the body (framing.ts); the gateway frames what it forwards itself */
  framing: Framing;
  /** the target forwarded: the normalized path as the route spells it, and the query as sent */
  target: string;
  /** the caller's Host */
  host: string;
  proto: 'http' | 'https';
  trusted: TrustedProxies;
  /** aborted when the caller's connection closes early or a streamed body misses its deadline */
  signal: AbortSignal;
  /** tracing is on: the exchange's span (rewrite.ts adds its counts) */
  span?: Span;
  /** tracing is on: the traceparent naming `span`, which the upstream gets */
  traceparent?: string;
}

const NO_NAMES: ReadonlySet<string> = new Set();

/** The caller's headers for the upstream (forwarding.ts), with `drop` dropped too. */
export function upstreamHeaders(x: Exchange, drop: ReadonlySet<string> = NO_NAMES): string[] {
  return forwardHeaders(x.req, {
    drop,
    forwardAuthorization: x.route?.forwardAuthorization ?? x.config.forwardAuthorization,
    upstreamHost: x.upstream.host,
    host: x.host,
    proto: x.proto,
    trusted: x.trusted,
    traceparent: x.traceparent,
  });
}

/**
 * The caller's body, to read or pipe: `100 Continue` is sent first when the caller waits for it
 * (Expect: 100-continue) — only now, once the gateway has routed, checked and authenticated the
 * request; the caller's Expect itself is never forwarded.
 */
export function callerBody(x: Exchange): IncomingMessage {
  if (/^\s*100-continue\s*$/i.test(x.req.headers.expect ?? '') && !x.res.headersSent) x.res.writeContinue();
  return x.req;
}

/** Sends the request upstream, timing it until the response headers or the failure. */
export async function sendUpstream(x: Exchange, request: UpstreamRequest): Promise<IncomingMessage> {
  const stop = x.metrics.upstreamLatency.startTimer({ route: x.routeName });
  try {
    const response = await x.upstream.send(request, x.signal);
    stop({ result: 'response' });
    return response;
  } catch (e) {
    stop({ result: e instanceof VeilError ? e.code : 'error' });
    throw e;
  }
}

/**
 * The upstream's status, message and end-to-end headers, and its body piped as it arrives — within
 * `streamTimeoutMs`, else both connections are cut (the caller sees a truncated response, never a
 * complete-looking one).
 */
export function pipeResponse(x: Exchange, response: IncomingMessage): void {
  x.res.writeHead(response.statusCode ?? 502, response.statusMessage, endToEnd(response.rawHeaders));
  const timer = setTimeout(() => {
    x.logger.warn({ id: x.id, route: x.routeName }, `the upstream response body did not arrive within ${x.config.limits.streamTimeoutMs} ms: cut`);
    response.destroy();
    x.res.destroy();
  }, x.config.limits.streamTimeoutMs);
  response.once('close', () => clearTimeout(timer));
  response.pipe(x.res);
  response.once('error', () => x.res.destroy());
}

/**
 * The SERVER span of one exchange, continuing the caller's W3C traceparent when it sends a valid
 * one (else a trace of its own); only called when tracing is on. It ends when the response is done
 * or cut, named by method and route then (the route is not known yet): the listener's scheme, route
 * name, status, outcome (`forwarded`, `aborted` or the refusal's code), `error.type` on a 5xx or an
 * abort, and the configuration version. Never a path (so no `url.path`: a path may hold
 * identifiers), query, header or body: the route's configured name stands for the path.
 */
export function exchangeSpan(
  tracing: Tracing,
  req: IncomingMessage,
  res: ServerResponse,
  scheme: 'http' | 'https',
  ending: () => { route: string; outcome: string; configVersion?: string | undefined },
): Span {
  const one = (v: string | string[] | undefined) => (typeof v === 'string' ? v : undefined);
  const method = req.method ?? 'GET';
  const parent = tracing.remote({ traceparent: one(req.headers.traceparent), tracestate: one(req.headers.tracestate) });
  const span = tracing.start(`${method} gateway`, { kind: SpanKind.SERVER, parent, attributes: { [ATTR.httpMethod]: method, [ATTR.urlScheme]: scheme } });
  res.once('close', () => {
    const end = ending();
    const outcome = res.writableFinished ? end.outcome : 'aborted';
    span.updateName(`${method} ${end.route}`);
    span.setAttributes({
      [ATTR.route]: end.route,
      [ATTR.httpStatus]: res.statusCode,
      [ATTR.outcome]: outcome,
      ...(end.configVersion ? { [ATTR.configVersion]: end.configVersion } : {}),
    });
    // an upstream's own 5xx, forwarded, is its status; a refusal's, its code
    const errorType = outcome === 'aborted' ? 'aborted' : httpErrorType(res.statusCode, outcome === 'forwarded' ? undefined : outcome);
    if (errorType !== undefined) {
      span.setAttribute(ATTR.errorType, errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  });
  return span;
}
