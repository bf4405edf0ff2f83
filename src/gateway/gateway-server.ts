import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import type { BearerVerifier } from '../identity/token-verifier.ts';
import type { FieldTransformer } from './field-transformer.ts';
import type { GatewayConfig } from './gateway-config.ts';
import { callerBody, exchangeSpan, pipeResponse, sendUpstream, upstreamHeaders, type Exchange } from './exchange.ts';
import { TrustedProxies } from './forwarding.ts';
import { checkBodyAllowed, framingHeaders, hasBody, hostOf, requestFraming } from './framing.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { answerSocket, isClosing, refuse, sendJson, sendText } from './replies.ts';
import { protectRequest, revealResponse } from './rewrite.ts';
import { compileRoutes, findRoute, hasSelectors, type Route } from './routes.ts';
import { normalizeTarget } from './target.ts';
import { Upstream } from './upstream.ts';
import { TRACING_OFF, type Tracing } from '../observability/tracing.ts';
import { DoorError } from '../errors/door-errors.ts';
import { GatewayError } from './errors.ts';

/** What the gateway runs with; replaced as a whole when the active configuration version changes. */
export interface GatewayParts {
  config: GatewayConfig;
  transformer: FieldTransformer;
  verifier: BearerVerifier;
  /** the configuration version these parts were built from, named on the exchanges' spans */
  version?: string;
}

export interface GatewayDeps {
  /** the parts running now, read once per request: a request keeps the parts it started with */
  parts: () => GatewayParts;
  logger: Logger;
  /** serve HTTPS with this PEM certificate (chain) and key */
  tls?: { cert: Buffer; key: Buffer };
  /** liveness beyond draining (the KEK's lease): its 503 detail when failing */
  live?: () => { healthy: boolean; detail?: Record<string, unknown> };
  /** a span per exchange, its traceparent forwarded upstream; default off */
  tracing?: Tracing;
}

export interface Gateway {
  server: http.Server;
  metrics: GatewayMetrics;
  /** Graceful stop: the health path turns 503, the listener closes, in-flight exchanges finish (at most `graceMs`). */
  drain(graceMs: number): Promise<void>;
}

interface Compiled {
  routes: Route[];
  trusted: TrustedProxies;
}

/**
 * `veil gateway`: a reverse proxy in front of an application veil does not own. Per route it
 * protects selected request-body fields before forwarding (refusing, never forwarding in clear,
 * when it cannot) and reveals selected response-body fields as far as the caller's token allows.
 * Routes without selectors stream through; requests no route matches are refused unless the
 * configuration forwards them. Every request is checked first (framing.ts, target.ts): a request
 * whose framing, target or path another parser could read differently is refused, and what is
 * forwarded is framed, routed and spelled by the gateway itself.
 */
export function createGateway(deps: GatewayDeps): Gateway {
  const { logger } = deps;
  const metrics = new GatewayMetrics();
  const compiled = new WeakMap<GatewayParts, Compiled>();
  const upstreams = new Map<string, Upstream>();
  let draining = false;
  const proto = deps.tls ? 'https' : 'http';
  const tracing = deps.tracing ?? TRACING_OFF;

  const compile = (parts: GatewayParts): Compiled => {
    let c = compiled.get(parts);
    if (!c) compiled.set(parts, (c = { routes: compileRoutes(parts.config), trusted: new TrustedProxies(parts.config.trustedProxies) }));
    return c;
  };
  const upstreamFor = (config: GatewayConfig): Upstream => {
    let u = upstreams.get(config.upstream);
    if (!u) upstreams.set(config.upstream, (u = new Upstream(config.upstream, { timeoutMs: config.limits.upstreamTimeoutMs })));
    return u;
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    // pipelined behind a refusal that closes the connection: never forwarded, never answered
    if (isClosing(req)) return void req.resume();
    const id = randomUUID();
    const parts = deps.parts();
    const { config } = parts;
    const rawPath = (req.url ?? '/').split('?')[0];
    if (rawPath === config.healthPath) {
      if (draining) return sendJson(res, 503, { status: 'draining' });
      const live = deps.live?.() ?? { healthy: true };
      return sendJson(res, live.healthy ? 200 : 503, live.healthy ? { status: 'ok' } : { status: 'failing', ...live.detail });
    }
    if (rawPath === config.metricsPath) {
      metrics.registry.metrics().then((text) => sendText(res, metrics.registry.contentType, text), () => res.destroy());
      return;
    }
    const started = performance.now();
    let routeName = 'unmatched';
    // the refusal's code, else the upstream's response was forwarded (as it came or rewritten)
    let outcome = 'forwarded';
    // the exchange line is built only when it is logged: no object or clock read per exchange at warn
    if (logger.isLevelEnabled('info')) res.once('finish', () => logger.info({ id, route: routeName, method: req.method, status: res.statusCode, ms: performance.now() - started }, 'exchange'));
    const controller = new AbortController();
    // one listener for what the end of an exchange settles: its count, and the upstream call cut when the caller left
    res.once('close', () => {
      const done = res.writableFinished;
      metrics.requests.inc({ route: routeName, outcome: done ? outcome : 'aborted', status: String(res.statusCode) });
      if (!done) controller.abort();
    });
    const span = tracing.enabled ? exchangeSpan(tracing, req, res, proto, () => ({ route: routeName, outcome, configVersion: parts.version })) : undefined;
    const refused = (error: VeilError) => {
      if (!res.headersSent) outcome = error.code;
      refuse(req, res, error, id, logger);
    };
    let x: Exchange;
    try {
      const c = compile(parts);
      const framing = requestFraming(req);
      const host = hostOf(req);
      const target = normalizeTarget(req.url ?? '/', host);
      const method = req.method ?? 'GET';
      const route = findRoute(c.routes, method, target.segments);
      if (route) routeName = route.name;
      if (target.params && !route?.pathParameters) throw new GatewayError('PATH_NOT_CANONICAL', 'the path holds ; parameters, which this route does not accept: the gateway does not route it');
      if (!route && config.unmatched === 'refuse') throw new VeilError('NOT_FOUND', 'no gateway route matches this method and path');
      checkBodyAllowed(method, framing, route?.allowBody ?? false);
      const path = route ? route.matches.rewrite(target.path === '/' ? [] : target.path.slice(1).split('/')) : target.path;
      x = {
        id, req, res, upstream: upstreamFor(config), config, transformer: parts.transformer, verifier: parts.verifier, logger, metrics, routeName, route,
        framing, target: `${path}${target.query}`, host, proto, trusted: c.trusted, signal: controller.signal, span, traceparent: span && tracing.traceparent(span),
      };
    } catch (e) {
      if (e instanceof VeilError) return refused(e);
      throw e;
    }
    if (hasBody(x.framing)) streamDeadline(x, () => {
      refused(new DoorError('REQUEST_TIMEOUT', `the body did not arrive within ${config.limits.streamTimeoutMs} ms`));
      controller.abort();
    });
    const route = x.route;
    const run = route && hasSelectors(route) ? rewriting(x, route) : passThrough(x);
    run.catch((e: unknown) => {
      if (e instanceof VeilError) return refused(e);
      logger.error({ id, errorType: (e as Error)?.name, frames: String((e as Error)?.stack ?? '').split('\n').slice(1, 8) }, 'unexpected error');
      refused(new VeilError('INTERNAL', 'an unexpected error in the gateway'));
    });
  };

  // Requests pipelined on one connection are handled one after the other: the next is forwarded only
  // once the previous response is complete and left the connection open (a refusal, an unsent
  // 100 Continue or the caller's Connection: close end it). Node's parser emits them all at once;
  // forwarding one whose answer would never be sent would act on a request nobody gets a reply to.
  const previous = new WeakMap<object, ServerResponse>();
  const inOrder = (req: IncomingMessage, res: ServerResponse) => {
    const prior = previous.get(req.socket);
    previous.set(req.socket, res);
    if (!prior || prior.writableFinished) return handle(req, res);
    prior.once('close', () => {
      if (prior.writableFinished && prior.shouldKeepAlive && !isClosing(req) && !req.socket.destroyed) handle(req, res);
      else req.resume();
    });
  };
  const options = { requestTimeout: 0, headersTimeout: 60_000 };
  const server: http.Server = deps.tls ? https.createServer({ ...options, cert: deps.tls.cert, key: deps.tls.key }, inOrder) : http.createServer(options, inOrder);
  // 100 Continue is sent when the gateway starts reading the body (callerBody), not on arrival
  server.on('checkContinue', inOrder);
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    metrics.requests.inc({ route: 'unmatched', outcome: 'EXPECTATION_FAILED', status: '417' });
    refuse(req, res, new GatewayError('EXPECTATION_FAILED', 'the only expectation the gateway meets is 100-continue'), randomUUID(), logger);
  });
  server.on('clientError', (error: NodeJS.ErrnoException & { reason?: string }, socket) => {
    const refusal = clientRefusal(error);
    if (refusal) metrics.requests.inc({ route: 'unmatched', outcome: refusal.code, status: String(refusal.status) });
    answerSocket(socket, refusal, randomUUID());
  });
  server.on('connect', (_req: IncomingMessage, socket) => {
    metrics.requests.inc({ route: 'unmatched', outcome: 'METHOD_NOT_ALLOWED', status: '405' });
    answerSocket(socket, new DoorError('METHOD_NOT_ALLOWED', 'the gateway does not tunnel (CONNECT)'), randomUUID());
  });

  return {
    server,
    metrics,
    async drain(graceMs) {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
      for (const u of upstreams.values()) u.close();
    },
  };
}

/** What a request Node's parser refused gets: 431, 408, or 400 REQUEST_FRAMING_INVALID; nothing for a reset. */
function clientRefusal(error: NodeJS.ErrnoException & { reason?: string }): VeilError | undefined {
  if (error.code === 'ECONNRESET') return undefined;
  if (error.code === 'HPE_HEADER_OVERFLOW') return new GatewayError('HEADERS_TOO_LARGE', 'the request line and headers exceed the limit');
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new DoorError('REQUEST_TIMEOUT', 'the request headers did not arrive in time');
  // llhttp's reasons are fixed texts ("Transfer-Encoding can't be present with Content-Length"), never request bytes
  const reason = typeof error.reason === 'string' && /^[\w\s`'.,/-]{1,120}$/.test(error.reason) ? `: ${error.reason}` : '';
  return new GatewayError('REQUEST_FRAMING_INVALID', `the request cannot be parsed unambiguously (${error.code ?? 'parse error'})${reason}`);
}

/** Cuts an exchange whose caller's body has not arrived in whole within streamTimeoutMs. */
function streamDeadline(x: Exchange, expire: () => void): void {
  const timer = setTimeout(() => {
    if (!x.req.complete) expire();
  }, x.config.limits.streamTimeoutMs);
  const clear = () => clearTimeout(timer);
  x.req.once('end', clear);
  x.req.once('close', clear);
  x.res.once('close', clear);
}

/** A route with selectors: authenticate, protect the request body, forward, reveal the response body. */
async function rewriting(x: Exchange, route: Route): Promise<void> {
  let caller;
  try {
    caller = await x.verifier.verifyHeader(x.req.headers.authorization);
  } catch (e) {
    if (e instanceof VeilError) await x.transformer.refuse(x.id, e);
    throw e;
  }
  const outgoing = await protectRequest(x, route, caller);
  const response = await sendUpstream(x, outgoing);
  if (route.response.selectors.length === 0) return pipeResponse(x, response);
  await revealResponse(x, route, caller, response);
}

/** No selectors: hop-by-hop headers dropped, the gateway's own framing, bodies piped both ways as they arrive. */
async function passThrough(x: Exchange): Promise<void> {
  const headers = [...upstreamHeaders(x), ...framingHeaders(x.framing)];
  const body = hasBody(x.framing) ? callerBody(x) : undefined;
  const response = await sendUpstream(x, { method: x.req.method ?? 'GET', target: x.target, headers, body });
  pipeResponse(x, response);
}
