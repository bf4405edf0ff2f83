import { randomUUID } from 'node:crypto';
import http, { type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { VeilError } from '../engine/index.ts';
import { PROBLEM_CONTENT_TYPE, problemOf } from '../errors/problem.ts';
import type { BearerVerifier } from '../identity/token-verifier.ts';
import type { FieldTransformer } from './field-transformer.ts';
import type { GatewayConfig } from './gateway-config.ts';
import { forwardedFor, pipeResponse, sendUpstream, type Exchange } from './exchange.ts';
import { GatewayMetrics } from './gateway-metrics.ts';
import { endToEnd } from './headers.ts';
import { protectRequest, revealResponse } from './rewrite.ts';
import { pathOf, pathProblem } from './route-match.ts';
import { compileRoutes, findRoute, hasSelectors, type Route } from './routes.ts';
import { Upstream } from './upstream.ts';

export interface GatewayDeps {
  config: GatewayConfig;
  transformer: FieldTransformer;
  verifier: BearerVerifier;
  logger: Logger;
}

export interface Gateway {
  server: http.Server;
  metrics: GatewayMetrics;
  /** Graceful stop: the health path turns 503, the listener closes, in-flight exchanges finish (at most `graceMs`). */
  drain(graceMs: number): Promise<void>;
}

/**
 * `veil gateway`: a reverse proxy in front of an application veil does not own. Per route it
 * protects selected request-body fields before forwarding (refusing, never forwarding in clear,
 * when it cannot) and reveals selected response-body fields as far as the caller's token allows.
 * Routes without selectors stream through untouched; requests no route matches are refused unless
 * the configuration forwards them.
 */
export function createGateway(deps: GatewayDeps): Gateway {
  const { config, logger } = deps;
  const routes = compileRoutes(config);
  const upstream = new Upstream(config.upstream, { timeoutMs: config.limits.upstreamTimeoutMs });
  const metrics = new GatewayMetrics();
  let draining = false;

  const server = http.createServer({ requestTimeout: 0, headersTimeout: 60_000 }, (req, res) => {
    const id = randomUUID();
    const path = pathOf(req.url ?? '/');
    if (path === config.healthPath) {
      sendJson(res, draining ? 503 : 200, { status: draining ? 'draining' : 'ok' });
      return;
    }
    if (path === config.metricsPath) {
      metrics.registry.metrics().then((text) => sendText(res, metrics.registry.contentType, text), () => res.destroy());
      return;
    }
    const started = process.hrtime.bigint();
    let routeName = 'unmatched';
    // the refusal's code, else the upstream's response was forwarded (as it came or rewritten)
    let outcome = 'forwarded';
    res.once('finish', () => logger.info({ id, route: routeName, method: req.method, status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }, 'exchange'));
    res.once('close', () => metrics.requests.inc({ route: routeName, outcome: res.writableFinished ? outcome : 'aborted', status: String(res.statusCode) }));
    const refused = (error: VeilError) => {
      outcome = error.code;
      refuse(res, error, id, logger);
    };
    const problem = pathProblem(path);
    if (problem) return refused(new VeilError('PATH_NOT_CANONICAL', `${problem}: the gateway does not route it`));
    const route = findRoute(routes, req.method ?? 'GET', path);
    if (route) routeName = route.name;
    if (!route && config.unmatched === 'refuse') return refused(new VeilError('NOT_FOUND', 'no gateway route matches this method and path'));
    const exchange: Exchange = { id, req, res, upstream, config, transformer: deps.transformer, verifier: deps.verifier, logger, metrics, routeName };
    const run = route && hasSelectors(route) ? rewriting(exchange, route) : passThrough(exchange);
    run.catch((e: unknown) => {
      if (e instanceof VeilError) return refused(e);
      logger.error({ id, errorType: (e as Error)?.name, frames: String((e as Error)?.stack ?? '').split('\n').slice(1, 8) }, 'unexpected error');
      refused(new VeilError('INTERNAL', 'an unexpected error in the gateway'));
    });
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
      upstream.close();
    },
  };
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
  const response = await sendUpstream(x, outgoing, abortOnClose(x.res));
  if (route.response.selectors.length === 0) return pipeResponse(x, response);
  await revealResponse(x, route, caller, response);
}

/** No selectors: hop-by-hop headers dropped, bodies piped both ways as they arrive. */
async function passThrough(x: Exchange): Promise<void> {
  const headers = [...endToEnd(x.req.rawHeaders, new Set(['host', 'expect'])), 'Host', x.upstream.host, ...forwardedFor(x.req)];
  const hasBody = x.req.headers['transfer-encoding'] !== undefined || Number(x.req.headers['content-length'] ?? 0) > 0;
  const response = await sendUpstream(x, { method: x.req.method ?? 'GET', target: x.req.url ?? '/', headers, body: hasBody ? x.req : undefined }, abortOnClose(x.res));
  pipeResponse(x, response);
}

function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

function refuse(res: ServerResponse, error: VeilError, id: string, logger: Logger): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error.status >= 500) logger.error({ id, code: error.code }, 'exchange failed');
  else logger.info({ id, code: error.code }, 'exchange refused');
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE, 'x-request-id': id };
  if (error.status === 401) {
    headers['www-authenticate'] = `Bearer realm="veil"${error.code === 'TOKEN_MISSING' ? '' : `, error="invalid_token", error_description="${error.code.toLowerCase()}"`}`;
  }
  // the rest of a refused body may still be on its way: do not keep reading it for keep-alive
  if (error.code === 'REQUEST_TIMEOUT' || error.code === 'BODY_TOO_LARGE') headers.connection = 'close';
  const body = Buffer.from(JSON.stringify(problemOf(error, id)));
  headers['content-length'] = String(body.length);
  res.writeHead(error.status, headers);
  res.end(body);
}

function sendText(res: ServerResponse, contentType: string, text: string): void {
  const body = Buffer.from(text);
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(body.length), 'cache-control': 'no-store' });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, doc: unknown): void {
  const body = Buffer.from(JSON.stringify(doc));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(body.length), 'cache-control': 'no-store' });
  res.end(body);
}
