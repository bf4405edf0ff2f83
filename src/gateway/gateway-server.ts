import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import type { BearerVerifier } from '../identity/index.ts';
import type { FieldTransformer } from './field-transformer.ts';
import type { GatewayConfig } from './gateway-config.ts';
import { callerBody, exchangeSpan, pipeResponse, sendUpstream, upstreamHeaders, type Exchange } from './exchange.ts';
import { TrustedProxies } from './forwarding.ts';
import { checkBodyAllowed, framingHeaders, hasBody, hostOf, requestFraming } from './framing.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { createListener } from './listener.ts';
import { isClosing, refuse, sendJson, sendText } from './replies.ts';
import { protectRequest, revealResponse } from './rewrite.ts';
import { compileRoutes, findRoute, hasSelectors, type Route } from './routes.ts';
import { normalizeTarget } from './target.ts';
import { Upstream } from './upstream.ts';
import { TRACING_OFF, type Span, type Tracing } from '../observability/index.ts';
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

/** What the gateway's requests share for its life: its dependencies, metrics, caches and whether it drains. */
interface GatewayState {
  deps: GatewayDeps;
  metrics: GatewayMetrics;
  proto: 'http' | 'https';
  tracing: Tracing;
  /** routes and trusted proxies compiled once per parts: a request keeps the parts it started with */
  compiled: WeakMap<GatewayParts, Compiled>;
  /** one Upstream (and its connections) per address, closed when the gateway drains */
  upstreams: Map<string, Upstream>;
  /** drain began: the health path answers 503 */
  draining: boolean;
}

/**
 * What an exchange's end reports, filled in as the exchange goes: read by its log line, its count
 * and its span when the response finishes or closes.
 */
interface Tally {
  routeName: string;
  /** the refusal's code, else the upstream's response was forwarded (as it came or rewritten) */
  outcome: string;
}

/** An exchange's bookkeeping, set up before it is routed. */
interface Watch {
  tally: Tally;
  /** aborts the upstream call when the caller left or its body missed its deadline */
  controller: AbortController;
  span: Span | undefined;
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
  const g: GatewayState = {
    deps,
    metrics: new GatewayMetrics(),
    proto: deps.tls ? 'https' : 'http',
    tracing: deps.tracing ?? TRACING_OFF,
    compiled: new WeakMap(),
    upstreams: new Map(),
    draining: false,
  };
  const server = createListener({ tls: deps.tls, metrics: g.metrics, logger: deps.logger }, (req, res) => handle(g, req, res));
  return {
    server,
    metrics: g.metrics,
    async drain(graceMs) {
      g.draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
      for (const u of g.upstreams.values()) u.close();
    },
  };
}

/** One request, in its connection's turn: the health or metrics path, else an exchange routed, checked and run. */
function handle(g: GatewayState, req: IncomingMessage, res: ServerResponse): void {
  // pipelined behind a refusal that closes the connection: never forwarded, never answered
  if (isClosing(req)) return void req.resume();
  const id = randomUUID();
  const parts = g.deps.parts();
  if (answeredOwnPath(g, parts.config, req, res)) return;
  const w = watchExchange(g, id, parts, req, res);
  const refused = (error: VeilError) => {
    if (!res.headersSent) w.tally.outcome = error.code;
    refuse(req, res, error, id, g.deps.logger);
  };
  let x: Exchange;
  try {
    x = openExchange(g, parts, { id, req, res }, w);
  } catch (e) {
    if (e instanceof VeilError) return refused(e);
    throw e;
  }
  if (hasBody(x.framing))
    streamDeadline(x, () => {
      refused(new DoorError('REQUEST_TIMEOUT', `the body did not arrive within ${parts.config.limits.streamTimeoutMs} ms`));
      w.controller.abort();
    });
  const route = x.route;
  const run = route && hasSelectors(route) ? rewriting(x, route) : passThrough(x);
  run.catch((e: unknown) => {
    if (e instanceof VeilError) return refused(e);
    g.deps.logger.error(
      {
        id,
        errorType: (e as Error)?.name,
        frames: String((e as Error)?.stack ?? '')
          .split('\n')
          .slice(1, 8),
      },
      'unexpected error',
    );
    refused(new VeilError('INTERNAL', 'an unexpected error in the gateway'));
  });
}

/** Answers the gateway's own health and metrics paths; false for any other path. */
function answeredOwnPath(g: GatewayState, config: GatewayConfig, req: IncomingMessage, res: ServerResponse): boolean {
  const rawPath = (req.url ?? '/').split('?')[0];
  if (rawPath === config.healthPath) {
    if (g.draining) sendJson(res, 503, { status: 'draining' });
    else {
      const live = g.deps.live?.() ?? { healthy: true };
      sendJson(res, live.healthy ? 200 : 503, live.healthy ? { status: 'ok' } : { status: 'failing', ...live.detail });
    }
    return true;
  }
  if (rawPath === config.metricsPath) {
    g.metrics.registry.metrics().then(
      (text) => sendText(res, g.metrics.registry.contentType, text),
      () => res.destroy(),
    );
    return true;
  }
  return false;
}

/** An exchange's log line, count, span, and the abort that cuts its upstream call when the caller leaves. */
function watchExchange(g: GatewayState, id: string, parts: GatewayParts, req: IncomingMessage, res: ServerResponse): Watch {
  const { logger } = g.deps;
  const { metrics } = g;
  const started = performance.now();
  const tally: Tally = { routeName: 'unmatched', outcome: 'forwarded' };
  // the exchange line is built only when it is logged: no object or clock read per exchange at warn
  if (logger.isLevelEnabled('info'))
    res.once('finish', () =>
      logger.info({ id, route: tally.routeName, method: req.method, status: res.statusCode, ms: performance.now() - started }, 'exchange'),
    );
  const controller = new AbortController();
  // one listener for what the end of an exchange settles: its count, and the upstream call cut when the caller left
  res.once('close', () => {
    const done = res.writableFinished;
    metrics.requests.inc({ route: tally.routeName, outcome: done ? tally.outcome : 'aborted', status: String(res.statusCode) });
    if (!done) controller.abort();
  });
  const span = g.tracing.enabled
    ? exchangeSpan(g.tracing, req, res, g.proto, () => ({ route: tally.routeName, outcome: tally.outcome, configVersion: parts.version }))
    : undefined;
  return { tally, controller, span };
}

/**
 * Routes and checks the request (framing, target, route, body allowed) and gathers what handles
 * it; throws the VeilError it is refused with.
 */
function openExchange(g: GatewayState, parts: GatewayParts, io: Pick<Exchange, 'id' | 'req' | 'res'>, w: Watch): Exchange {
  const { config } = parts;
  const { req } = io;
  const c = compile(g, parts);
  const framing = requestFraming(req);
  const host = hostOf(req);
  const target = normalizeTarget(req.url ?? '/', host);
  const method = req.method ?? 'GET';
  const route = findRoute(c.routes, method, target.segments);
  if (route) w.tally.routeName = route.name;
  if (target.params && !route?.pathParameters)
    throw new GatewayError('PATH_NOT_CANONICAL', 'the path holds ; parameters, which this route does not accept: the gateway does not route it');
  if (!route && config.unmatched === 'refuse') throw new VeilError('NOT_FOUND', 'no gateway route matches this method and path');
  checkBodyAllowed(method, framing, route?.allowBody ?? false);
  const path = route ? route.matches.rewrite(target.path === '/' ? [] : target.path.slice(1).split('/')) : target.path;
  const { span } = w;
  return {
    ...io,
    upstream: upstreamFor(g, config),
    config,
    transformer: parts.transformer,
    verifier: parts.verifier,
    logger: g.deps.logger,
    metrics: g.metrics,
    routeName: w.tally.routeName,
    route,
    framing,
    target: `${path}${target.query}`,
    host,
    proto: g.proto,
    trusted: c.trusted,
    signal: w.controller.signal,
    span,
    traceparent: span && g.tracing.traceparent(span),
  };
}

function compile(g: GatewayState, parts: GatewayParts): Compiled {
  let c = g.compiled.get(parts);
  if (!c) g.compiled.set(parts, (c = { routes: compileRoutes(parts.config), trusted: new TrustedProxies(parts.config.trustedProxies) }));
  return c;
}

function upstreamFor(g: GatewayState, config: GatewayConfig): Upstream {
  let u = g.upstreams.get(config.upstream);
  if (!u) g.upstreams.set(config.upstream, (u = new Upstream(config.upstream, { timeoutMs: config.limits.upstreamTimeoutMs })));
  return u;
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
